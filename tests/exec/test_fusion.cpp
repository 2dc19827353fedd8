// Fusion contracts, proved with ember::launch_count() and the CPU allocator's counters:
//  - an elementwise expression of many operations over several broadcast operands (with casts
//    and views) runs as exactly one launch and allocates nothing but its output;
//  - a reduction over an expression is one launch and allocates only its result;
//  - `y = e` into an existing tensor, `y += e` (and -=, *=, /=), and multi-output
//    `ember::assign(std::tie(y1, y2), e1, e2)` are one launch each, allocate nothing, and
//    compute the right values;
//  - assignments whose output overlaps an input (x = x.transpose(0, 1) + 1, shifted slices,
//    x = x + 1 in place) give the values a copy-first evaluation would give.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "support/ref_eval.hpp"

namespace {
namespace test_exec_fusion {

using ember::bf16;
using ember::Device;
using ember::Tensor;
using fp16 = ember::half;

/// Launches and CPU allocations made while running f.
struct Cost {
  std::uint64_t launches;
  std::int64_t allocations;
};
template <class F>
Cost cost_of(F&& f) {
  const std::uint64_t l0 = ember::launch_count();
  const std::int64_t a0 = ember::memory_stats(Device::cpu()).allocations;
  f();
  return {ember::launch_count() - l0, ember::memory_stats(Device::cpu()).allocations - a0};
}

std::vector<double> vals(const auto& t) { return ref::values_of(t); }

/// max |got - want| / (|want| + floor) style check with an explicit absolute tolerance.
bool all_close(const std::vector<double>& got, const std::vector<double>& want, double rel,
               double abs_floor) {
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= rel * std::fabs(want[i]) + abs_floor)) return false;
  }
  return true;
}

TEST_CASE("a 10-op expression over four broadcast tensors is one launch and one allocation",
          "[fusion]") {
  Tensor<float> a = ember::randn<float>({64, 128}, 1);
  Tensor<float> b = ember::randn<float>({128}, 2);
  Tensor<float> c = ember::randn<float>({64, 1}, 3);
  Tensor<float> d = ember::full<float>({}, -0.75);  // rank 0
  const auto av = vals(a), bv = vals(b), cv = vals(c);
  const double dv = -0.75;

  Tensor<float> y;
  // 16 operations: mul add tanh abs neg exp mul sub sigmoid mul add div add relu sub mul.
  const Cost cost = cost_of([&] {
    y = ember::tanh(a * b + c) * ember::exp(-ember::abs(d)) +
        ember::sigmoid(a - c) / (b * b + 1.0) - ember::relu(c) * d;
  });
  CHECK(cost.launches == 1);
  CHECK(cost.allocations == 1);  // y itself
  REQUIRE(y.shape() == ember::Shape{64, 128});
  std::vector<double> want;
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 128; ++j) {
      const double x = av[static_cast<std::size_t>(i * 128 + j)],
                   bb = bv[static_cast<std::size_t>(j)], cc = cv[static_cast<std::size_t>(i)];
      want.push_back(std::tanh(x * bb + cc) * std::exp(-std::fabs(dv)) +
                     1 / (1 + std::exp(-(x - cc))) / (bb * bb + 1) - std::max(cc, 0.0) * dv);
    }
  }
  // 16 float operations, each within 2 ulp of a quantity no larger than the sum of the
  // absolute terms (<= 1 + 1 + |c| |d|, all |terms| here are below 1 + |c|): 32 eps (2 + |c|)
  // bounds the error; the max over the rows' |c| keeps it one number.
  double cmax = 0;
  for (double x : cv) cmax = std::max(cmax, std::fabs(x));
  CHECK(all_close(vals(y), want, 0, 32 * 0x1p-23 * (2 + cmax)));

  // The same expression into the existing y: one launch, no allocation.
  const Cost again = cost_of([&] {
    y = ember::tanh(a * b + c) * ember::exp(-ember::abs(d)) +
        ember::sigmoid(a - c) / (b * b + 1.0) - ember::relu(c) * d;
  });
  CHECK(again.launches == 1);
  CHECK(again.allocations == 0);

  // The brief's spelling: `Tensor<float> y = a * b + c` is one launch, one allocation.
  const Cost simple = cost_of([&] { Tensor<float> z = a * b + c; });
  CHECK(simple.launches == 1);
  CHECK(simple.allocations == 1);
}

TEST_CASE("fusion holds with views, casts and mixed dtypes", "[fusion]") {
  Tensor<bf16> a = ember::randn<bf16>({96, 40}, 4);
  Tensor<float> base = ember::randn<float>({40, 96}, 5);
  Tensor<float> at = base.transpose(0, 1);                             // [96, 40], strided
  Tensor<fp16> h = ember::randn<fp16>({1, 81}, 6).slice(1, 0, 81, 2);  // [1, 41] -> step 2
  Tensor<fp16> hs = h.slice(1, 0, 40);                                 // [1, 40]
  Tensor<double> s = ember::full<double>({96, 1}, 0.25).expand({96, 40});
  Tensor<bf16> y;
  const Cost cost = cost_of([&] {
    y = ember::cast<bf16>(ember::cast<float>(a) * at + ember::cast<float>(hs) * 2.0 -
                          ember::cast<float>(s) +
                          ember::sqrt(ember::abs(at)) * ember::exp2(ember::cast<float>(a)) / 3.0);
  });
  CHECK(cost.launches == 1);
  CHECK(cost.allocations == 1);
  const auto av = vals(a), atv = vals(at), hv = vals(hs), yv = vals(y);
  int bad = 0;
  for (int i = 0; i < 96; ++i) {
    for (int j = 0; j < 40; ++j) {
      const double x = av[static_cast<std::size_t>(i * 40 + j)],
                   t = atv[static_cast<std::size_t>(i * 40 + j)];
      const double w = x * t + hv[static_cast<std::size_t>(j)] * 2 - 0.25 +
                       std::sqrt(std::fabs(t)) * std::exp2(x) / 3;
      const double mag = std::fabs(x * t) + std::fabs(hv[static_cast<std::size_t>(j)] * 2) + 0.25 +
                         std::sqrt(std::fabs(t)) * std::exp2(x) / 3;
      // ~10 float operations (<= 2 ulp each) relative to the sum of the absolute terms, then
      // one rounding to bf16 (<= eps(bf16) |w| with margin 2).
      if (std::fabs(yv[static_cast<std::size_t>(i * 40 + j)] - w) >
          20 * 0x1p-23 * mag + 0x1p-7 * std::fabs(w))
        ++bad;
    }
  }
  CHECK(bad == 0);

  // Expressions hold their operands by value: valid after the tensors' names are gone.
  auto make = [] {
    Tensor<float> p = ember::full<float>({3}, 2.0);
    Tensor<float> q = ember::arange<float>(3);
    return p * q + 1.0;
  };
  auto e = make();
  Tensor<float> z;
  const Cost late = cost_of([&] { z = e; });
  CHECK(late.launches == 1);
  CHECK(vals(z) == std::vector<double>{1, 3, 5});
}

TEST_CASE("a reduction over an expression is one launch and allocates only its result",
          "[fusion][reduce]") {
  Tensor<float> a = ember::randn<float>({50, 300}, 7);
  Tensor<float> b = ember::randn<float>({300}, 8);
  Tensor<float> c = ember::randn<float>({50, 1}, 9);
  const auto av = vals(a), bv = vals(b), cv = vals(c);

  Tensor<float> s;
  Cost cost = cost_of([&] { s = ember::sum(a * b + c, {1}); });
  CHECK(cost.launches == 1);
  CHECK(cost.allocations == 1);
  std::vector<double> want(50, 0.0), mag(50, 0.0);
  for (int i = 0; i < 50; ++i) {
    for (int j = 0; j < 300; ++j) {
      const double t = av[static_cast<std::size_t>(i * 300 + j)] * bv[static_cast<std::size_t>(j)] +
                       cv[static_cast<std::size_t>(i)];
      want[static_cast<std::size_t>(i)] += t;
      mag[static_cast<std::size_t>(i)] += std::fabs(t) + std::fabs(cv[static_cast<std::size_t>(i)]);
    }
  }
  const auto sv = vals(s);
  int bad = 0;
  for (std::size_t i = 0; i < 50; ++i) {
    // 300 float additions in the reduction (worst case 299 eps of sum |t|) plus 2 in the producer.
    if (std::fabs(sv[i] - want[i]) > 302 * 0x1p-23 * mag[i]) ++bad;
  }
  CHECK(bad == 0);

  // Every reduction of an expression, keepdim or not, over some or all axes: one launch each.
  auto one_launch = [&](const char* what, auto&& f) {
    const Cost c1 = cost_of(f);
    INFO(what);
    CHECK(c1.launches == 1);
    CHECK(c1.allocations == 1);
  };
  one_launch("sum all", [&] { (void)ember::sum(ember::exp(a) * c); });
  one_launch("mean keepdim", [&] { (void)ember::mean(a - c, {1}, true); });
  one_launch("max axis 0", [&] { (void)ember::max(ember::abs(a) + b, {0}); });
  one_launch("min two axes", [&] { (void)ember::min(a * 2.0, {0, 1}, true); });
  one_launch("prod", [&] { (void)ember::prod(ember::sigmoid(a) + 0.5, {1}); });
  one_launch("var", [&] { (void)ember::var(a * b, {-1}); });
  one_launch("norm", [&] { (void)ember::norm(a + c, {0}, false, 3.0); });
  one_launch("logsumexp", [&] { (void)ember::logsumexp(a - c, {1}, true); });
  one_launch("argmax", [&] { (void)ember::argmax(a * b, 1); });
  one_launch("argmin flattened", [&] { (void)ember::argmin(a + b); });
  one_launch("sum of bf16 cast", [&] { (void)ember::sum(ember::cast<bf16>(a) * 2.0, {1}); });
  one_launch("sum of a transposed view", [&] { (void)ember::sum(a.transpose(0, 1) * 2.0, {1}); });
}

TEST_CASE("compound assignment is one launch, allocates nothing, and is correct",
          "[fusion][assign]") {
  Tensor<float> a = ember::randn<float>({40, 70}, 10);
  Tensor<float> b = ember::rand<float>({70}, 11, Device::cpu(), 0.5, 2.0);
  const auto av = vals(a), bv = vals(b);
  Tensor<float> y = ember::full<float>({40, 70}, 1.5);
  auto at = [&](std::size_t i) { return av[i] * bv[i % 70]; };

  Cost cost = cost_of([&] { y += a * b; });
  CHECK(cost.launches == 1);
  CHECK(cost.allocations == 0);
  std::vector<double> want;
  for (std::size_t i = 0; i < av.size(); ++i) want.push_back(1.5 + at(i));
  CHECK(all_close(vals(y), want, 2 * 0x1p-23, 2 * 0x1p-23 * 4));  // a product and a sum

  cost = cost_of([&] { y -= ember::exp(a) / b; });
  CHECK(cost.launches == 1);
  CHECK(cost.allocations == 0);
  for (std::size_t i = 0; i < av.size(); ++i) want[i] -= std::exp(av[i]) / bv[i % 70];
  CHECK(all_close(vals(y), want, 8 * 0x1p-23, 8 * 0x1p-23 * 40));

  Tensor<float> z = ember::full<float>({40, 70}, 3.0);
  cost = cost_of([&] { z *= b; });
  CHECK(cost.launches == 1);
  cost = cost_of([&] { z /= 2; });
  CHECK(cost.launches == 1);
  CHECK(cost.allocations == 0);
  std::vector<double> wz;
  for (std::size_t i = 0; i < av.size(); ++i) wz.push_back(3.0 * bv[i % 70] / 2);
  CHECK(all_close(vals(z), wz, 2 * 0x1p-23, 0));

  // bf16: y += e computes old + e in float and rounds once.
  Tensor<bf16> yb = ember::cast<bf16>(a);
  const auto ybv = vals(yb);
  cost = cost_of([&] { yb += ember::square(a) * 0.5; });
  CHECK(cost.launches == 1);
  CHECK(cost.allocations == 0);
  std::vector<double> wb;
  for (std::size_t i = 0; i < av.size(); ++i) wb.push_back(ybv[i] + av[i] * av[i] * 0.5);
  CHECK(all_close(vals(yb), wb, 0x1p-7 + 4 * 0x1p-23, 0));
  // A broadcast right-hand side into a non-contiguous output view.
  Tensor<float> big = ember::zeros<float>({70, 40});
  Tensor<float> view = big.transpose(0, 1);  // [40, 70], strided
  cost = cost_of([&] { view += b; });
  CHECK(cost.launches == 1);
  const auto bigv = vals(big);
  int bad = 0;
  for (int i = 0; i < 70; ++i) {
    for (int j = 0; j < 40; ++j) {
      if (bigv[static_cast<std::size_t>(i * 40 + j)] != bv[static_cast<std::size_t>(i)]) ++bad;
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("multi-output assign is one launch and correct", "[fusion][assign]") {
  Tensor<float> a = ember::randn<float>({33, 65}, 12);
  Tensor<float> b = ember::randn<float>({65}, 13);
  const auto av = vals(a), bv = vals(b);
  Tensor<float> y1 = ember::empty<float>({33, 65});
  Tensor<bf16> y2 = ember::empty<bf16>({33, 65});
  const Cost cost =
      cost_of([&] { ember::assign(std::tie(y1, y2), a * b + 1.0, ember::tanh(a - b)); });
  CHECK(cost.launches == 1);
  CHECK(cost.allocations == 0);
  std::vector<double> w1, w2;
  for (std::size_t i = 0; i < av.size(); ++i) {
    w1.push_back(av[i] * bv[i % 65] + 1);
    w2.push_back(std::tanh(av[i] - bv[i % 65]));
  }
  CHECK(all_close(vals(y1), w1, 2 * 0x1p-23, 2 * 0x1p-23));
  CHECK(all_close(vals(y2), w2, 0x1p-7 + 6 * 0x1p-23, 6 * 0x1p-23));

  // Three outputs, one of them a strided view; a rank-0 operand.
  Tensor<float> big = ember::zeros<float>({65, 33});
  Tensor<float> y3 = big.transpose(0, 1);
  Tensor<double> y4 = ember::empty<double>({33, 65});
  Tensor<float> k = ember::full<float>({}, 3.0);
  const Cost c3 = cost_of(
      [&] { ember::assign(std::tie(y1, y3, y4), a * k, b - a, ember::cast<double>(a) * 0.5); });
  CHECK(c3.launches == 1);
  CHECK(c3.allocations == 0);
  const auto v1 = vals(y1), v3 = vals(y3), v4 = vals(y4);
  int bad = 0;
  for (std::size_t i = 0; i < av.size(); ++i) {
    if (v1[i] != static_cast<double>(static_cast<float>(av[i] * 3))) ++bad;
    if (v3[i] != static_cast<double>(static_cast<float>(bv[i % 65] - av[i]))) ++bad;
    if (v4[i] != av[i] * 0.5) ++bad;
  }
  CHECK(bad == 0);

  // Outputs of different shapes are an error, not a silent broadcast.
  Tensor<float> small = ember::empty<float>({65});
  CHECK_THROWS_AS(ember::assign(std::tie(y1, small), a, b), ember::Error);
}

TEST_CASE("multi-output assign reads every input before writing any output",
          "[fusion][assign][alias]") {
  // x is both an output (slot 0) and an input of the second expression: y must see the old x.
  Tensor<float> x = ember::arange<float>(6);
  Tensor<float> y = ember::zeros<float>({6});
  ember::assign(std::tie(x, y), x + 1, x * 2);
  CHECK(vals(x) == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(vals(y) == std::vector<double>{0, 2, 4, 6, 8, 10});
}

TEST_CASE("assignments that overlap their inputs give copy-first results", "[fusion][alias]") {
  for (std::int64_t n : {3, 300}) {  // 300 x 300 runs in parallel
    INFO("n = " << n);
    Tensor<float> x = ember::arange<float>(static_cast<double>(n * n)).reshape({n, n});
    const auto old = vals(x);
    x = x.transpose(0, 1) + 1;
    const auto now = vals(x);
    int bad = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        if (now[static_cast<std::size_t>(i * n + j)] !=
            old[static_cast<std::size_t>(j * n + i)] + 1)
          ++bad;
      }
    }
    CHECK(bad == 0);

    // x += x^T: every element reads the old transpose.
    Tensor<float> s = ember::arange<float>(static_cast<double>(n * n)).reshape({n, n});
    s += s.transpose(0, 1);
    const auto sv = vals(s);
    bad = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        if (sv[static_cast<std::size_t>(i * n + j)] != static_cast<double>(i * n + j + j * n + i))
          ++bad;
      }
    }
    CHECK(bad == 0);
  }

  // In place, element for element: one launch, nothing allocated.
  Tensor<float> x = ember::arange<float>(100000);
  const Cost cost = cost_of([&] { x = x + 1; });
  CHECK(cost.launches == 1);
  CHECK(cost.allocations == 0);
  const auto xv = vals(x);
  int bad = 0;
  for (std::size_t i = 0; i < xv.size(); ++i) {
    if (xv[i] != static_cast<double>(i) + 1) ++bad;
  }
  CHECK(bad == 0);

  // A row of x broadcast against x itself: x = x - x[0] must subtract the old first row from
  // every row (row 0 is written first, so reading it afterwards would subtract zeros).
  for (std::int64_t rows : {4, 400}) {
    Tensor<float> m = ember::arange<float>(static_cast<double>(rows * 100)).reshape({rows, 100});
    m = m - m.select(0, 0);
    const auto mv = vals(m);
    bad = 0;
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < 100; ++j) {
        if (mv[static_cast<std::size_t>(i * 100 + j)] != static_cast<double>(i * 100)) ++bad;
      }
    }
    INFO("rows " << rows);
    CHECK(bad == 0);
  }

  // Shifted overlapping slices: x[1:] = x[:-1] * 2 reads the old x[:-1].
  Tensor<float> w = ember::arange<float>(50000);
  w.slice(0, 1, 50000) = w.slice(0, 0, 49999) * 2;
  const auto wv = vals(w);
  bad = 0;
  for (std::size_t i = 1; i < wv.size(); ++i) {
    if (wv[i] != static_cast<double>(i - 1) * 2) ++bad;
  }
  CHECK(wv[0] == 0);
  CHECK(bad == 0);
  // And backwards: x[:-1] = x[1:] + x[:-1].
  Tensor<float> v = ember::arange<float>(1000);
  v.slice(0, 0, 999) = v.slice(0, 1, 1000) + v.slice(0, 0, 999);
  const auto vv = vals(v);
  bad = 0;
  for (std::size_t i = 0; i + 1 < vv.size(); ++i) {
    if (vv[i] != static_cast<double>(2 * i + 1)) ++bad;
  }
  CHECK(bad == 0);
  CHECK(vv[999] == 999);
}

}  // namespace test_exec_fusion
}  // namespace

TEST_CASE("a new result keeps its first full-shape operand's memory format", "[fusion][assign]") {
  using ember::MemoryFormat;
  const ember::Shape s{2, 3, 4, 5};
  const ember::Tensor<float> nhwc =
      ember::Tensor<float>(ember::randn<float>(s, 3)).contiguous(MemoryFormat::channels_last);
  const ember::Tensor<float> nchw = ember::randn<float>(s, 4);
  const ember::Tensor<float> bias = ember::randn<float>(ember::Shape{1, 3, 1, 1}, 5);
  // Channels-last in, channels-last out (no transposing pass), values as in NCHW.
  const ember::Tensor<float> y = nhwc * 2.0 + bias;
  REQUIRE(y.memory_format() == MemoryFormat::channels_last);
  const ember::Tensor<float> ref = nhwc.contiguous() * 2.0 + bias;
  REQUIRE(y.contiguous().to_vector() == ref.to_vector());
  // The first operand of the result's shape decides; broadcast operands do not.
  REQUIRE(ember::Tensor<float>(bias + nhwc + nchw).memory_format() == MemoryFormat::channels_last);
  REQUIRE(ember::Tensor<float>(nchw + nhwc).memory_format() == MemoryFormat::contiguous);
  // Ambiguous strides (a unit channel dimension) and other ranks stay contiguous.
  const ember::Tensor<float> one_channel =
      ember::Tensor<float>(ember::randn<float>(ember::Shape{2, 1, 4, 5}, 6))
          .contiguous(MemoryFormat::channels_last);
  REQUIRE(ember::Tensor<float>(one_channel * 2.0).is_contiguous());
  const ember::Var<float> v(nhwc);
  REQUIRE(ember::Var<float>(v * 2.0).value().memory_format() == MemoryFormat::channels_last);
}
