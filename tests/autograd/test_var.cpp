// Var, the tape and the fused backward: launch counts, accumulation, no_grad, detach, version
// counters, a 100,000-node chain, memory back to baseline, bf16 gradients.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

#include <ember/autograd/autograd.hpp>

#include "support/launches.hpp"

namespace {
namespace test_autograd_var {

using ember::bf16;
using ember::Device;
using ember::Shape;
using ember::Tensor;
using ember::Var;

template <class T>
Tensor<T> rand_tensor(const Shape& s, double lo, double hi, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(static_cast<std::size_t>(s.numel()));
  for (auto& x : v) x = static_cast<T>(d(rng));
  return ember::from_vector<T>(v, s);
}

using ember::testing::launches;

// A 10-op expression over three same-shape (or broadcast) operands.
template <class A, class B, class C>
auto ten_ops(const A& a, const B& b, const C& c) {
  return ember::tanh(a * b + c) * ember::sigmoid(a - c) + ember::exp(b * 0.5) / (c * c + 1.0);
}

TEST_CASE("Var basics: param, value, grad, requires_grad", "[autograd]") {
  auto x = ember::param(ember::from_vector<float>({1, 2, 3}, Shape{3}));
  REQUIRE(x.requires_grad());
  REQUIRE(x.is_leaf());
  REQUIRE_FALSE(x.grad().defined());
  Var<float> c(ember::from_vector<float>({1, 1, 1}, Shape{3}));
  REQUIRE_FALSE(c.requires_grad());
  Var<float> y = x * x + c;
  REQUIRE(y.requires_grad());
  REQUIRE_FALSE(y.is_leaf());
  REQUIRE(y.value().to_vector() == std::vector<float>{2, 5, 10});
  y.backward(ember::from_vector<float>({1, 1, 1}, Shape{3}));
  REQUIRE(x.grad().to_vector() == std::vector<float>{2, 4, 6});
  Var<float> k = c * 2.0;
  REQUIRE_FALSE(k.requires_grad());
  REQUIRE_THROWS_AS(k.backward(ember::ones<float>(Shape{3})), ember::Error);
  REQUIRE_THROWS_AS(y.backward(), ember::Error);  // not one element
}

TEST_CASE("fused backward: a 10-op expression over three inputs is one launch",
          "[autograd][fusion]") {
  const Shape s{64, 33};
  auto a = ember::param(rand_tensor<float>(s, -1, 1, 1));
  auto b = ember::param(rand_tensor<float>(s, -1, 1, 2));
  auto c = ember::param(rand_tensor<float>(s, -1, 1, 3));
  Var<float> y = ten_ops(a, b, c);
  const Tensor<float> seed = rand_tensor<float>(s, -1, 1, 4);
  REQUIRE(launches([&] { y.backward(seed); }) == 1);  // the seed is read where it is
  // Same again, gradients now accumulate (+=) inside the same single launch.
  Var<float> y2 = ten_ops(a, b, c);
  Tensor<float> g1 = a.grad().clone();
  REQUIRE(launches([&] { y2.backward(seed); }) == 1);
  const auto ga = a.grad().to_vector();
  const auto g1v = g1.to_vector();
  for (std::size_t i = 0; i < ga.size(); ++i) REQUIRE(ga[i] == Approx(2 * g1v[i]).margin(1e-6));

  // Through a sum: the sum's backward broadcasts the upstream gradient inside the same launch.
  a.zero_grad();
  b.zero_grad();
  c.zero_grad();
  auto loss = ember::sum(ten_ops(a, b, c));
  REQUIRE(launches([&] { loss.backward(); }) == 1);  // the implicit 1 is never materialised
  // The same 10 ops as separate Vars: one node, so one launch, per op.
  a.zero_grad();
  b.zero_grad();
  c.zero_grad();
  Var<float> ab = a * b;
  Var<float> t1 = ab + c;
  Var<float> t2 = ember::tanh(t1);
  Var<float> ac = a - c;
  Var<float> t3 = ember::sigmoid(ac);
  Var<float> t4 = t2 * t3;
  Var<float> b5 = b * 0.5;
  Var<float> t5 = ember::exp(b5);
  Var<float> cc = c * c;
  Var<float> c1 = cc + 1.0;
  Var<float> t6 = t5 / c1;
  Var<float> y3 = t4 + t6;
  REQUIRE(launches([&] { y3.backward(seed); }) >= 10);
  const auto g3 = a.grad().to_vector();
  for (std::size_t i = 0; i < g3.size(); ++i) REQUIRE(g3[i] == Approx(g1v[i]).margin(1e-6));
}

TEST_CASE("fused backward: one broadcast input adds one reduction", "[autograd][fusion]") {
  const Shape s{64, 33};
  auto a = ember::param(rand_tensor<float>(s, -1, 1, 1));
  auto b = ember::param(rand_tensor<float>(Shape{33}, -1, 1, 2));
  auto c = ember::param(rand_tensor<float>(s, -1, 1, 3));
  Var<float> y = ten_ops(a, b, c);
  const Tensor<float> seed = rand_tensor<float>(s, -1, 1, 4);
  REQUIRE(launches([&] { y.backward(seed); }) == 2);  // fused + one reduction for b
  REQUIRE(b.grad().shape() == Shape{33});
  // Check the broadcast gradient against float64.
  auto a64 = ember::param(Tensor<double>(ember::cast<double>(a.value())));
  auto b64 = ember::param(Tensor<double>(ember::cast<double>(b.value())));
  auto c64 = ember::param(Tensor<double>(ember::cast<double>(c.value())));
  Var<double> y64 = ten_ops(a64, b64, c64);
  y64.backward(Tensor<double>(ember::cast<double>(seed)));
  const auto g = b.grad().to_vector();
  const auto g64 = b64.grad().to_vector();
  for (std::size_t i = 0; i < g.size(); ++i)
    REQUIRE(g[i] == Approx(g64[i]).epsilon(1e-4).margin(1e-4));
}

TEMPLATE_TEST_CASE("fused backward: SIMD blocks and the scalar tail give float64's gradients",
                   "[autograd][fusion]", float, double, bf16) {
  using T = TestType;
  // 5 blocks of the CPU's widest (16 lanes) and a tail of 7: the dense path runs both
  // BackwardPlan::at_vec and the per-element at. The expression has each kind of node: a leaf
  // under a predicate (it gets no adjoint from there), one Var twice, numbers, a cast, and a
  // function of a function.
  const Shape s{16 * 5 + 7};
  const auto f = [](const auto& x, const auto& y) {
    using X = typename std::remove_cvref_t<decltype(x)>::value_type;
    return ember::where(x > 0.25, x * x, ember::tanh(y) * 2.0) +
           ember::sigmoid(x - y) * ember::cast<X>(y * 0.5) + ember::exp(x * 0.25);
  };
  const Tensor<T> xt = ember::cast<T>(rand_tensor<double>(s, -1, 1, 11));
  const Tensor<T> yt = ember::cast<T>(rand_tensor<double>(s, -1, 1, 12));
  const Tensor<T> gt = ember::cast<T>(rand_tensor<double>(s, -1, 1, 13));
  auto x = ember::param(xt);
  auto y = ember::param(yt);
  // The reference, by hand in double (not through ember's backward, which double also takes).
  std::vector<double> want_x, want_y;
  {
    const auto xv = Tensor<double>(ember::cast<double>(xt)).to_vector();
    const auto yv = Tensor<double>(ember::cast<double>(yt)).to_vector();
    const auto gv = Tensor<double>(ember::cast<double>(gt)).to_vector();
    for (std::size_t i = 0; i < xv.size(); ++i) {
      const double a = xv[i], b = yv[i], g = gv[i];
      const double sg = 1.0 / (1.0 + std::exp(-(a - b)));
      const double th = std::tanh(b);
      const bool first = a > 0.25;
      want_x.push_back(
          g * ((first ? 2 * a : 0.0) + sg * (1 - sg) * 0.5 * b + 0.25 * std::exp(0.25 * a)));
      want_y.push_back(g *
                       ((first ? 0.0 : 2 * (1 - th * th)) - sg * (1 - sg) * 0.5 * b + 0.5 * sg));
    }
  }
  // The gradients are computed in float (double for double) and rounded once per backward.
  const double tol =
      std::is_same_v<T, bf16> ? 1.0 / 128 : (std::is_same_v<T, float> ? 1e-5 : 1e-12);
  const auto check = [&](const Tensor<T>& got, const std::vector<double>& w, double scale,
                         double rounds) {
    const auto g = Tensor<double>(ember::cast<double>(got)).to_vector();
    REQUIRE(g.size() == w.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      INFO(i << ": " << g[i] << " vs " << scale * w[i]);
      REQUIRE(std::fabs(g[i] - scale * w[i]) <= rounds * tol * (std::fabs(scale * w[i]) + 1.0));
    }
  };
  Var<T> r = f(x, y);
  r.backward(gt);  // fresh gradients: stored
  check(x.grad(), want_x, 1.0, 1.0);
  check(y.grad(), want_y, 1.0, 1.0);
  Var<T> r2 = f(x, y);
  r2.backward(gt);  // accumulated into them
  check(x.grad(), want_x, 2.0, 2.0);
  check(y.grad(), want_y, 2.0, 2.0);
}

TEMPLATE_TEST_CASE("fused backward: a broadcast row (a bias) takes the strided path's row blocks",
                   "[autograd][fusion]", float, double, bf16) {
  using T = TestType;
  // x [5, 39] and b [39] broadcast over the rows: two blocks of 16 lanes and a tail of 7 per row
  // (BackwardPlan::at_vec on RowBlocks), the upstream gradient one number broadcast (the seed of
  // a sum) or a full tensor; b's adjoint goes through a temporary and one reduction.
  const std::int64_t R = 5, C = 16 * 2 + 7;
  const Tensor<T> xt = ember::cast<T>(rand_tensor<double>(Shape{R, C}, -2, 2, 21));
  const Tensor<T> bt = ember::cast<T>(rand_tensor<double>(Shape{C}, -1, 1, 22));
  const Tensor<T> gt = ember::cast<T>(rand_tensor<double>(Shape{R, C}, -1, 1, 23));
  const auto xv = Tensor<double>(ember::cast<double>(xt)).to_vector();
  const auto bv = Tensor<double>(ember::cast<double>(bt)).to_vector();
  const auto gv = Tensor<double>(ember::cast<double>(gt)).to_vector();
  const double tol = std::is_same_v<T, bf16> ? 1.0 / 64 : (std::is_same_v<T, float> ? 1e-5 : 1e-12);
  for (const bool full_seed : {true, false}) {
    INFO((full_seed ? "upstream gradient of the expression's shape" : "the seed of a sum"));
    auto x = ember::param(xt);
    auto b = ember::param(bt);
    // tanh(x + b) * x: d/dx = (1 - t^2) x + t, d/db = (1 - t^2) x
    const Var<T> y = ember::tanh(x + b) * x;
    if (full_seed) {
      y.backward(gt);
    } else {
      ember::sum(y).backward();
    }
    std::vector<double> want_x(xv.size()), want_b(bv.size(), 0.0);
    for (std::int64_t r = 0; r < R; ++r) {
      for (std::int64_t c = 0; c < C; ++c) {
        const auto i = static_cast<std::size_t>(r * C + c);
        const double t = std::tanh(xv[i] + bv[c]), g = full_seed ? gv[i] : 1.0;
        want_x[i] = g * ((1 - t * t) * xv[i] + t);
        want_b[c] += g * (1 - t * t) * xv[i];
      }
    }
    const auto gx = Tensor<double>(ember::cast<double>(x.grad())).to_vector();
    const auto gb = Tensor<double>(ember::cast<double>(b.grad())).to_vector();
    for (std::size_t i = 0; i < gx.size(); ++i) {
      INFO("x " << i);
      REQUIRE(std::fabs(gx[i] - want_x[i]) <= tol * (std::fabs(want_x[i]) + 1.0));
    }
    for (std::size_t c = 0; c < gb.size(); ++c) {
      INFO("b " << c);
      REQUIRE(std::fabs(gb[c] - want_b[c]) <= R * tol * (std::fabs(want_b[c]) + 1.0));
    }
  }
}

TEST_CASE("gradients accumulate across backward calls until zeroed", "[autograd]") {
  auto x = ember::param(ember::from_vector<double>({0.5, -1.0}, Shape{2}));
  for (int i = 0; i < 3; ++i) {
    auto l = ember::sum(x * x * 3.0);
    l.backward();
  }
  REQUIRE(x.grad().to_vector() == std::vector<double>{9.0, -18.0});
  x.zero_grad();
  REQUIRE_FALSE(x.grad().defined());
  ember::sum(x * 2.0).backward();
  REQUIRE(x.grad().to_vector() == std::vector<double>{2.0, 2.0});
}

TEST_CASE("no_grad records nothing; detach cuts the graph", "[autograd]") {
  auto x = ember::param(ember::from_vector<double>({1, 2}, Shape{2}));
  {
    ember::no_grad guard;
    REQUIRE_FALSE(ember::grad_enabled());
    Var<double> y = x * x;
    REQUIRE_FALSE(y.requires_grad());
    REQUIRE(y.is_leaf());
    auto s = ember::sum(y);
    REQUIRE_FALSE(s.requires_grad());
  }
  REQUIRE(ember::grad_enabled());
  Var<double> h = x * x;
  Var<double> d = h.detach();
  REQUIRE_FALSE(d.requires_grad());
  REQUIRE(d.value().data() == h.value().data());
  auto l = ember::sum(d * x);  // d is a constant: dl/dx = d = x^2
  l.backward();
  REQUIRE(x.grad().to_vector() == std::vector<double>{1, 4});
}

TEST_CASE("retain_graph, and a second backward through a released graph throws", "[autograd]") {
  auto x = ember::param(ember::from_vector<double>({1, 2}, Shape{2}));
  Var<double> h = ember::exp(x);
  auto l = ember::sum(h * 2.0);
  l.backward(true);
  l.backward();
  const auto g = x.grad().to_vector();
  REQUIRE(g[0] == Approx(4 * std::exp(1.0)));
  REQUIRE_THROWS_AS(l.backward(), ember::Error);
}

TEST_CASE("modifying a saved tensor in place makes backward throw, naming the op", "[autograd]") {
  auto x = ember::param(ember::from_vector<double>({1, 2}, Shape{2}));
  Tensor<double> w = ember::from_vector<double>({3, 4}, Shape{2});
  Var<double> y = ember::tanh(x * w);
  auto l = ember::sum(y);
  w += 1.0;  // w was saved by the tanh(x * w) node
  try {
    l.backward();
    FAIL("expected ember::Error");
  } catch (const ember::Error& e) {
    const std::string msg = e.what();
    INFO(msg);
    REQUIRE(msg.find("tanh") != std::string::npos);
    REQUIRE(msg.find("modified in place") != std::string::npos);
  }
}

TEST_CASE("an operator's node holds the tensors it checks, temporaries too", "[autograd]") {
  // layer_norm's backward reads no bias, but its node checks the bias's version at backward: the
  // node must keep that storage alive (a temporary freed under the check read a stranger's
  // version: a use-after-free the emulated CUDA device turned into a spurious error).
  auto x = ember::param(ember::randn<double>(Shape{3, 4}, 1));
  const Tensor<double> w = ember::randn<double>(Shape{4}, 2);
  Tensor<double> b = ember::randn<double>(Shape{4}, 3);
  const std::weak_ptr<ember::Storage> bias_storage = b.storage();
  Var<double> y = ember::layer_norm(x, w, b);
  b = Tensor<double>();  // the caller's handle gone, as a temporary's at the end of a statement
  REQUIRE_FALSE(bias_storage.expired());
  ember::sum(y * y).backward();
  REQUIRE(x.grad().defined());
  y = Var<double>();  // the tape released: nothing holds it any more
  REQUIRE(bias_storage.expired());
}

TEST_CASE("a 100,000-node chain backpropagates without recursion", "[autograd][chain]") {
  auto x = ember::param(ember::from_vector<double>({1.0, 2.0}, Shape{2}));
  Var<double> y = x * 1.0;
  constexpr int kSteps = 100000;
  for (int i = 0; i < kSteps; ++i) y = y * 1.0001 + x;
  auto l = ember::sum(y);
  l.backward();
  // dy_n/dx = 1.0001^n + sum_{k<n} 1.0001^k
  double want = std::pow(1.0001, kSteps) + (std::pow(1.0001, kSteps) - 1.0) / 0.0001;
  const auto g = x.grad().to_vector();
  REQUIRE(g[0] == Approx(want).epsilon(1e-9));
  REQUIRE(g[1] == Approx(want).epsilon(1e-9));
  // Dropping an un-backpropagated chain must not recurse either.
  Var<double> z = x * 1.0;
  for (int i = 0; i < kSteps; ++i) z = z * 1.0001 + x;
  z = Var<double>();
}

TEST_CASE("memory returns to baseline after backward", "[autograd][memory]") {
  auto x = ember::param(rand_tensor<float>(Shape{128, 16}, -1, 1, 7));
  auto w = ember::param(rand_tensor<float>(Shape{16}, -1, 1, 8));
  auto step = [&] {
    Var<float> h = ember::tanh(x * w);
    Var<float> k = h * h + x;
    auto l = ember::mean(ember::sigmoid(k) * 2.0);
    l.backward();
  };
  step();  // allocates the parameters' gradients
  const std::int64_t base = ember::memory_stats(Device::cpu()).bytes_in_use;
  for (int i = 0; i < 3; ++i) step();
  REQUIRE(ember::memory_stats(Device::cpu()).bytes_in_use == base);
}

TEMPLATE_TEST_CASE("bf16 and half gradients match float64 within the dtype's tolerance",
                   "[autograd][bf16][half]", bf16, ember::half) {
  using T = TestType;
  // Half an ulp of the type at 1: the rounding of one result.
  const double ulp = std::is_same_v<T, bf16> ? 1.0 / 128 : 1.0 / 1024;
  const Shape s{16, 24};
  const Tensor<double> a64 = rand_tensor<double>(s, -1, 1, 9);
  const Tensor<double> b64 = rand_tensor<double>(Shape{24}, -1, 1, 10);
  // Round the inputs to T first so both runs see the same inputs.
  const Tensor<T> a16 = ember::cast<T>(a64);
  const Tensor<T> b16 = ember::cast<T>(b64);
  auto f = [](const auto& a, const auto& b) {
    return ember::sum(ember::gelu(a * b) + ember::exp(a) * b + ember::logsumexp(a * b, {0}, true));
  };
  auto xa = ember::param(a16);
  auto xb = ember::param(b16);
  f(xa, xb).backward();
  auto ya = ember::param(Tensor<double>(ember::cast<double>(a16)));
  auto yb = ember::param(Tensor<double>(ember::cast<double>(b16)));
  f(ya, yb).backward();
  REQUIRE(xa.grad().shape() == s);
  REQUIRE(xb.grad().shape() == Shape{24});
  const auto check = [](const Tensor<T>& got, const Tensor<double>& want, double tol) {
    const auto g = Tensor<double>(ember::cast<double>(got)).to_vector();
    const auto w = want.to_vector();
    for (std::size_t i = 0; i < g.size(); ++i) {
      INFO(i << ": " << g[i] << " vs " << w[i]);
      REQUIRE(std::fabs(g[i] - w[i]) <= tol * (std::fabs(w[i]) + 1.0));
    }
  };
  // The gradients are computed in float and rounded once: within an ulp of float64's.
  check(xa.grad(), ya.grad(), ulp);
  check(xb.grad(), yb.grad(), ulp);  // a 16-element sum in float, rounded once
}

namespace {
// Custom functions that let a test see the layout of the gradients flowing through the tape:
// PassOn records whether the gradient it receives is dense channels-last; ToChannelsLast hands
// its input's gradient back as a dense channels-last tensor.
bool g_saw_channels_last = false;
struct PassOn {
  static Tensor<float> forward(ember::FunctionContext&, const Tensor<float>& x) { return x; }
  static Tensor<float> backward(ember::FunctionContext&, const Tensor<float>& g) {
    g_saw_channels_last = g.is_contiguous(ember::MemoryFormat::channels_last) && !g.is_contiguous();
    return g;
  }
};
// PassOnHeads records whether its gradient arrived with heads after rows, as its value lies.
bool g_saw_heads_after_rows = false;
struct PassOnHeads {
  static Tensor<float> forward(ember::FunctionContext&, const Tensor<float>& x) { return x; }
  static Tensor<float> backward(ember::FunctionContext&, const Tensor<float>& g) {
    g_saw_heads_after_rows = !g.is_contiguous() && g.transpose(1, 2).is_contiguous();
    return g;
  }
};
struct ToChannelsLast {
  static Tensor<float> forward(ember::FunctionContext&, const Tensor<float>& x) { return x; }
  static Tensor<float> backward(ember::FunctionContext&, const Tensor<float>& g) {
    return g.contiguous(ember::MemoryFormat::channels_last);
  }
};
}  // namespace

TEST_CASE("a channels-last gradient of a channels-last value keeps its layout", "[autograd]") {
  const Tensor<float> t = rand_tensor<float>(Shape{2, 3, 4, 5}, -1, 1, 7);
  for (const int consumers : {1, 2}) {
    INFO(consumers << " consumer(s)");
    auto x = ember::param(t.contiguous(ember::MemoryFormat::channels_last));
    const Var<float> h = ember::apply<PassOn>(x);
    Var<float> y = ember::apply<ToChannelsLast>(h);
    if (consumers == 2) y = Var<float>(y + ember::apply<ToChannelsLast>(h));
    g_saw_channels_last = false;
    y.backward(ember::ones<float>(t.shape()));
    // No copy to NCHW on the way (two consumers: their sum is written in the same layout).
    REQUIRE(g_saw_channels_last);
    REQUIRE(x.grad().to_vector() ==
            std::vector<float>(static_cast<std::size_t>(t.numel()), float(consumers)));
  }
}

TEST_CASE("a gradient dense in its value's layout reaches it without a copy", "[autograd]") {
  // [B, L, H, E] viewed as [B, H, L, E]: attention's heads, whose gradient comes back through
  // the transpose in the same layout; it is handed on as it is, not copied to contiguous.
  auto x = ember::param(rand_tensor<float>(Shape{2, 5, 3, 4}, -1, 1, 8));
  const Var<float> heads = ember::apply<PassOnHeads>(x.transpose(1, 2));
  g_saw_heads_after_rows = false;
  heads.transpose(1, 2).backward(ember::ones<float>(Shape{2, 5, 3, 4}));
  REQUIRE(g_saw_heads_after_rows);
  REQUIRE(x.grad().is_contiguous());
  REQUIRE(x.grad().to_vector() == std::vector<float>(120, 1.0f));
}

TEST_CASE("Var::item: the value of a one-element Var", "[autograd]") {
  const Var<double> loss = ember::param(ember::full<double>(Shape{}, 2.5));
  REQUIRE(loss.item() == 2.5);
  REQUIRE_THROWS_AS(ember::param(ember::zeros<double>(Shape{2})).item(), ember::Error);
}

}  // namespace test_autograd_var
}  // namespace
