// Reductions (sum mean max min prod argmax argmin var norm logsumexp) against float64
// references computed here: over single, multiple, negative and all axes, keepdim on and off,
// of tensors (dense and views) and of expressions (the producer fused into the reduction), for
// float32, float64, bfloat16, float16 and, where defined, int32 and int64. Also empty and rank-0
// reductions, NaN propagation, argmax ties, softmax and layer norm written as expressions,
// 10^6-element reductions, and run-to-run / thread-count determinism.
//
// Tolerances (see reduction_tolerance below) come from the dtype and the number of terms:
// a float accumulation of n terms has |error| <= m(n) * eps(acc) * sum|t_i| with m(n) = n - 1
// in the worst case (any summation order); for n > 100 we use the probabilistic bound
// m(n) = 10 sqrt(n) (Higham & Mary, "A new approach to probabilistic rounding error analysis",
// 2019: |error| <= lambda sqrt(n) u sum|t_i| with probability >= 1 - 2 exp(-lambda^2 / 2)),
// which for lambda = 10 fails with probability below 1e-21 and is still a hundred times
// tighter than what accumulating in bf16 or half would need.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "support/ref_eval.hpp"

namespace {
namespace test_exec_reductions {

using ember::bf16;
using ember::Dims;
using ember::Tensor;
using ref::Domain;
using ref::Idx;
using ref::ViewKind;
using fp16 = ember::half;

using ref::kInf;
using ref::kNaN;
using ref::Out;
template <class T>
Out out_t(const Tensor<T>& t) {
  return ref::read_out(t);
}

// ---- type-erased reductions ----

enum class Red {
  sum,
  mean,
  max,
  min,
  prod,
  argmax,
  argmin,
  var,
  var0,
  norm2,
  norm1,
  norminf,
  norm3,
  lse
};

struct Spec {
  Dims axes;  // used unless `all`
  bool keepdim = false;
  bool all = false;       // the overload without axes (argmax: the flattened input)
  bool producer = false;  // reduce x * w - shift (fused) instead of x
};

template <class T>
using RFn = Out (*)(const Tensor<T>& x, const Tensor<T>& w, const Spec& s);

struct RFns {
  RFn<float> f32 = nullptr;
  RFn<double> f64 = nullptr;
  RFn<bf16> b16 = nullptr;
  RFn<fp16> f16 = nullptr;
  RFn<std::int32_t> i32 = nullptr;
  RFn<std::int64_t> i64 = nullptr;
  template <class T>
  RFn<T> get() const {
    if constexpr (std::is_same_v<T, float>)
      return f32;
    else if constexpr (std::is_same_v<T, double>)
      return f64;
    else if constexpr (std::is_same_v<T, bf16>)
      return b16;
    else if constexpr (std::is_same_v<T, fp16>)
      return f16;
    else if constexpr (std::is_same_v<T, std::int32_t>)
      return i32;
    else
      return i64;
  }
};

/// Calls f on x, or on the producer expression x * w - shift (0.25 for floating x, 1 for ints).
template <class T, class F>
Out with_input(const Tensor<T>& x, const Tensor<T>& w, const Spec& s, F f) {
  if (!s.producer) return f(x);
  if constexpr (std::is_integral_v<T>) {
    return f(x * w - 1);
  } else {
    return f(x * w - 0.25);
  }
}

// RED(call): `call` uses e (the input expression) and s (the Spec). The generic lambda is
// converted to a function pointer per dtype.
#define RED_LAMBDA(CALL)                                                    \
  [](const auto& x, const auto& w, const Spec& s) {                         \
    return with_input(x, w, s, [&](const auto& e) { return out_t(CALL); }); \
  }
template <class G>
RFns all_dtypes(G g) {
  return {g, g, g, g, g, g};
}
template <class G>
RFns float_dtypes(G g) {
  return {g, g, g, g, nullptr, nullptr};
}

RFns fns_of(Red r) {
  switch (r) {
    case Red::sum:
      return all_dtypes(RED_LAMBDA(s.all ? ember::sum(e) : ember::sum(e, s.axes, s.keepdim)));
    case Red::mean:
      return float_dtypes(RED_LAMBDA(s.all ? ember::mean(e) : ember::mean(e, s.axes, s.keepdim)));
    case Red::max:
      return all_dtypes(RED_LAMBDA(s.all ? ember::max(e) : ember::max(e, s.axes, s.keepdim)));
    case Red::min:
      return all_dtypes(RED_LAMBDA(s.all ? ember::min(e) : ember::min(e, s.axes, s.keepdim)));
    case Red::prod:
      return all_dtypes(RED_LAMBDA(s.all ? ember::prod(e) : ember::prod(e, s.axes, s.keepdim)));
    case Red::argmax:
      return all_dtypes(RED_LAMBDA(
          s.all ? ember::argmax(e) : ember::argmax(e, static_cast<int>(s.axes[0]), s.keepdim)));
    case Red::argmin:
      return all_dtypes(RED_LAMBDA(
          s.all ? ember::argmin(e) : ember::argmin(e, static_cast<int>(s.axes[0]), s.keepdim)));
    case Red::var:
      return float_dtypes(RED_LAMBDA(s.all ? ember::var(e) : ember::var(e, s.axes, s.keepdim)));
    case Red::var0:
      return float_dtypes(RED_LAMBDA(ember::var(e, s.all ? Dims{} : s.axes, s.keepdim, 0.0)));
    case Red::norm2:
      return float_dtypes(RED_LAMBDA(s.all ? ember::norm(e) : ember::norm(e, s.axes, s.keepdim)));
    case Red::norm1:
      return float_dtypes(
          RED_LAMBDA(s.all ? ember::norm(e, 1.0) : ember::norm(e, s.axes, s.keepdim, 1.0)));
    case Red::norminf:
      return float_dtypes(
          RED_LAMBDA(s.all ? ember::norm(e, kInf) : ember::norm(e, s.axes, s.keepdim, kInf)));
    case Red::norm3:
      return float_dtypes(
          RED_LAMBDA(s.all ? ember::norm(e, 3.0) : ember::norm(e, s.axes, s.keepdim, 3.0)));
    case Red::lse:
      return float_dtypes(
          RED_LAMBDA(s.all ? ember::logsumexp(e) : ember::logsumexp(e, s.axes, s.keepdim)));
  }
  return {};
}

const char* red_name(Red r) {
  static const char* names[] = {"sum",       "mean",      "max",
                                "min",       "prod",      "argmax",
                                "argmin",    "var",       "var(correction 0)",
                                "norm",      "norm(p=1)", "norm(p=inf)",
                                "norm(p=3)", "logsumexp"};
  return names[static_cast<int>(r)];
}
bool is_arg(Red r) { return r == Red::argmax || r == Red::argmin; }
bool no_identity(Red r) { return r == Red::max || r == Red::min || is_arg(r); }

// ---- the float64 reference ----

double m_of(std::int64_t n) {
  if (n <= 1) return 0;
  const double worst = static_cast<double>(n - 1);
  return n > 100 ? std::min(worst, 10 * std::sqrt(static_cast<double>(n))) : worst;
}

struct RefResult {
  Idx shape;
  std::vector<double> values;
  std::vector<double> tol;  // absolute
  bool throws = false;      // no identity and an empty reduced range
};

/// Reduces terms[] (in row-major order of the reduced dimensions) as ember should; returns
/// value and absolute tolerance. pe: 1 when each term carries one rounding of the producer
/// (x * w is exact, w a power of 2; the subtraction rounds once), else 0.
std::pair<double, double> reduce_terms(Red r, const std::vector<double>& t, const ref::Prec& p,
                                       double pe, bool integral) {
  const auto n = static_cast<std::int64_t>(t.size());
  const double eps = p.eps_acc, m = m_of(n);
  double sum = 0, abs_sum = 0, maxabs = 0;
  bool has_nan = false;
  for (double v : t) {
    sum += v;
    abs_sum += std::fabs(v);
    maxabs = std::max(maxabs, std::fabs(v));
    has_nan |= std::isnan(v);
  }
  // Output rounding to T (narrow types) plus the subnormal floor.
  auto store = [&](double v) { return p.eps_store * std::fabs(v) + p.tiny; };
  if (integral) {
    switch (r) {
      case Red::sum:
        return {sum, 0};
      case Red::prod: {
        double pr = 1;
        for (double v : t) pr *= v;
        return {pr, 0};
      }
      default:
        break;
    }
  }
  switch (r) {
    case Red::sum:
      return {sum, (m + pe + 1) * eps * abs_sum + store(sum)};
    case Red::mean: {
      const double mean = sum / static_cast<double>(n);
      return {mean, (m + pe + 2) * eps * abs_sum / static_cast<double>(n) + store(mean)};
    }
    case Red::prod: {
      double pr = 1;
      for (double v : t) pr *= v;
      // No cancellation in a product: each of the n - 1 products and each producer rounding
      // adds one relative rounding.
      return {pr, (static_cast<double>(n) * (1 + pe) + 1) * eps * std::fabs(pr) + store(pr)};
    }
    case Red::max:
    case Red::min: {
      double best = r == Red::max ? -kInf : kInf;
      for (double v : t) {
        if (std::isnan(v)) return {kNaN, 0};
        best = r == Red::max ? std::max(best, v) : std::min(best, v);
      }
      return {best, pe * eps * std::fabs(best) + store(best)};
    }
    case Red::argmax:
    case Red::argmin: {
      std::size_t bi = 0;
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (std::isnan(t[i])) return {static_cast<double>(i), 0};    // the first NaN wins
        if (r == Red::argmax ? t[i] > t[bi] : t[i] < t[bi]) bi = i;  // strict: first on ties
      }
      return {static_cast<double>(bi), 0};
    }
    case Red::var:
    case Red::var0: {
      const double corr = r == Red::var ? 1 : 0;
      const double dof = static_cast<double>(n) - corr;
      if (dof <= 0) return {kNaN, 0};
      const double mean = sum / static_cast<double>(n);
      double ss = 0, dev_t = 0;
      for (double v : t) {
        ss += (v - mean) * (v - mean);
        dev_t += std::fabs(v - mean) * std::fabs(v);
      }
      const double var = ss / dof;
      // Welford's update is stable: relative error ~ m(n) eps kappa with the condition number
      // kappa = sqrt(1 + n mean^2 / S) (Chan, Golub & LeVeque 1983); the producer's rounding
      // (eps |t_i|) moves the variance by at most 2 sum |t_i - mean| eps |t_i| / dof.
      const double kappa = ss > 0 ? std::sqrt(1 + static_cast<double>(n) * mean * mean / ss) : 0;
      return {var, (m + 8) * eps * var * kappa + pe * 2 * eps * dev_t / dof + store(var)};
    }
    case Red::norm2: {
      double s2 = 0;
      for (double v : t) s2 += v * v;
      const double nv = std::sqrt(s2);
      // Sum of squares: positive terms, relative m(n) + 1 (square) + 2 pe; sqrt halves it.
      return {nv, ((m + 1 + 2 * pe) / 2 + 2) * eps * nv + store(nv)};
    }
    case Red::norm1:
      return {abs_sum, (m + pe + 1) * eps * abs_sum + store(abs_sum)};
    case Red::norminf:
      return {has_nan ? kNaN : maxabs, pe * eps * maxabs + store(maxabs)};
    case Red::norm3: {
      double s3 = 0;
      for (double v : t) s3 += std::fabs(v) * std::fabs(v) * std::fabs(v);
      const double nv = std::cbrt(s3);
      // |t|^3 by powf (2 ulp) + 3 pe, the sum m(n); s^(1/p) with 1/3 rounded in float moves
      // the result by |ln s| eps, powf 2 ulp more.
      return {nv, ((m + 2 + 3 * pe) / 3 + 2 + std::fabs(std::log(s3 > 0 ? s3 : 1)) + 2) * eps * nv +
                      store(nv)};
    }
    case Red::lse: {
      if (has_nan) return {kNaN, 0};
      if (n == 0) return {-kInf, 0};
      double mx = -kInf;
      for (double v : t) mx = std::max(mx, v);
      if (std::isinf(mx)) return {mx, 0};
      double se = 0;
      for (double v : t) se += std::exp(v - mx);
      const double l = mx + std::log(se);
      // Each step of the online form costs up to 4 roundings relative to the running sum (an
      // exp, a rescaling exp and product, the sum), so the sum carries 4 (m + 1) eps relative
      // error, which log turns into absolute error; the producer moves the result by at most
      // max |t_i| eps; the final max + log rounds once more.
      return {l, (4 * (m + 1) + 6 + pe * maxabs) * eps + 2 * eps * std::fabs(l) + store(l)};
    }
  }
  return {0, 0};
}

RefResult reference(Red r, const ref::RefView& x, const ref::RefView& w, const Spec& s,
                    bool integral, const ref::Prec& p) {
  const int rank = x.rank();
  std::vector<bool> red(static_cast<std::size_t>(rank), s.all);
  if (!s.all) {
    for (int i = 0; i < s.axes.rank(); ++i) {
      if (rank == 0) continue;
      const auto a = s.axes[i];
      red[static_cast<std::size_t>(a < 0 ? a + rank : a)] = true;
    }
  }
  if (s.all && rank == 0) red.clear();
  RefResult out;
  Idx kept_shape;
  for (int d = 0; d < rank; ++d) {
    if (!red[static_cast<std::size_t>(d)]) {
      out.shape.push_back(x.shape[static_cast<std::size_t>(d)]);
      kept_shape.push_back(x.shape[static_cast<std::size_t>(d)]);
    } else if (s.keepdim) {
      out.shape.push_back(1);
    }
  }
  const auto outputs = static_cast<std::size_t>(ref::numel(kept_shape));
  std::vector<std::vector<double>> buckets(outputs);
  const double shift = integral ? 1 : 0.25;
  ref::for_each_index(x.shape, [&](const Idx& ix) {
    std::size_t o = 0;
    for (int d = 0; d < rank; ++d) {
      if (!red[static_cast<std::size_t>(d)])
        o = o * static_cast<std::size_t>(x.shape[static_cast<std::size_t>(d)]) +
            static_cast<std::size_t>(ix[static_cast<std::size_t>(d)]);
    }
    double v = x.at(ix);
    if (s.producer) v = v * w.at_broadcast(ix) - shift;
    buckets[o].push_back(v);
  });
  const double pe = s.producer && !integral ? 1 : 0;
  for (const auto& b : buckets) {
    if (b.empty() && no_identity(r)) {
      out.throws = true;
      return out;
    }
    auto [v, tol] = reduce_terms(r, b, p, pe, integral);
    out.values.push_back(v);
    out.tol.push_back(tol);
  }
  return out;
}

ember::DType result_dtype(Red r, ember::DType in) {
  if (is_arg(r)) return ember::DType::i64;
  const bool integral = in == ember::DType::i32 || in == ember::DType::i64;
  if (integral && (r == Red::sum || r == Red::prod)) return ember::DType::i64;
  return in;
}

// ---- shapes and axes ----

struct ShapeCase {
  Idx shape;
  std::vector<Dims> axes;  // each checked with keepdim off and on; "all" is always added
  bool small = true;       // large cases run with fewer variants
};

const std::vector<ShapeCase>& shape_cases() {
  static const std::vector<ShapeCase> cases = {
      {{}, {{0}, {-1}}},
      {{7}, {{0}, {-1}}},
      {{1}, {{0}}},
      {{4, 5, 6}, {{0}, {1}, {2}, {-1}, {0, 2}, {2, 0}, {-1, -3}, {0, 1, 2}, {-2, 0}}},
      {{3, 4, 5, 2}, {{1, 3}, {0, 2, 3}, {-2}, {3}}},
      {{5, 1, 3}, {{1}, {0, 1}}},
      {{3, 0, 4}, {{1}, {0}, {0, 2}, {2}}},
      {{0}, {{0}}},
      {{64, 700}, {{1}, {0}}, false},  // many outputs, 44800 elements: parallel over outputs
      {{3, 40000}, {{1}}, false},      // few outputs: each split across threads in chunks
  };
  return cases;
}

std::uint64_t seed_of(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (char ch : s) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

Domain domain_for(Red r, bool integral) {
  if (integral) {
    if (r == Red::prod) return Domain::set({-1, 1, 1, 1, 2});
    return Domain::set({-3, -2, -1, 0, 1, 2, 3, 50, -70});
  }
  switch (r) {
    case Red::max:
    case Red::min:
    case Red::argmax:
    case Red::argmin:
    case Red::norminf:
      // Multiples of 1/8: frequent ties, and x * w - 0.25 stays exact, so indices are exact.
      return Domain::set({-4, -2.5, -1, -0.125, 0, 0.25, 0.375, 1, 3, 3.875});
    case Red::prod:
      return Domain::slogr(0.8, 1.25);  // products of ~100 terms stay in range
    case Red::var:
    case Red::var0:
      return Domain::range(96, 104);  // an offset mean tests the stable update
    default:
      return Domain::range(-4, 4);
  }
}

template <class T>
void run_reduction(Red r) {
  constexpr bool integral = std::is_integral_v<T>;
  const RFn<T> fn = fns_of(r).get<T>();
  if (!fn) return;
  const ref::Prec p = [] {
    if constexpr (integral)
      return ref::Prec{0, 0, 0, "int"};  // integer results are exact
    else
      return ref::prec_of<T>();
  }();
  const char* dtype = integral ? (sizeof(T) == 4 ? "int32" : "int64") : p.name;
  std::mt19937_64 rng(seed_of(red_name(r)) + static_cast<std::uint64_t>(ember::dtype_of<T>));
  const Domain dom = domain_for(r, integral);
  // Powers of two, so x * w is exact and the producer rounds once (in the subtraction); for
  // products only the sign changes, which keeps |x * w - 0.25| in [0.55, 1.5].
  const Domain wdom = r == Red::prod ? Domain::set({-1, 1})
                      : integral     ? Domain::set({-2, -1, 1, 2})
                                     : Domain::set({-2, -1, -0.5, 0.5, 1, 2});
  int ci = 0;
  for (const ShapeCase& sc : shape_cases()) {
    // Products of thousands of terms leave every dtype's range (and overflow integers).
    if (r == Red::prod && !sc.small) continue;
    std::vector<Spec> specs;
    for (const Dims& a : sc.axes) {
      if (is_arg(r) && a.rank() != 1) continue;
      for (bool keep : {false, true}) {
        if (!sc.small && keep) continue;
        specs.push_back({a, keep, false, false});
      }
    }
    specs.push_back({Dims{}, false, true, false});
    const int variants = sc.small ? 2 : 1;
    for (int variant = 0; variant < variants; ++variant) {
      for (bool producer : {false, true}) {
        for (Spec s : specs) {
          ++ci;
          s.producer = producer;
          const ViewKind kind =
              variant == 0
                  ? ViewKind::contiguous
                  : static_cast<ViewKind>(1 + ci % (static_cast<int>(ViewKind::count) - 1));
          auto x = ref::make_pair<T>(sc.shape, kind, [&] { return dom.draw(rng); });
          const Idx wshape = sc.shape.empty() ? Idx{} : Idx{sc.shape.back()};
          auto w = ref::make_pair<T>(wshape, ViewKind::contiguous, [&] { return wdom.draw(rng); });
          const RefResult want = reference(r, x.v, w.v, s, integral, p);
          std::string axes = s.all ? std::string("all") : s.axes.str();
          INFO(red_name(r) << " [" << dtype << "] of " << (producer ? "x * w - shift" : "x")
                           << ", x " << ref::str(sc.shape) << " " << ref::view_name(kind)
                           << ", axes " << axes << ", keepdim " << s.keepdim);
          if (want.throws) {
            CHECK_THROWS_AS(fn(x.t, w.t, s), ember::Error);
            continue;
          }
          std::string msg;
          try {
            const Out got = fn(x.t, w.t, s);
            if (got.dtype != result_dtype(r, ember::dtype_of<T>)) {
              msg = "dtype " + std::string(ember::name_of(got.dtype));
            } else if (got.shape != want.shape) {
              msg = "shape " + ref::str(got.shape) + ", want " + ref::str(want.shape);
            } else {
              msg = ref::compare_abs(got.values, want.values, want.tol, dtype, p.overflow);
            }
          } catch (const std::exception& e) {
            msg = std::string("threw: ") + e.what();
          }
          CHECK(msg == "");
        }
      }
    }
  }
}

template <class T>
void run_all_reductions() {
  for (int r = 0; r <= static_cast<int>(Red::lse); ++r) {
    SECTION(red_name(static_cast<Red>(r))) { run_reduction<T>(static_cast<Red>(r)); }
  }
}

TEST_CASE("reductions match a float64 reference: float32", "[reduce]") {
  run_all_reductions<float>();
}
TEST_CASE("reductions match a float64 reference: float64", "[reduce]") {
  run_all_reductions<double>();
}
TEST_CASE("reductions match a float64 reference: bfloat16", "[reduce]") {
  run_all_reductions<bf16>();
}
TEST_CASE("reductions match a float64 reference: float16", "[reduce]") {
  run_all_reductions<fp16>();
}
TEST_CASE("reductions match a float64 reference: int32", "[reduce]") {
  run_all_reductions<std::int32_t>();
}
TEST_CASE("reductions match a float64 reference: int64", "[reduce]") {
  run_all_reductions<std::int64_t>();
}

TEST_CASE("norm(x, {1}) is the 2-norm over dim 1; p is a number only when it is one", "[reduce]") {
  // A braced list once converted to the p overload: norm(x, {1}) was the 1-norm of everything.
  const Tensor<double> x = ember::from_vector<double>({3, 4, 0, 6, 8, 0}, ember::Shape{2, 3});
  const std::vector<double> rows = Tensor<double>(ember::norm(x, {1})).to_vector();
  REQUIRE(rows == std::vector<double>{5.0, 10.0});
  CHECK(ember::norm(x, 1).item() == 21.0);  // an integer p is p
  CHECK(ember::norm(x, 1.0).item() == 21.0);
  CHECK(ember::norm(x).item() == std::sqrt(125.0));
  const ember::Var<double> v = ember::param(x);
  CHECK(ember::Var<double>(ember::norm(v, {1})).value().to_vector() == rows);
}

TEST_CASE("reductions over empty ranges and rank 0", "[reduce][empty]") {
  Tensor<float> e0 = ember::zeros<float>({0});
  CHECK(ember::sum(e0).item() == 0.0f);
  CHECK(ember::prod(e0).item() == 1.0f);
  CHECK(std::isnan(ember::mean(e0).item()));
  CHECK(std::isnan(ember::var(e0).item()));
  CHECK(ember::norm(e0).item() == 0.0f);
  CHECK(ember::logsumexp(e0).item() == -std::numeric_limits<float>::infinity());
  CHECK_THROWS_AS(ember::max(e0), ember::Error);
  CHECK_THROWS_AS(ember::min(e0), ember::Error);
  CHECK_THROWS_AS(ember::argmax(e0), ember::Error);
  CHECK_THROWS_AS(ember::argmin(e0), ember::Error);
  Tensor<std::int32_t> ei = ember::zeros<std::int32_t>({2, 0});
  Tensor<std::int64_t> si = ember::sum(ei, {1});
  CHECK(si.shape() == ember::Shape{2});
  CHECK(si.to_vector() == std::vector<std::int64_t>{0, 0});
  CHECK(ember::prod(ei, {1}, true).to_vector() == std::vector<std::int64_t>{1, 1});
  CHECK_THROWS_AS(ember::max(ei, {1}), ember::Error);
  // An empty result is fine even without an identity.
  CHECK(ember::max(ei, {0}).shape() == ember::Shape{0});
  // The message says what went wrong.
  try {
    (void)ember::max(e0);
    FAIL("max of an empty tensor did not throw");
  } catch (const ember::Error& err) {
    INFO(err.what());
    CHECK(std::string(err.what()).find("max") != std::string::npos);
    CHECK(std::string(err.what()).find("empty") != std::string::npos);
  }
  // Rank 0: every reduction of a scalar is the scalar (var with correction 1 has no dof).
  Tensor<bf16> s = ember::full<bf16>({}, 2.5);
  CHECK(float(ember::sum(s).item()) == 2.5f);
  CHECK(float(ember::sum(s, {0}).item()) == 2.5f);
  CHECK(float(ember::max(s, {-1}, true).item()) == 2.5f);
  CHECK(ember::sum(s, {0}, true).shape() == ember::Shape{});
  CHECK(float(ember::mean(s).item()) == 2.5f);
  CHECK(float(ember::prod(s * 2).item()) == 5.0f);
  CHECK(ember::argmax(s).item() == 0);
  CHECK(ember::argmin(s, 0).item() == 0);
  CHECK(std::isnan(float(ember::var(s).item())));
  CHECK(float(ember::var(s, {}, false, 0.0).item()) == 0.0f);
  CHECK(float(ember::logsumexp(s).item()) == 2.5f);
}

TEST_CASE("reductions reject bad axes with ember::Error", "[reduce][errors]") {
  Tensor<float> x = ember::zeros<float>({2, 3});
  CHECK_THROWS_AS(ember::sum(x, {2}), ember::Error);
  CHECK_THROWS_AS(ember::sum(x, {-3}), ember::Error);
  CHECK_THROWS_AS(ember::sum(x, {1, -1}), ember::Error);  // the same axis twice
  CHECK_THROWS_AS(ember::argmax(x, 5), ember::Error);
}

TEST_CASE("max, min, argmax and argmin propagate NaN; argmax ties pick the first index",
          "[reduce][nan]") {
  const double n = kNaN;
  Tensor<float> x =
      ember::from_vector<float>({1, float(n), 3, float(n), float(n), 2, 4, 5, 6, 7, 7, 1}, {4, 3});
  CHECK(ref::values_of(ember::argmax(x, 1)) == std::vector<double>{1, 0, 2, 0});
  CHECK(ref::values_of(ember::argmin(x, 1)) == std::vector<double>{1, 0, 0, 2});
  const auto mx = ref::values_of(ember::max(x, {1}));
  CHECK((std::isnan(mx[0]) && std::isnan(mx[1]) && mx[2] == 6 && mx[3] == 7));
  const auto mn = ref::values_of(ember::min(x, {0}));
  CHECK((std::isnan(mn[0]) && std::isnan(mn[1]) && mn[2] == 1));
  CHECK(ember::argmax(x).item() == 1);  // the first NaN of the flattened tensor
  CHECK(std::isnan(ember::sum(x).item()));
  CHECK(std::isnan(ember::logsumexp(x, {1}).to_vector()[0]));
  CHECK(std::isnan(ember::norm(x, kInf).item()));
  // Infinities: max over only -inf is -inf; logsumexp of -inf everywhere is -inf.
  Tensor<float> ninf = ember::full<float>({3}, -kInf);
  CHECK(ember::max(ninf).item() == -std::numeric_limits<float>::infinity());
  CHECK(ember::logsumexp(ninf).item() == -std::numeric_limits<float>::infinity());
  Tensor<float> mixed = ember::from_vector<float>({1, float(kInf), 2});
  CHECK(ember::logsumexp(mixed).item() == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(ember::sum(ember::from_vector<float>({float(kInf), float(-kInf)})).item()));
  // Large values: logsumexp does not overflow.
  Tensor<bf16> big = ember::from_vector<bf16>({bf16(1000.0f), bf16(1000.0f)});
  CHECK(std::fabs(float(ember::logsumexp(big).item()) - (1000 + std::log(2.0))) <= 1000 * 0x1p-7);
  Tensor<float> bigf = ember::from_vector<float>({1000, 1000, 999});
  CHECK(std::fabs(ember::logsumexp(bigf).item() - (1000 + std::log(2 + std::exp(-1.0)))) <= 1e-3);

  // Ties: the first index, along any axis and over the flattened tensor, for ints too.
  Tensor<float> t = ember::from_vector<float>({2, 5, 5, 1, 7, 7, 7, 7, 0, 5, 5, 0}, {3, 4});
  CHECK(ref::values_of(ember::argmax(t, 1)) == std::vector<double>{1, 0, 1});
  CHECK(ref::values_of(ember::argmin(t, 1)) == std::vector<double>{3, 0, 0});
  CHECK(ref::values_of(ember::argmax(t, 0, true)) == std::vector<double>{1, 1, 1, 1});
  CHECK(ember::argmax(t, 0, true).shape() == ember::Shape{1, 4});
  CHECK(ember::argmax(t).item() == 4);
  CHECK(ember::argmin(t).item() == 8);
  Tensor<std::int32_t> ti = ember::from_vector<std::int32_t>({3, 9, 9, 9, -1, -1});
  CHECK(ember::argmax(ti).item() == 1);
  CHECK(ember::argmin(ti).item() == 4);
  // Ties across the threads' chunks of one long row: still the first.
  Tensor<float> flat = ember::full<float>({3, 200000}, 1.0);
  CHECK(ref::values_of(ember::argmax(flat, 1)) == std::vector<double>{0, 0, 0});
  CHECK(ember::argmax(flat).item() == 0);
  Tensor<float> late =
      ember::where(ember::arange<float>(200000) >= 150000, 3.0, ember::arange<float>(200000) * 0.0);
  CHECK(ember::argmax(late).item() == 150000);
  CHECK(ember::argmin(ember::from_vector<float>(std::vector<float>(100003, -2.0f))).item() == 0);
}

// ---- softmax and layer norm as expressions ----

namespace {

template <class T>
void check_softmax(const Idx& shape, int axis, ViewKind kind) {
  const ref::Prec p = ref::prec_of<T>();
  std::mt19937_64 rng(seed_of("softmax") + static_cast<std::uint64_t>(axis));
  auto x = ref::make_pair<T>(shape, kind, [&] { return Domain::range(-8, 8).draw(rng); });
  const Dims ax{axis};
  // max, subtract, exp, sum, divide: keepdim results broadcast back.
  Tensor<T> m = ember::max(x.t, ax, true);
  Tensor<T> s = ember::sum(ember::exp(x.t - m), ax, true);
  Tensor<T> y = ember::exp(x.t - m) / s;
  REQUIRE(ref::from_shape(y.shape()) == shape);
  // Reference in double along `axis`.
  const int a = axis < 0 ? axis + static_cast<int>(shape.size()) : axis;
  const auto n = shape[static_cast<std::size_t>(a)];
  std::vector<double> want, tol;
  const auto ua = static_cast<std::size_t>(a);
  std::map<Idx, std::pair<double, double>> slices;  // (max, sum of exp(x - max)) per slice
  ref::for_each_index(shape, [&](const Idx& ix) {
    Idx j = ix;
    j[ua] = 0;
    auto it = slices.find(j);
    if (it == slices.end()) {
      double mx = -kInf, se = 0;
      for (j[ua] = 0; j[ua] < n; ++j[ua]) mx = std::max(mx, x.v.at(j));
      for (j[ua] = 0; j[ua] < n; ++j[ua]) se += std::exp(x.v.at(j) - mx);
      j[ua] = 0;
      it = slices.emplace(j, std::make_pair(mx, se)).first;
    }
    const double mx = it->second.first, se = it->second.second;
    const double v = x.v.at(ix), r = std::exp(v - mx) / se;
    want.push_back(r);
    // x - m rounds once (eps |x - m| of absolute error in exp's argument, hence relative in
    // the result), exp 2 ulp, the sum of positive terms m(n) + 3 (its own terms' errors),
    // the quotient 0.5 ulp; and two roundings to T (the stored sum and the result).
    tol.push_back((std::fabs(v - mx) + m_of(n) + 8) * p.eps_acc * r + 2 * p.eps_store * r + p.tiny);
  });
  const auto got = ref::values_of(y);
  INFO("softmax [" << p.name << "] of " << ref::str(shape) << " " << ref::view_name(kind)
                   << " along " << axis);
  CHECK(ref::compare_abs(got, want, tol, p.name, p.overflow) == "");
  // The probabilities sum to 1 along the axis: each is within tol_i = rel_i * y_i, so the
  // sum within max(rel_i) * 1, plus the float sum's own m(n) + 1 eps.
  double max_rel = 0;
  for (std::size_t i = 0; i < want.size(); ++i) max_rel = std::max(max_rel, tol[i] / want[i]);
  Tensor<float> total = ember::sum(ember::cast<float>(y), ax);
  for (float v : total.to_vector()) CHECK(std::fabs(v - 1.0) <= max_rel + (m_of(n) + 1) * 0x1p-23);
}

template <class T>
void check_layer_norm(const Idx& shape, ViewKind kind) {
  const ref::Prec p = ref::prec_of<T>();
  std::mt19937_64 rng(seed_of("layernorm"));
  const std::int64_t d = shape.back();
  auto x = ref::make_pair<T>(shape, kind, [&] { return Domain::range(-3, 5).draw(rng); });
  auto g = ref::make_pair<T>({d}, ViewKind::contiguous,
                             [&] { return Domain::range(0.5, 1.5).draw(rng); });
  auto b =
      ref::make_pair<T>({d}, ViewKind::contiguous, [&] { return Domain::range(-1, 1).draw(rng); });
  const double eps_ln = 1e-5;
  // Two spellings: mean of squared deviations, and var with correction 0.
  Tensor<T> mu = ember::mean(x.t, {-1}, true);
  Tensor<T> var = ember::mean(ember::square(x.t - mu), {-1}, true);
  Tensor<T> y = (x.t - mu) * ember::rsqrt(var + eps_ln) * g.t + b.t;
  Tensor<T> y2 = (x.t - ember::mean(x.t, {-1}, true)) *
                     ember::rsqrt(ember::var(x.t, {-1}, true, 0.0) + eps_ln) * g.t +
                 b.t;
  std::vector<double> want, tol;
  std::map<Idx, std::pair<double, double>> rows;  // (mean, population variance) per row
  ref::for_each_index(shape, [&](const Idx& ix) {
    Idx j = ix;
    const std::size_t last = shape.size() - 1;
    j[last] = 0;
    auto it = rows.find(j);
    if (it == rows.end()) {
      double sum = 0, sq = 0;
      for (j[last] = 0; j[last] < d; ++j[last]) sum += x.v.at(j);
      const double mean = sum / static_cast<double>(d);
      for (j[last] = 0; j[last] < d; ++j[last]) sq += (x.v.at(j) - mean) * (x.v.at(j) - mean);
      j[last] = 0;
      it = rows.emplace(j, std::make_pair(mean, sq / static_cast<double>(d))).first;
    }
    const double mean = it->second.first, var_ref = it->second.second;
    const double sigma = std::sqrt(var_ref + eps_ln);
    const double gv = g.v.at({ix[last]}), bv = b.v.at({ix[last]});
    const double xhat = (x.v.at(ix) - mean) / sigma;
    want.push_back(xhat * gv + bv);
    // mean and var carry m(d) + 4 eps(acc) of relative error plus one rounding to T each, and
    // an error in the mean moves x - mu by |mean| times that; the normalised value is then
    // off by that over sigma, plus |xhat| times var's relative error (halved by the sqrt);
    // the remaining 6 operations add 8 eps(acc) (with margin) relative to |xhat g| + |b|, the
    // result one rounding to T. (var's error grows with the condition number kappa = sqrt(1 +
    // mean^2 / var) for the one-pass Welford spelling.)
    const double kappa = std::sqrt(1 + mean * mean / var_ref);
    const double rel = (m_of(d) + 8) * p.eps_acc + p.eps_store;
    const double rel_var = (m_of(d) + 8) * kappa * p.eps_acc + p.eps_store;
    tol.push_back(std::fabs(gv) * (std::fabs(mean) / sigma * rel + std::fabs(xhat) * rel_var) +
                  8 * p.eps_acc * (std::fabs(xhat * gv) + std::fabs(bv)) +
                  p.eps_store * std::fabs(xhat * gv + bv) + p.tiny);
  });
  INFO("layer norm [" << p.name << "] of " << ref::str(shape) << " " << ref::view_name(kind));
  CHECK(ref::compare_abs(ref::values_of(y), want, tol, p.name, p.overflow) == "");
  CHECK(ref::compare_abs(ref::values_of(y2), want, tol, p.name, p.overflow) == "");
}

}  // namespace

TEMPLATE_TEST_CASE("softmax written as expressions matches the reference", "[reduce][softmax]",
                   float, double, bf16, fp16) {
  check_softmax<TestType>({8, 33}, 1, ViewKind::contiguous);
  check_softmax<TestType>({8, 33}, -1, ViewKind::transposed);
  check_softmax<TestType>({5, 17, 3}, 1, ViewKind::stepped);
  check_softmax<TestType>({6, 4, 9}, 0, ViewKind::expanded);
  check_softmax<TestType>({4, 5000}, 1, ViewKind::contiguous);
}

TEMPLATE_TEST_CASE("layer norm written as expressions matches the reference", "[reduce][layernorm]",
                   float, double, bf16, fp16) {
  check_layer_norm<TestType>({16, 64}, ViewKind::contiguous);
  check_layer_norm<TestType>({3, 5, 48}, ViewKind::transposed);
  check_layer_norm<TestType>({7, 40}, ViewKind::stepped_transposed);
  check_layer_norm<TestType>({2, 3072}, ViewKind::contiguous);
}

// ---- large reductions and determinism ----

namespace {

template <class T>
std::pair<Tensor<T>, std::vector<double>> random_tensor(std::int64_t n, double lo, double hi,
                                                        std::uint64_t seed) {
  Tensor<T> t = ember::rand<T>({n}, seed, ember::Device::cpu(), lo, hi);
  std::vector<double> v;
  v.reserve(static_cast<std::size_t>(n));
  for (const T& x : t.to_vector()) v.push_back(ref::to_d<T>(x));
  return {t, v};
}

}  // namespace

TEMPLATE_TEST_CASE("reductions of 10^6 elements accumulate in float (double for double)",
                   "[reduce][large]", float, bf16, fp16, double) {
  using T = TestType;
  const ref::Prec p = ref::prec_of<T>();
  const std::int64_t n = 1000000;
  // Values in [-1, 1.1): sums stay below half's largest finite value (65504).
  auto [x, v] = random_tensor<T>(n, -1.0, 1.1, 11);
  double sum = 0, abs_sum = 0, sq = 0;
  for (double a : v) {
    sum += a;
    abs_sum += std::fabs(a);
    sq += a * a;
  }
  const double mean = sum / static_cast<double>(n);
  double ss = 0;
  for (double a : v) ss += (a - mean) * (a - mean);
  const double m = m_of(n);  // 10^4: 10 sqrt(n)
  INFO("dtype " << p.name << ", n " << n << ", m(n) " << m);
  const double s_got = ref::to_d<T>(ember::sum(x).item());
  INFO("sum " << s_got << " vs " << sum
              << ": |error| / sum|x| = " << std::fabs(s_got - sum) / abs_sum);
  CHECK(std::fabs(s_got - sum) <= (m + 1) * p.eps_acc * abs_sum + p.eps_store * std::fabs(sum));
  const double mean_got = ref::to_d<T>(ember::mean(x).item());
  CHECK(std::fabs(mean_got - mean) <=
        (m + 2) * p.eps_acc * abs_sum / static_cast<double>(n) + p.eps_store * std::fabs(mean));
  const double n2 = ref::to_d<T>(ember::norm(x).item());
  CHECK(std::fabs(n2 - std::sqrt(sq)) <=
        ((m + 1) / 2 + 2) * p.eps_acc * std::sqrt(sq) + p.eps_store * std::sqrt(sq));
  const double var_got = ref::to_d<T>(ember::var(x).item()), var = ss / static_cast<double>(n - 1);
  const double kappa = std::sqrt(1 + static_cast<double>(n) * mean * mean / ss);
  CHECK(std::fabs(var_got - var) <= (m + 8) * p.eps_acc * var * kappa + p.eps_store * var);
  // A fused producer over the same data: mean((x - 1)^2) in one pass.
  double sq1 = 0;
  for (double a : v) sq1 += (a - 1) * (a - 1);
  sq1 /= static_cast<double>(n);
  const double sq1_got = ref::to_d<T>(ember::mean(ember::square(x - 1.0)).item());
  CHECK(std::fabs(sq1_got - sq1) <= (m + 4) * p.eps_acc * sq1 + p.eps_store * sq1);
  // 2-D: along rows (contiguous) and along columns (strided).
  Tensor<T> x2 = x.view({1000, 1000});
  const auto rows = ref::values_of(ember::sum(x2, {1})), cols = ref::values_of(ember::sum(x2, {0}));
  int bad = 0;
  for (int i = 0; i < 1000; ++i) {
    double rs = 0, ra = 0, cs = 0, ca = 0;
    for (int j = 0; j < 1000; ++j) {
      rs += v[static_cast<std::size_t>(i * 1000 + j)];
      ra += std::fabs(v[static_cast<std::size_t>(i * 1000 + j)]);
      cs += v[static_cast<std::size_t>(j * 1000 + i)];
      ca += std::fabs(v[static_cast<std::size_t>(j * 1000 + i)]);
    }
    const double mm = m_of(1000);
    if (std::fabs(rows[static_cast<std::size_t>(i)] - rs) >
        (mm + 1) * p.eps_acc * ra + p.eps_store * std::fabs(rs) + p.tiny)
      ++bad;
    if (std::fabs(cols[static_cast<std::size_t>(i)] - cs) >
        (mm + 1) * p.eps_acc * ca + p.eps_store * std::fabs(cs) + p.tiny)
      ++bad;
  }
  CHECK(bad == 0);
  // max / argmax over the whole tensor.
  std::size_t best = 0;
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (v[i] > v[best]) best = i;
  }
  CHECK(ember::argmax(x).item() == static_cast<std::int64_t>(best));
  CHECK(ref::to_d<T>(ember::max(x).item()) == v[best]);
}

TEST_CASE("reductions are deterministic: run to run and across thread counts",
          "[reduce][determinism]") {
  const std::int64_t n = 1 << 20;
  Tensor<float> x = ember::randn<float>({n}, 5);
  Tensor<bf16> xb = ember::randn<bf16>({n}, 6);
  Tensor<float> x2 = x.view({16, n / 16});
  auto snapshot = [&] {
    std::vector<double> r;
    r.push_back(ember::sum(x).item());
    r.push_back(ember::mean(x * x + 1).item());
    r.push_back(ember::var(x).item());
    r.push_back(ember::norm(x).item());
    r.push_back(ember::logsumexp(x).item());
    r.push_back(static_cast<double>(ember::argmax(x).item()));
    r.push_back(ref::to_d(ember::sum(xb).item()));
    r.push_back(ref::to_d(ember::logsumexp(ember::cast<float>(xb) * 0.5).item()));
    for (double v : ref::values_of(ember::sum(x2, {1}))) r.push_back(v);
    for (double v : ref::values_of(ember::sum(x2.transpose(0, 1), {0}))) r.push_back(v);
    for (double v : ref::values_of(ember::var(x2, {0}))) {
      r.push_back(v);
      if (r.size() > 64) break;
    }
    return r;
  };
  auto same_bits = [](const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) return false;
    }
    return true;
  };
  const auto first = snapshot();
  CHECK(same_bits(first, snapshot()));
#if defined(_OPENMP)
  const int saved = omp_get_max_threads();
  for (int threads : {1, 3, 7}) {
    omp_set_num_threads(threads);
    INFO("OpenMP threads " << threads << " (default " << saved << ")");
    CHECK(same_bits(first, snapshot()));
  }
  omp_set_num_threads(saved);
#else
  WARN("built without OpenMP: the thread-count part of the determinism test did not run");
#endif
}

}  // namespace test_exec_reductions
}  // namespace
