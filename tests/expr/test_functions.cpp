// Every elementwise function and operator against a float64 reference computed here in plain
// C++ (std:: functions on double), for float32, float64, bfloat16 and float16; with broadcasting
// shapes that include rank 0, size-1 and size-0 dimensions; with inputs that are dense or views
// (transposed, sliced with a step, expanded, and a transposed-and-stepped view of a view); and
// with the special values (0, -0, inf, NaN) where the function gives them a meaning.
//
// The reference reads the values the tensors actually store (inputs are rounded to the dtype
// before the reference sees them), so only the function's own error is measured. Tolerances
// come from the dtype, never from what passed: see ref::tolerance() in support/ref_eval.hpp,
//   |got - ref| <= c * eps(acc_t<T>) * scale + eps(T) * |ref| [narrow T only] + tiny,
// where `c` and `scale` are justified per function in the table below.
//
// To keep compile time down, every case is type-erased to plain function pointers: one small
// instantiation of the expression per (function, dtype), and one non-template checking loop.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/ref_eval.hpp"

namespace {
namespace test_expr_functions {

using ember::bf16;
using ember::Tensor;
using ref::Domain;
using ref::Idx;
using ref::ViewKind;
using fp16 = ember::half;  // CUDA's headers may declare a global `half`

using ref::kInf;
using ref::kNaN;
using ref::Out;

// ---- type-erased cases ----

template <class T>
using Ins = std::vector<Tensor<T>>;
template <class T>
using EmFn = Out (*)(const Ins<T>&);

/// Evaluates an expression into a new tensor (one fused assignment) and reads it back.
template <class E>
Out out_of(const E& e) {
  using V = typename E::value_type;
  return ref::read_out(Tensor<V>(e));
}

struct Fns {
  EmFn<float> f32;
  EmFn<double> f64;
  EmFn<bf16> b16;
  EmFn<fp16> f16;
  template <class T>
  EmFn<T> get() const {
    if constexpr (std::is_same_v<T, float>)
      return f32;
    else if constexpr (std::is_same_v<T, double>)
      return f64;
    else if constexpr (std::is_same_v<T, bf16>)
      return b16;
    else
      return f16;
  }
};
// A captureless generic lambda converts to a function pointer for each dtype.
template <class G>
Fns fns(G g) {
  return {g, g, g, g};
}
#define EM1(BODY)          \
  fns([](const auto& in) { \
    const auto& a = in[0]; \
    return out_of(BODY);   \
  })
#define EM2(BODY)          \
  fns([](const auto& in) { \
    const auto& a = in[0]; \
    const auto& b = in[1]; \
    return out_of(BODY);   \
  })
#define EM3(BODY)          \
  fns([](const auto& in) { \
    const auto& a = in[0]; \
    const auto& b = in[1]; \
    const auto& c = in[2]; \
    return out_of(BODY);   \
  })

using RefFn = double (*)(const double* x);
using ScaleFn = double (*)(const double* x, double ref);

struct Case {
  std::string name;
  int arity;
  RefFn ref;
  std::vector<Domain> dom;                    // one per input
  double c;                                   // allowed compute error, in eps(acc) units of `scale`
  ScaleFn scale;                              // nullptr: |ref|
  bool predicate;                             // result is bool
  bool signed_zero;                           // a zero result must have the reference's sign
  std::vector<std::vector<double>> specials;  // each: one value per input
  Fns f;
};

// ---- reference helpers (plain C++ on doubles) ----
double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}
double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}
bool truthy(double x) { return x != 0; }  // NaN is nonzero, so true (as static_cast<bool>)

const Domain kDefault = Domain::range(-4, 4);
const Domain kCmp = Domain::set({-1, -0.5, 0, 0.5, 1, 2});  // ties are frequent
const Domain kLogic = Domain::set({0, -0.0, 1, -2.5, 0.5});
const std::vector<std::vector<double>> kUnarySpecials = {{0.0}, {-0.0}, {kInf}, {-kInf}, {kNaN}};

// clang-format off
// Error budgets. glibc's float functions used here (expf exp2f logf log2f log1pf expm1f sinf
// cosf tanf tanhf erff powf) are within 2 ulp (glibc manual, "Errors in Math Functions"), a
// correctly rounded operation within 0.5 ulp, and an ulp of x is at most eps*|x|; the double
// reference's own error is far below eps(float) and, for float64, adds at most ~2 ulp. So a
// single library call gets c = 4, one IEEE operation c = 1, an exact operation c = 0.
// For formulas of several operations the budget is the sum over the operations, each bounded
// relative to `scale`, rounded up with a factor of about 2 of margin.
std::vector<Case> make_cases() {
  std::vector<Case> k;
  auto u = [&](std::string n, RefFn r, Domain d, double c, Fns f, std::vector<std::vector<double>> sp = kUnarySpecials,
               bool sz = false, ScaleFn s = nullptr) {
    k.push_back({std::move(n), 1, r, {std::move(d)}, c, s, false, sz, std::move(sp), f});
  };
  auto bi = [&](std::string n, RefFn r, Domain d0, Domain d1, double c, Fns f, std::vector<std::vector<double>> sp = {},
                bool sz = false) {
    k.push_back({std::move(n), 2, r, {std::move(d0), std::move(d1)}, c, nullptr, false, sz, std::move(sp), f});
  };
  auto pred = [&](std::string n, int arity, RefFn r, Domain d, Fns f, std::vector<std::vector<double>> sp) {
    k.push_back({std::move(n), arity, r, std::vector<Domain>(static_cast<std::size_t>(arity), d), 0, nullptr, true, false, std::move(sp), f});
  };

  // Exact operations: c = 0.
  u("neg", [](const double* x) { return -x[0]; }, kDefault, 0, EM1(ember::neg(a)), kUnarySpecials, true);
  u("unary -", [](const double* x) { return -x[0]; }, kDefault, 0, EM1(-a), kUnarySpecials, true);
  u("abs", [](const double* x) { return std::fabs(x[0]); }, kDefault, 0, EM1(ember::abs(a)), kUnarySpecials, true);
  u("sign", [](const double* x) { return x[0] > 0 ? 1.0 : x[0] < 0 ? -1.0 : x[0]; }, Domain::set({-2, -0.5, 0, -0.0, 0.25, 3}), 0,
    EM1(ember::sign(a)), kUnarySpecials, true);
  u("relu", [](const double* x) { return x[0] < 0 ? 0.0 : x[0]; }, kDefault, 0, EM1(ember::relu(a)), {{0.0}, {kInf}, {-kInf}, {kNaN}, {-1.0}});
  const std::vector<std::vector<double>> rounding = {{0.5}, {1.5}, {2.5}, {-0.5}, {-1.5}, {-2.5}, {-0.3}, {0.3}, {0.0}, {-0.0}, {kInf}, {-kInf}, {kNaN}};
  u("floor", [](const double* x) { return std::floor(x[0]); }, Domain::range(-10, 10), 0, EM1(ember::floor(a)), rounding, true);
  u("ceil", [](const double* x) { return std::ceil(x[0]); }, Domain::range(-10, 10), 0, EM1(ember::ceil(a)), rounding, true);
  // Round half to even (torch.round): nearbyint in the default rounding mode.
  u("round", [](const double* x) { return std::nearbyint(x[0]); }, Domain::range(-10, 10), 0, EM1(ember::round(a)), rounding, true);
  // x*x of a bf16/half value is exact in float; of a float, one rounding: c = 1.
  u("square", [](const double* x) { return x[0] * x[0]; }, Domain::range(-50, 50), 1, EM1(ember::square(a)), kUnarySpecials);

  // One library call: c = 4.
  u("exp", [](const double* x) { return std::exp(x[0]); }, Domain::range(-10, 10), 4, EM1(ember::exp(a)));
  u("exp2", [](const double* x) { return std::exp2(x[0]); }, Domain::range(-12, 12), 4, EM1(ember::exp2(a)));
  const std::vector<std::vector<double>> logs = {{0.0}, {-0.0}, {1.0}, {kInf}, {-1.0}, {kNaN}};
  u("log", [](const double* x) { return std::log(x[0]); }, Domain::logr(1e-3, 1e3), 4, EM1(ember::log(a)), logs);
  u("log2", [](const double* x) { return std::log2(x[0]); }, Domain::logr(1e-3, 1e3), 4, EM1(ember::log2(a)), logs);
  u("log1p", [](const double* x) { return std::log1p(x[0]); }, Domain::range(-0.9, 10), 4, EM1(ember::log1p(a)),
    {{0.0}, {-0.0}, {-1.0}, {-2.0}, {kInf}, {kNaN}, {1e-6}}, true);
  u("expm1", [](const double* x) { return std::expm1(x[0]); }, Domain::range(-5, 5), 4, EM1(ember::expm1(a)),
    {{0.0}, {-0.0}, {kInf}, {-kInf}, {kNaN}, {1e-6}}, true);
  // sqrt is correctly rounded: c = 1 (2 for margin).
  u("sqrt", [](const double* x) { return std::sqrt(x[0]); }, Domain::range(0, 100), 2, EM1(ember::sqrt(a)),
    {{0.0}, {-0.0}, {kInf}, {-1.0}, {kNaN}}, true);
  // 1/sqrt(x): two correctly rounded operations, c = 2 (4 for margin).
  u("rsqrt", [](const double* x) { return 1.0 / std::sqrt(x[0]); }, Domain::logr(1e-2, 100), 4, EM1(ember::rsqrt(a)),
    {{0.0}, {-0.0}, {kInf}, {-1.0}, {kNaN}});
  const std::vector<std::vector<double>> trig = {{0.0}, {-0.0}, {kInf}, {-kInf}, {kNaN}};
  u("sin", [](const double* x) { return std::sin(x[0]); }, Domain::range(-10, 10), 4, EM1(ember::sin(a)), trig, true);
  u("cos", [](const double* x) { return std::cos(x[0]); }, Domain::range(-10, 10), 4, EM1(ember::cos(a)), trig);
  u("tan", [](const double* x) { return std::tan(x[0]); }, Domain::range(-1.5, 1.5), 4, EM1(ember::tan(a)), trig, true);
  u("tanh", [](const double* x) { return std::tanh(x[0]); }, Domain::range(-6, 6), 4, EM1(ember::tanh(a)), kUnarySpecials, true);
  u("erf", [](const double* x) { return std::erf(x[0]); }, Domain::range(-4, 4), 4, EM1(ember::erf(a)), kUnarySpecials, true);
  // 1/x is correctly rounded: c = 1 (2 for margin).
  u("reciprocal", [](const double* x) { return 1.0 / x[0]; }, Domain::slogr(0.1, 10), 2, EM1(ember::reciprocal(a)), kUnarySpecials, true);

  // Formulas. sigmoid = 1/(1+exp(-x)) (or e/(1+e), e = exp(x), for x < 0): exp <= 2 ulp, the
  // positive sum and the division 0.5 ulp each, and the relative error of exp passes through
  // scaled by at most 1: <= 3 ulp of the result, c = 8.
  u("sigmoid", [](const double* x) { return 1.0 / (1.0 + std::exp(-x[0])); }, Domain::range(-20, 20), 8, EM1(ember::sigmoid(a)),
    {{0.0}, {kInf}, {-kInf}, {kNaN}});
  // silu = x * sigmoid(x): sigmoid's 3 ulp plus one product, c = 10.
  u("silu", [](const double* x) { return x[0] / (1.0 + std::exp(-x[0])); }, Domain::range(-20, 20), 10, EM1(ember::silu(a)),
    {{0.0}, {kInf}, {kNaN}});
  // leaky_relu: x * slope with slope rounded to float (0.5 ulp) and one product: c = 2.
  u("leaky_relu", [](const double* x) { return x[0] < 0 ? 0.01 * x[0] : x[0]; }, kDefault, 2, EM1(ember::leaky_relu(a)),
    {{0.0}, {kInf}, {-kInf}, {kNaN}});
  u("leaky_relu(0.2)", [](const double* x) { return x[0] < 0 ? 0.2 * x[0] : x[0]; }, kDefault, 2, EM1(ember::leaky_relu(a, 0.2)),
    {{0.0}, {kInf}, {-kInf}, {kNaN}});
  // softplus = log1p(exp(x)) (x itself above the threshold 20): exp's relative error passes
  // through log1p scaled by y/((1+y)log1p(y)) <= 1, then log1p adds 2 ulp: <= 4 ulp, c = 8.
  u("softplus", [](const double* x) { return x[0] > 20 ? x[0] : std::log1p(std::exp(x[0])); }, Domain::range(-30, 30), 8,
    EM1(ember::softplus(a)), {{0.0}, {kInf}, {-kInf}, {kNaN}, {20.0}});
  u("softplus(beta 2, threshold 10)", [](const double* x) { return 2 * x[0] > 10 ? x[0] : std::log1p(std::exp(2 * x[0])) / 2; },
    Domain::range(-15, 15), 8, EM1(ember::softplus(a, 2.0, 10.0)), {{0.0}, {kInf}, {-kInf}, {kNaN}, {5.0}});
  // gelu = 0.5 x (1 + erf(x / sqrt 2)). 1 + erf cancels for x << 0, so the error is bounded
  // relative to |x|, not to the result: the two halves 0.5x and 0.5x*erf are each <= 0.5|x|
  // with ~2 ulp of error each (erff 2 ulp; products, sum 0.5 ulp each), and rounding the
  // argument x*0.7071 (and the constant) moves erf by erf'(u) u * 2 eps <= 0.96 eps, times
  // 0.5|x|. Total <= ~4 eps |x|: scale |x|, c = 8.
  u("gelu", [](const double* x) { return 0.5 * x[0] * (1 + std::erf(x[0] / std::sqrt(2.0))); }, Domain::range(-6, 6), 8,
    EM1(ember::gelu(a)), {{0.0}, {kInf}, {kNaN}}, false, [](const double* x, double) { return std::fabs(x[0]); });
  // gelu (tanh form) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The argument v has
  // ~5 eps of relative error (two rounded constants, x^3, the sum, the product); tanh moves by
  // v sech^2(v) * 5 eps <= 0.45 * 5 eps; tanhf adds 2 ulp; 1 + t and the products 0.5 ulp
  // each, all times 0.5|x| (again cancellation for x << 0): <= ~3.5 eps |x|: scale |x|, c = 8.
  u("gelu(tanh)", [](const double* x) {
      const double v = std::sqrt(2.0 / M_PI) * (x[0] + 0.044715 * x[0] * x[0] * x[0]);
      return 0.5 * x[0] * (1 + std::tanh(v)); }, Domain::range(-6, 6), 8,
    EM1(ember::gelu(a, ember::GeluApproximation::tanh)), {{0.0}, {kInf}, {kNaN}}, false,
    [](const double* x, double) { return std::fabs(x[0]); });
  u("gelu_tanh", [](const double* x) {
      const double v = std::sqrt(2.0 / M_PI) * (x[0] + 0.044715 * x[0] * x[0] * x[0]);
      return 0.5 * x[0] * (1 + std::tanh(v)); }, Domain::range(-6, 6), 8,
    EM1(ember::gelu_tanh(a)), {{0.0}, {kNaN}}, false, [](const double* x, double) { return std::fabs(x[0]); });

  // Binary operators: one correctly rounded operation, c = 1. Division keeps |b| >= 0.25.
  const std::vector<std::vector<double>> arith = {{kInf, -kInf}, {kNaN, 1}, {1, kNaN}, {-0.0, -0.0}, {0.0, -0.0}, {-0.0, 0.0},
                                                  {kInf, 1}, {1, -kInf}, {-1, 0.0}, {0.0, 0.0}};
  bi("a + b", [](const double* x) { return x[0] + x[1]; }, kDefault, kDefault, 1, EM2(a + b), arith, true);
  bi("a - b", [](const double* x) { return x[0] - x[1]; }, kDefault, kDefault, 1, EM2(a - b), arith, true);
  bi("a * b", [](const double* x) { return x[0] * x[1]; }, kDefault, kDefault, 1, EM2(a * b), arith, true);
  bi("a / b", [](const double* x) { return x[0] / x[1]; }, kDefault, Domain::slogr(0.25, 4), 1, EM2(a / b), arith, true);
  // With numbers (exactly representable in every dtype, so the reference needs no rounding).
  u("a + 2.5", [](const double* x) { return x[0] + 2.5; }, kDefault, 1, EM1(a + 2.5), kUnarySpecials);
  u("2.5 - a", [](const double* x) { return 2.5 - x[0]; }, kDefault, 1, EM1(2.5 - a), kUnarySpecials);
  u("a * -0.5", [](const double* x) { return x[0] * -0.5; }, kDefault, 1, EM1(a * -0.5), kUnarySpecials, true);
  u("3 / a", [](const double* x) { return 3.0 / x[0]; }, Domain::slogr(0.25, 4), 1, EM1(3 / a), kUnarySpecials, true);
  u("a / 4", [](const double* x) { return x[0] / 4; }, kDefault, 1, EM1(a / 4), kUnarySpecials, true);
  // pow: powf within 2 ulp, c = 4; bases in [0.1, 4], exponents in [-3, 3].
  bi("pow(a, b)", [](const double* x) { return std::pow(x[0], x[1]); }, Domain::range(0.1, 4), Domain::range(-3, 3), 4,
     EM2(ember::pow(a, b)), {{-2, 3}, {-2, 0.5}, {0.0, 0.0}, {kNaN, 0.0}, {1, kNaN}, {0.0, -1}, {-0.0, -1}, {kInf, -1}, {2, kInf}});
  u("pow(a, 2)", [](const double* x) { return std::pow(x[0], 2.0); }, kDefault, 4, EM1(ember::pow(a, 2)), kUnarySpecials);
  u("pow(2, a)", [](const double* x) { return std::pow(2.0, x[0]); }, Domain::range(-10, 10), 4, EM1(ember::pow(2.0, a)), kUnarySpecials);
  // min / max / clamp are exact and propagate NaN from either side (torch.minimum/maximum).
  const std::vector<std::vector<double>> minmax = {{kNaN, 1}, {1, kNaN}, {kNaN, kNaN}, {kInf, -kInf}, {-kInf, 3}, {2, 2}};
  bi("min(a, b)", [](const double* x) { return nan_min(x[0], x[1]); }, kCmp, kDefault, 0, EM2(ember::min(a, b)), minmax);
  bi("max(a, b)", [](const double* x) { return nan_max(x[0], x[1]); }, kCmp, kDefault, 0, EM2(ember::max(a, b)), minmax);
  u("max(a, 0)", [](const double* x) { return nan_max(x[0], 0.0); }, kDefault, 0, EM1(ember::max(a, 0.0)), {{kNaN}, {-kInf}, {kInf}});
  u("min(1, a)", [](const double* x) { return nan_min(1.0, x[0]); }, kDefault, 0, EM1(ember::min(1.0, a)), {{kNaN}, {-kInf}, {kInf}});
  k.push_back({"clamp(x, lo, hi)", 3, [](const double* x) { return nan_min(nan_max(x[0], x[1]), x[2]); },
               {kDefault, Domain::range(-3, 0), Domain::range(0, 3)}, 0, nullptr, false, false,
               {{kNaN, 0, 1}, {0.5, kNaN, 1}, {0.5, 0, kNaN}, {5, 3, 1}, {-kInf, -1, 1}, {kInf, -1, 1}},
               EM3(ember::clamp(a, b, c))});
  u("clamp(x, -1, 2)", [](const double* x) { return nan_min(nan_max(x[0], -1.0), 2.0); }, kDefault, 0,
    EM1(ember::clamp(a, -1.0, 2.0)), {{kNaN}, {-kInf}, {kInf}, {-1}, {2}});
  // where: cond is any operand, nonzero (NaN included) is true. Exact.
  k.push_back({"where(c, a, b)", 3, [](const double* x) { return truthy(x[0]) ? x[1] : x[2]; },
               {kLogic, kDefault, kDefault}, 0, nullptr, false, true,
               {{1, kNaN, 2}, {0, kNaN, 2}, {0, 1, kNaN}, {kNaN, 1, 2}, {1, -0.0, 0.0}},
               EM3(ember::where(a, b, c))});
  bi("where(a > b, a, b)", [](const double* x) { return x[0] > x[1] ? x[0] : x[1]; }, kCmp, kCmp, 0,
     EM2(ember::where(a > b, a, b)), {{kNaN, 1}, {1, kNaN}});
  bi("where(c, a, 0.5)", [](const double* x) { return truthy(x[0]) ? x[1] : 0.5; }, kLogic, kDefault, 0,
     EM2(ember::where(a, b, 0.5)), {{kNaN, 1}});
  bi("where(c, -1, a)", [](const double* x) { return truthy(x[0]) ? -1.0 : x[1]; }, kLogic, kDefault, 0,
     EM2(ember::where(a, -1, b)), {{0.0, kNaN}});

  // Predicates: bool results, exact.
  const std::vector<std::vector<double>> cmp = {{kNaN, kNaN}, {kNaN, 1}, {1, kNaN}, {0.0, -0.0}, {kInf, kInf}, {-kInf, kInf}};
  pred("a == b", 2, [](const double* x) { return double(x[0] == x[1]); }, kCmp, EM2(a == b), cmp);
  pred("a != b", 2, [](const double* x) { return double(x[0] != x[1]); }, kCmp, EM2(a != b), cmp);
  pred("a < b", 2, [](const double* x) { return double(x[0] < x[1]); }, kCmp, EM2(a < b), cmp);
  pred("a <= b", 2, [](const double* x) { return double(x[0] <= x[1]); }, kCmp, EM2(a <= b), cmp);
  pred("a > b", 2, [](const double* x) { return double(x[0] > x[1]); }, kCmp, EM2(a > b), cmp);
  pred("a >= b", 2, [](const double* x) { return double(x[0] >= x[1]); }, kCmp, EM2(a >= b), cmp);
  pred("a < 0.5", 1, [](const double* x) { return double(x[0] < 0.5); }, kCmp, EM1(a < 0.5), {{kNaN}, {0.5}});
  pred("0.5 <= a", 1, [](const double* x) { return double(0.5 <= x[0]); }, kCmp, EM1(0.5 <= a), {{kNaN}, {0.5}});
  pred("a == 0", 1, [](const double* x) { return double(x[0] == 0); }, kCmp, EM1(a == 0), {{-0.0}, {kNaN}});
  pred("logical_and", 2, [](const double* x) { return double(truthy(x[0]) && truthy(x[1])); }, kLogic,
       EM2(ember::logical_and(a, b)), {{kNaN, 1}, {kNaN, 0}, {-0.0, 1}});
  pred("logical_or", 2, [](const double* x) { return double(truthy(x[0]) || truthy(x[1])); }, kLogic,
       EM2(ember::logical_or(a, b)), {{kNaN, 0}, {0, 0}, {-0.0, 0}});
  pred("logical_not", 1, [](const double* x) { return double(!truthy(x[0])); }, kLogic, EM1(ember::logical_not(a)),
       {{kNaN}, {-0.0}, {kInf}});
  pred("isnan", 1, [](const double* x) { return double(std::isnan(x[0])); }, kDefault, EM1(ember::isnan(a)),
       {{kNaN}, {kInf}, {-0.0}});
  return k;
}
// clang-format on

// ---- the checking loop (not a template over expressions) ----

/// Input shapes per arity: rank 0, size-1 and size-0 dimensions, broadcasting of every kind,
/// and sizes above the executor's parallel threshold (2^15 elements).
const std::vector<std::vector<Idx>>& shape_sets(int arity) {
  static const std::vector<std::vector<Idx>> unary = {
      {{}},        {{1}},          {{0}},
      {{7}},       {{3, 5}},       {{2, 0, 3}},
      {{4, 1, 6}}, {{2, 3, 4, 5}}, {{1, 1, 3, 1, 2}},
      {{40001}},   {{181, 191}}};
  static const std::vector<std::vector<Idx>> binary = {{{}, {}},
                                                       {{}, {2, 3}},
                                                       {{5}, {}},
                                                       {{4, 1}, {1, 5}},
                                                       {{3, 1, 5}, {4, 1}},
                                                       {{0, 3}, {1, 3}},
                                                       {{2, 0, 1}, {1, 4}},
                                                       {{1}, {0}},
                                                       {{6, 7}, {6, 7}},
                                                       {{2, 3, 4, 5}, {5}},
                                                       {{2, 1, 4, 1}, {3, 1, 6}},
                                                       {{1, 1}, {}},
                                                       {{200, 171}, {171}},
                                                       {{40001}, {40001}}};
  static const std::vector<std::vector<Idx>> ternary = {{{}, {}, {}},
                                                        {{3, 1}, {1, 4}, {}},
                                                        {{2, 3, 4}, {3, 1}, {4}},
                                                        {{0, 2}, {1, 2}, {2}},
                                                        {{5}, {5}, {5}},
                                                        {{1}, {2, 1, 3}, {1, 1}},
                                                        {{180, 200}, {200}, {180, 1}}};
  return arity == 1 ? unary : arity == 2 ? binary : ternary;
}

/// Layouts of the inputs in variant v (0: all dense; 1, 2: views, rotated over the inputs).
ViewKind kind_for(int variant, int input, int set_index) {
  if (variant == 0) return ViewKind::contiguous;
  const int n = static_cast<int>(ViewKind::count) - 1;  // the non-dense kinds
  return static_cast<ViewKind>(1 + (variant * 2 + input + set_index) % n);
}

std::uint64_t seed_of(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a: a stable seed per case name
  for (char ch : s) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

/// Runs ember, checks dtype and shape, computes the reference and compares; "" when all good.
std::string check_once(const Case& c, const Out& got, ember::DType want_dtype,
                       const std::vector<ref::RefView>& views, const ref::Prec& p) {
  if (got.dtype != want_dtype) {
    return std::string("result dtype ") + std::string(ember::name_of(got.dtype)) + ", want " +
           std::string(ember::name_of(want_dtype));
  }
  Idx shape;
  for (const auto& v : views) {
    Idx next;
    if (!ref::broadcast(shape, v.shape, next)) return "reference: shapes do not broadcast";
    shape = next;
  }
  if (got.shape != shape)
    return "result shape " + ref::str(got.shape) + ", want " + ref::str(shape);
  const auto n = static_cast<std::size_t>(ref::numel(shape));
  std::vector<double> want(n), scale(n), args(n * views.size());
  std::size_t i = 0;
  ref::for_each_index(shape, [&](const Idx& ix) {
    double* x = &args[i * views.size()];
    for (std::size_t k = 0; k < views.size(); ++k) x[k] = views[k].at_broadcast(ix);
    want[i] = c.ref(x);
    scale[i] = c.scale ? c.scale(x, want[i]) : std::fabs(want[i]);
    ++i;
  });
  return ref::compare(got.values, want, scale, p, c.c, c.signed_zero, [&](std::size_t e) {
    std::string s = "inputs (";
    for (std::size_t k = 0; k < views.size(); ++k) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", args[e * views.size() + k]);
      s += (k ? ", " : "") + std::string(buf);
    }
    return s + ")";
  });
}

template <class T>
void run_case(const Case& c) {
  const ref::Prec p = ref::prec_of<T>();
  const ember::DType want = c.predicate ? ember::DType::boolean : ember::dtype_of<T>;
  std::mt19937_64 rng(seed_of(c.name) ^ static_cast<std::uint64_t>(ember::dtype_of<T>));
  const auto& sets = shape_sets(c.arity);
  for (std::size_t si = 0; si < sets.size(); ++si) {
    for (int variant = 0; variant < 3; ++variant) {
      Ins<T> ins;
      std::vector<ref::RefView> views;
      std::string layout;
      for (int k = 0; k < c.arity; ++k) {
        const ViewKind kind = kind_for(variant, k, static_cast<int>(si));
        const Domain& d = c.dom[static_cast<std::size_t>(k)];
        auto pair = ref::make_pair<T>(sets[si][static_cast<std::size_t>(k)], kind,
                                      [&] { return d.draw(rng); });
        ins.push_back(pair.t);
        views.push_back(pair.v);
        layout += (k ? ", " : "") + ref::str(sets[si][static_cast<std::size_t>(k)]) + " " +
                  ref::view_name(kind);
      }
      std::string msg;
      try {
        msg = check_once(c, c.f.get<T>()(ins), want, views, p);
      } catch (const std::exception& e) {
        msg = std::string("threw: ") + e.what();
      }
      INFO(c.name << " [" << p.name << "] inputs: " << layout);
      CHECK(msg == "");
    }
  }
  // Special values, one tensor element per tuple (dense rank-1 inputs).
  if (!c.specials.empty()) {
    Ins<T> ins;
    std::vector<ref::RefView> views;
    const Idx shape{static_cast<std::int64_t>(c.specials.size())};
    for (int k = 0; k < c.arity; ++k) {
      std::size_t next = 0;
      auto pair = ref::make_pair<T>(shape, ViewKind::contiguous, [&] {
        return c.specials[next++][static_cast<std::size_t>(k)];
      });
      ins.push_back(pair.t);
      views.push_back(pair.v);
    }
    std::string msg;
    try {
      msg = check_once(c, c.f.get<T>()(ins), want, views, p);
    } catch (const std::exception& e) {
      msg = std::string("threw: ") + e.what();
    }
    INFO(c.name << " [" << p.name << "] special values");
    CHECK(msg == "");
  }
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = make_cases();
  return all;
}

template <class T>
void run_all() {
  for (const Case& c : cases()) run_case<T>(c);
}

TEST_CASE("elementwise functions match a float64 reference: float32", "[expr][functions]") {
  run_all<float>();
}
TEST_CASE("elementwise functions match a float64 reference: float64", "[expr][functions]") {
  run_all<double>();
}
TEST_CASE("elementwise functions match a float64 reference: bfloat16", "[expr][functions]") {
  run_all<bf16>();
}
TEST_CASE("elementwise functions match a float64 reference: float16", "[expr][functions]") {
  run_all<fp16>();
}

// ---- casts ----

namespace {

/// x rounded once, to nearest even, to a binary format with `digits` significand bits
/// (implicit bit included), normal exponents down to 2^(min_exp - 1), largest finite `maxv`.
double round_to_format(double v, int digits, int min_exp, double maxv) {
  if (!std::isfinite(v) || v == 0) return v;
  int e;
  (void)std::frexp(v, &e);  // v = m 2^e, 0.5 <= |m| < 1
  e = std::max(e, min_exp);
  const double ulp = std::ldexp(1.0, e - digits);
  const double r = std::nearbyint(v / ulp) * ulp;  // scaling by a power of 2 is exact
  return std::fabs(r) > maxv ? std::copysign(kInf, v) : r;
}
double round_bf16(double v) { return round_to_format(v, 8, -125, 0x1.FEp127); }
double round_half(double v) { return round_to_format(v, 11, -13, 65504.0); }

template <class From, class To>
void check_cast(const std::vector<double>& in, double (*expect)(double), const char* what) {
  std::vector<From> stored;
  std::vector<double> held;
  for (double v : in) {
    stored.push_back(ref::to_t<From>(v));
    held.push_back(ref::to_d<From>(stored.back()));
  }
  Tensor<From> x =
      ember::from_vector<From>(stored, ember::Shape{static_cast<std::int64_t>(in.size())});
  Tensor<To> y = ember::cast<To>(x);
  // A strided input too (every other element of a doubled tensor).
  std::vector<From> doubled;
  for (const From& s : stored) {
    doubled.push_back(s);
    doubled.push_back(ref::to_t<From>(0.0));
  }
  Tensor<From> xd =
      ember::from_vector<From>(doubled, ember::Shape{static_cast<std::int64_t>(doubled.size())});
  Tensor<To> ys = ember::cast<To>(xd.slice(0, 0, static_cast<std::int64_t>(doubled.size()), 2));
  const std::vector<double> got = ref::values_of(y), got_s = ref::values_of(ys);
  REQUIRE(got.size() == in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double want = expect(held[i]);
    INFO(what << ": input " << held[i] << " -> got " << got[i] << " (strided " << got_s[i]
              << "), want " << want);
    const bool same = (std::isnan(want) && std::isnan(got[i])) ||
                      (got[i] == want && std::signbit(got[i]) == std::signbit(want));
    CHECK(same);
    CHECK(((std::isnan(got_s[i]) && std::isnan(got[i])) || got_s[i] == got[i]));
  }
}

}  // namespace

TEST_CASE("cast rounds to nearest even, truncates to integers, and maps nonzero to true",
          "[expr][cast]") {
  // Ties, values just off ties, subnormals, overflow and specials for the 2-byte formats.
  const std::vector<double> floats = {0.0,
                                      -0.0,
                                      1.0,
                                      -1.5,
                                      1 + 0x1p-8,
                                      1 + 0x1p-8 + 0x1p-23,
                                      1 + 3 * 0x1p-8,
                                      1 + 0x1p-11,
                                      1 + 3 * 0x1p-11,
                                      1 + 0x1p-11 + 0x1p-20,
                                      65504,
                                      65519.99,
                                      65520,
                                      1e5,
                                      0x1p-24,
                                      0x1p-25,
                                      0x1.8p-25,
                                      0x1p-26,
                                      1e-6,
                                      3.4e38,
                                      0x1.FFp127,
                                      1e-40,
                                      -0x1p-149,
                                      kInf,
                                      -kInf,
                                      kNaN,
                                      0.1,
                                      -7.3,
                                      123456.789};
  check_cast<float, bf16>(floats, round_bf16, "float -> bf16");
  check_cast<float, fp16>(floats, round_half, "float -> half");
  check_cast<float, double>(
      floats, [](double v) { return v; }, "float -> double (exact)");
  check_cast<double, float>(
      {0.1, -1e-50, 1e39, 1 + 0x1p-24, 1 + 0x1p-24 + 0x1p-40, kNaN, -0.0},
      [](double v) { return static_cast<double>(static_cast<float>(v)); }, "double -> float");
  check_cast<bf16, fp16>({1.0, 1 + 0x1p-7, 3e38, 1e-6, 0x1p-25, -0.0, kInf, kNaN, 65536, 0x1.FEp15},
                         round_half, "bf16 -> half");
  check_cast<fp16, bf16>({1.0, 1 + 0x1p-10, 1 + 0x1p-8 + 0x1p-10, 65504, 0x1p-24, -0.0, kInf, kNaN},
                         round_bf16, "half -> bf16");
  // Values whose double -> float rounding does not land on a bf16/half tie round the same
  // whether ember goes through float or not.
  check_cast<double, bf16>({0.1, 1 + 0x1p-8 + 0x1p-20, -3.3, 1e-40, 4e38}, round_bf16,
                           "double -> bf16");
  check_cast<double, fp16>({0.1, 1 + 0x1p-11 + 0x1p-20, -3.3, 1e-7, 7e4}, round_half,
                           "double -> half");
  // Floating to integer truncates toward zero; to bool, nonzero (NaN too) is true.
  const std::vector<double> ints = {0.0, -0.0, 2.7, -2.7, 100.5, -100.5, 1e6 + 0.5};
  check_cast<float, std::int32_t>(
      ints, [](double v) { return std::trunc(v) + 0.0; }, "float -> int32");
  check_cast<double, std::int64_t>(
      {3e12 + 0.9, -3e12 - 0.9, 0.5}, [](double v) { return std::trunc(v) + 0.0; },
      "double -> int64");
  check_cast<bf16, std::int32_t>(
      {-2.5, 255, 3.75}, [](double v) { return std::trunc(v) + 0.0; }, "bf16 -> int32");
  check_cast<float, std::uint8_t>(
      {0.0, 1.9, 200.5, 255}, [](double v) { return std::trunc(v); }, "float -> uint8");
  check_cast<float, bool>(
      {0.0, -0.0, 0.1, -3, kNaN, kInf}, [](double v) { return v != 0 ? 1.0 : 0.0; },
      "float -> bool");
  // Integer to floating rounds to nearest even.
  check_cast<std::int32_t, bf16>({257, 259, -257, 1 << 20, 0}, round_bf16, "int32 -> bf16");
  check_cast<std::int64_t, float>(
      {double((1ll << 40) + 1), double((1ll << 24) + 1), -3},
      [](double v) {
        return static_cast<double>(static_cast<float>(static_cast<std::int64_t>(v)));
      },
      "int64 -> float");
  check_cast<std::int32_t, fp16>({2049, 2051, 65519, 65520, 100000}, round_half, "int32 -> half");
  check_cast<std::uint8_t, float>(
      {0, 255, 128}, [](double v) { return v; }, "uint8 -> float");
}

TEST_CASE("cast from float64 to a 2-byte type rounds once", "[expr][cast]") {
  // 1 + 2^-8 + 2^-40 lies just above the midpoint between the bf16 neighbours 1 and 1 + 2^-7,
  // so rounding once gives 1 + 2^-7. Going through float first lands exactly on the midpoint
  // (2^-40 is below float's half ulp) and ties to even give 1.
  Tensor<double> x = ember::from_vector<double>({1 + 0x1p-8 + 0x1p-40, 1 + 0x1p-11 + 0x1p-40});
  Tensor<bf16> b = ember::cast<bf16>(x);
  Tensor<fp16> h = ember::cast<fp16>(x);
  const double gb = ref::values_of(b)[0], gh = ref::values_of(h)[1];
  INFO("double -> bf16 gave " << gb << ", double -> half gave " << gh);
  CHECK(gb == 1 + 0x1p-7);
  CHECK(gh == 1 + 0x1p-10);
}

TEST_CASE("cast in the middle of an expression rounds there and nowhere else", "[expr][cast]") {
  std::mt19937_64 rng(7);
  std::vector<float> av, bv;
  for (int i = 0; i < 1000; ++i) {
    av.push_back(static_cast<float>(Domain::range(-3, 3).draw(rng)));
    bv.push_back(static_cast<float>(Domain::range(-3, 3).draw(rng)));
  }
  Tensor<float> a = ember::from_vector<float>(av), b = ember::from_vector<float>(bv);
  // The float product rounded to bf16 mid-tree, then widened again.
  Tensor<float> y = ember::cast<float>(ember::cast<bf16>(a * b)) + 0.0;
  // Widening first: the product of two floats is exact in double.
  Tensor<double> z = ember::cast<double>(a) * ember::cast<double>(b);
  const auto yv = ref::values_of(y), zv = ref::values_of(z);
  int bad_y = 0, bad_z = 0;
  for (std::size_t i = 0; i < av.size(); ++i) {
    const double p = static_cast<double>(av[i]) * static_cast<double>(bv[i]);
    if (yv[i] != round_bf16(static_cast<double>(static_cast<float>(p)))) ++bad_y;
    if (zv[i] != p) ++bad_z;
  }
  CHECK(bad_y == 0);
  CHECK(bad_z == 0);
}

// ---- promotion, integers, bool tensors ----

TEST_CASE("binary operations promote dtypes as PyTorch does", "[expr][promotion]") {
  Tensor<bf16> hb = ember::from_vector<bf16>({bf16(1.5f), bf16(-2.0f)});
  Tensor<fp16> hh = ember::from_vector<fp16>({fp16(0.25f), fp16(3.0f)});
  Tensor<float> f = ember::from_vector<float>({0.1f, 0.2f});
  Tensor<double> d = ember::from_vector<double>({0.1, 0.2});
  Tensor<std::int32_t> i = ember::from_vector<std::int32_t>({7, -7});
  Tensor<std::int64_t> l = ember::from_vector<std::int64_t>({1ll << 40, 3});
  Tensor<std::uint8_t> u = ember::from_vector<std::uint8_t>({200, 255});
  static_assert(std::is_same_v<decltype(hb + hh)::value_type, float>,
                "bf16 with half promotes to float");
  static_assert(std::is_same_v<decltype(hb * f)::value_type, float>);
  static_assert(std::is_same_v<decltype(d - hb)::value_type, double>);
  static_assert(std::is_same_v<decltype(hb * 0.5)::value_type, bf16>,
                "a number keeps the tensor's dtype");
  static_assert(std::is_same_v<decltype(i * 2)::value_type, std::int32_t>);
  static_assert(std::is_same_v<decltype(i * 0.5)::value_type, float>,
                "an int tensor times a float number is float");
  static_assert(std::is_same_v<decltype(i + l)::value_type, std::int64_t>);
  static_assert(std::is_same_v<decltype(i + f)::value_type, float>);
  static_assert(std::is_same_v<decltype(i < f)::value_type, bool>);

  const auto v1 = ref::values_of(Tensor<float>(hb + hh));
  CHECK(v1 == std::vector<double>{1.75, 1.0});
  const auto v2 = ref::values_of(Tensor<double>(d - hb));
  CHECK(v2 == std::vector<double>{0.1 - 1.5, 0.2 + 2.0});
  const auto v3 = ref::values_of(Tensor<float>(i * 0.5));
  CHECK(v3 == std::vector<double>{3.5, -3.5});
  const auto v4 = ref::values_of(Tensor<std::int64_t>(i + l));
  CHECK(v4 == std::vector<double>{double((1ll << 40) + 7), -4});
  // Integer division truncates toward zero, and by zero gives 0 rather than trapping.
  Tensor<std::int32_t> den = ember::from_vector<std::int32_t>({2, 0});
  CHECK(ref::values_of(Tensor<std::int32_t>(i / den)) == std::vector<double>{3, 0});
  CHECK(ref::values_of(Tensor<std::int32_t>(i / 2)) == std::vector<double>{3, -3});
  CHECK(ref::values_of(Tensor<std::int32_t>(ember::abs(i) - 10)) == std::vector<double>{-3, -3});
  // uint8 wraps modulo 256 at the store, as PyTorch's uint8 does.
  CHECK(ref::values_of(Tensor<std::uint8_t>(u + u)) == std::vector<double>{144, 254});
  // A bf16 expression computes in float and rounds once: 1.5 * 0.5 + (-2.0) * 0.5 stays exact.
  CHECK(ref::values_of(Tensor<bf16>(hb * 0.5)) == std::vector<double>{0.75, -1.0});
}

TEST_CASE("bool tensors work as masks and conditions", "[expr][bool]") {
  Tensor<std::uint8_t> m8 = ember::from_vector<std::uint8_t>({1, 0, 2, 0});
  Tensor<bool> m = ember::cast<bool>(m8);
  CHECK(ember::from_vector<bool>({true, false, true, false}).to_vector() ==
        std::vector<bool>{true, false, true, false});
  CHECK(Tensor<bool>(m8 > 0).to_vector() == std::vector<bool>{true, false, true, false});
  Tensor<float> a = ember::from_vector<float>({1, 2, 3, 4});
  CHECK(ref::values_of(m) == std::vector<double>{1, 0, 1, 0});
  CHECK(ref::values_of(Tensor<float>(ember::where(m, a, -a))) == std::vector<double>{1, -2, 3, -4});
  CHECK(ref::values_of(Tensor<float>(ember::where(ember::logical_not(m), a, 0.0))) ==
        std::vector<double>{0, 2, 0, 4});
  // bool with a number: int64 (as PyTorch), and sums of masks count.
  static_assert(std::is_same_v<decltype(m + 1)::value_type, std::int64_t>);
  CHECK(ref::values_of(Tensor<std::int64_t>(m + 1)) == std::vector<double>{2, 1, 2, 1});
  CHECK(ember::sum(m).item() == 2);
  // A bool mask broadcast against a matrix.
  Tensor<float> x = ember::arange<float>(8).reshape({2, 4});
  CHECK(ref::values_of(Tensor<float>(ember::where(m, x, 0.0))) ==
        std::vector<double>{0, 0, 2, 0, 4, 0, 6, 0});
}

TEST_CASE("broadcast mismatches throw ember::Error naming the op and both shapes",
          "[expr][errors]") {
  Tensor<float> a = ember::zeros<float>({3});
  Tensor<float> b = ember::zeros<float>({4});
  Tensor<float> m = ember::zeros<float>({2, 3});
  auto message_of = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const ember::Error& e) {
      return e.what();
    }
    return "(no exception)";
  };
  const std::string add = message_of([&] { (void)(a + b); });
  INFO(add);
  CHECK(add.find("add") != std::string::npos);
  CHECK(add.find("[3]") != std::string::npos);
  CHECK(add.find("[4]") != std::string::npos);
  const std::string mx = message_of([&] { (void)ember::max(m, b); });
  INFO(mx);
  CHECK(mx.find("max") != std::string::npos);
  CHECK(mx.find("[2, 3]") != std::string::npos);
  CHECK_THROWS_AS(ember::where(a, b, 1.0), ember::Error);
  CHECK_THROWS_AS(ember::clamp(m, b, 1.0), ember::Error);
  // Assigning to a tensor of another shape (the expression broadcasts, but not to it).
  Tensor<float> y = ember::zeros<float>({3});
  CHECK_THROWS_AS(y = m * 2, ember::Error);
  CHECK_NOTHROW(m = a + 1);  // [3] broadcasts to [2, 3]
  CHECK(ref::values_of(m) == std::vector<double>{1, 1, 1, 1, 1, 1});
}

}  // namespace test_expr_functions
}  // namespace
