// The functor library: what one element of each elementwise operation computes, in the
// compute type X (float for bf16/half/float, double for double, the integer itself for
// integers). Every functor is host+device, so one expression tree runs on both devices.
//
// `kind` tells the node how to type the operation:
//   arithmetic  operands and result in the promoted compute type;
//   floating    as arithmetic, but only for floating operands (exp, log, ...);
//   predicate   operands in the promoted compute type, result bool;
//   select      where(cond, a, b): cond as bool, a and b promoted.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../core/config.hpp"
#include "math.hpp"

namespace ember::fn {

enum class Kind { arithmetic, floating, predicate, select };

// ---- arithmetic ----
struct Add {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "add";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b) const { return a + b; }
};
struct Sub {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "sub";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b) const { return a - b; }
};
struct Mul {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "mul";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b) const { return a * b; }
};
struct Div {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "div";
  // Integer division truncates like C++; by zero it gives 0 instead of trapping.
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b) const {
    if constexpr (std::is_integral_v<X>) {
      return b == X(0) ? X(0) : X(a / b);
    } else {
      return a / b;
    }
  }
};
struct Neg {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "neg";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a) const { return X(-a); }
};
struct Abs {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "abs";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a) const {
    if constexpr (std::is_floating_point_v<X>) {
      return math::fabs(a);
    } else {
      return a < X(0) ? X(-a) : a;
    }
  }
};
struct Square {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "square";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a) const { return a * a; }
};
struct Sign {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "sign";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a) const {
    return a > X(0) ? X(1) : (a < X(0) ? X(-1) : a);  // 0 stays 0, NaN stays NaN
  }
};
// NaN-propagating elementwise min and max, as torch.minimum / torch.maximum.
struct Minimum {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "min";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b) const {
    if (math::isnan(a)) return a;
    return (b < a || math::isnan(b)) ? b : a;
  }
};
struct Maximum {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "max";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b) const {
    if (math::isnan(a)) return a;
    return (b > a || math::isnan(b)) ? b : a;
  }
};
/// min(max(x, lo), hi), NaN propagating, as torch.clamp.
struct Clamp {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "clamp";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X x, X lo, X hi) const {
    return Minimum{}(Maximum{}(x, lo), hi);
  }
};

// ---- floating ----
#define EMBER_FLOATING_FN(Type, fname, body)       \
  struct Type {                                    \
    static constexpr Kind kind = Kind::floating;   \
    static constexpr const char* name = fname;     \
    template <class X>                             \
    EMBER_HD EMBER_FORCEINLINE X operator()(X x) const { body }      \
  };

EMBER_FLOATING_FN(Exp, "exp", return math::exp(x);)
EMBER_FLOATING_FN(Exp2, "exp2", return math::exp2(x);)
EMBER_FLOATING_FN(Log, "log", return math::log(x);)
EMBER_FLOATING_FN(Log2, "log2", return math::log2(x);)
EMBER_FLOATING_FN(Log1p, "log1p", return math::log1p(x);)
EMBER_FLOATING_FN(Expm1, "expm1", return math::expm1(x);)
EMBER_FLOATING_FN(Sqrt, "sqrt", return math::sqrt(x);)
EMBER_FLOATING_FN(Rsqrt, "rsqrt", return math::rsqrt(x);)
EMBER_FLOATING_FN(Sin, "sin", return math::sin(x);)
EMBER_FLOATING_FN(Cos, "cos", return math::cos(x);)
EMBER_FLOATING_FN(Tan, "tan", return math::tan(x);)
EMBER_FLOATING_FN(Tanh, "tanh", return math::tanh(x);)
EMBER_FLOATING_FN(Erf, "erf", return math::erf(x);)
EMBER_FLOATING_FN(Floor, "floor", return math::floor(x);)
EMBER_FLOATING_FN(Ceil, "ceil", return math::ceil(x);)
EMBER_FLOATING_FN(Round, "round", return math::round_even(x);)
EMBER_FLOATING_FN(Reciprocal, "reciprocal", return X(1) / x;)
// Stable on both tails: never exp of a large positive number.
EMBER_FLOATING_FN(Sigmoid, "sigmoid", {
  if (x >= X(0)) return X(1) / (X(1) + math::exp(-x));
  const X e = math::exp(x);
  return e / (X(1) + e);
})
EMBER_FLOATING_FN(Relu, "relu", return x < X(0) ? X(0) : x;)  // NaN passes through
EMBER_FLOATING_FN(Silu, "silu", return x * Sigmoid{}(x);)
#undef EMBER_FLOATING_FN

/// GELU: 0.5 x (1 + erf(x / sqrt 2)) exactly (BERT's), or with `tanh_form` GPT-2's
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct Gelu {
  static constexpr Kind kind = Kind::floating;
  static constexpr const char* name = "gelu";
  bool tanh_form = false;
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X x) const {
    if (tanh_form) {
      const X inner = X(0.79788456080286535588) * (x + X(0.044715) * x * x * x);
      return X(0.5) * x * (X(1) + math::tanh(inner));
    }
    return X(0.5) * x * (X(1) + math::erf(x * X(0.70710678118654752440)));
  }
};
struct LeakyRelu {
  static constexpr Kind kind = Kind::floating;
  static constexpr const char* name = "leaky_relu";
  double slope = 0.01;
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X x) const { return x < X(0) ? x * X(slope) : x; }
};
/// log(1 + exp(beta x)) / beta, linear above `threshold` as torch.nn.functional.softplus.
struct Softplus {
  static constexpr Kind kind = Kind::floating;
  static constexpr const char* name = "softplus";
  double beta = 1.0;
  double threshold = 20.0;
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X x) const {
    const X bx = x * X(beta);
    return bx > X(threshold) ? x : math::log1p(math::exp(bx)) / X(beta);
  }
};
struct Pow {
  static constexpr Kind kind = Kind::floating;
  static constexpr const char* name = "pow";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X x, X y) const { return math::pow(x, y); }
};

// ---- predicates ----
#define EMBER_PREDICATE_FN(Type, fname, op)          \
  struct Type {                                      \
    static constexpr Kind kind = Kind::predicate;    \
    static constexpr const char* name = fname;       \
    template <class X>                               \
    EMBER_HD EMBER_FORCEINLINE bool operator()(X a, X b) const { return a op b; } \
  };
EMBER_PREDICATE_FN(Equal, "eq", ==)
EMBER_PREDICATE_FN(NotEqual, "ne", !=)
EMBER_PREDICATE_FN(Less, "lt", <)
EMBER_PREDICATE_FN(LessEqual, "le", <=)
EMBER_PREDICATE_FN(Greater, "gt", >)
EMBER_PREDICATE_FN(GreaterEqual, "ge", >=)
#undef EMBER_PREDICATE_FN

struct LogicalAnd {
  static constexpr Kind kind = Kind::predicate;
  static constexpr const char* name = "logical_and";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE bool operator()(X a, X b) const { return a != X(0) && b != X(0); }
};
struct LogicalOr {
  static constexpr Kind kind = Kind::predicate;
  static constexpr const char* name = "logical_or";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE bool operator()(X a, X b) const { return a != X(0) || b != X(0); }
};
struct LogicalNot {
  static constexpr Kind kind = Kind::predicate;
  static constexpr const char* name = "logical_not";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE bool operator()(X a) const { return a == X(0); }
};
struct IsNan {
  static constexpr Kind kind = Kind::predicate;
  static constexpr const char* name = "isnan";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE bool operator()(X a) const { return math::isnan(a); }
};

// ---- select ----
struct Where {
  static constexpr Kind kind = Kind::select;
  static constexpr const char* name = "where";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(bool c, X a, X b) const { return c ? a : b; }
};

}  // namespace ember::fn
