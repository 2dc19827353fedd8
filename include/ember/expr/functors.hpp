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
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b) const {
    return a + b;
  }
  template <int I, class X>
  EMBER_HD EMBER_FORCEINLINE X partial(X, X, X) const {
    return X(1);
  }
};
struct Sub {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "sub";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b) const {
    return a - b;
  }
  template <int I, class X>
  EMBER_HD EMBER_FORCEINLINE X partial(X, X, X) const {
    return I == 0 ? X(1) : X(-1);
  }
};
struct Mul {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "mul";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b) const {
    return a * b;
  }
  template <int I, class X>
  EMBER_HD EMBER_FORCEINLINE X partial(X a, X b, X) const {
    return I == 0 ? b : a;
  }
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
  template <int I, class X>
  EMBER_HD EMBER_FORCEINLINE X partial(X, X b, X y) const {
    return I == 0 ? X(1) / b : -y / b;
  }
};
struct Neg {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "neg";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a) const {
    return X(-a);
  }
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X derivative(X, X) const {
    return X(-1);
  }
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
  // d|x|/dx = sign(x), 0 at 0 (as PyTorch).
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X derivative(X x, X) const {
    return math::select(x > X(0), X(1), math::select(x < X(0), X(-1), X(0)));
  }
};
struct Square {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "square";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a) const {
    return a * a;
  }
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X derivative(X x, X) const {
    return X(2) * x;
  }
};
struct Sign {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "sign";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a) const {
    return math::select(a > X(0), X(1), math::select(a < X(0), X(-1), a));  // 0, NaN stay
  }
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X derivative(X, X) const {
    return X(0);
  }
};
// NaN-propagating elementwise min and max, as torch.minimum / torch.maximum.
struct Minimum {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "min";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b) const {
    return math::select(!math::isnan(a) && (b < a || math::isnan(b)), b, a);
  }
  // Ties split the gradient evenly between the operands; an operand gets none where the other is
  // smaller, so with a NaN both get all of it (torch.minimum's rule).
  template <int I, class X>
  EMBER_HD EMBER_FORCEINLINE X partial(X a, X b, X) const {
    const auto other_smaller = I == 0 ? b < a : a < b;
    return math::select(a == b, X(0.5), math::select(other_smaller, X(0), X(1)));
  }
};
struct Maximum {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "max";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b) const {
    return math::select(!math::isnan(a) && (b > a || math::isnan(b)), b, a);
  }
  // Ties split the gradient evenly between the operands; an operand gets none where the other is
  // larger, so with a NaN both get all of it (torch.maximum's rule).
  template <int I, class X>
  EMBER_HD EMBER_FORCEINLINE X partial(X a, X b, X) const {
    const auto other_larger = I == 0 ? b > a : a > b;
    return math::select(a == b, X(0.5), math::select(other_larger, X(0), X(1)));
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
  // x gets the gradient where lo <= x <= hi (boundaries included, as torch.clamp); lo where
  // x < lo; hi where the result is hi and x > hi (hi wins when lo > hi).
  template <int I, class X>
  EMBER_HD EMBER_FORCEINLINE X partial(X x, X lo, X hi, X) const {
    const bool above = x > hi, below = x < lo && !(lo > hi);
    const bool hi_wins = above || lo > hi;
    if constexpr (I == 0)
      return math::select(!above && !below && !(lo > hi), X(1), X(0));
    else if constexpr (I == 1)
      return math::select(below && !hi_wins, X(1), X(0));
    else
      return math::select(hi_wins, X(1), X(0));
  }
};

// ---- floating ----
// `dbody` is dy/dx given the input x and the output y (reverse-mode autodiff).
#define EMBER_FLOATING_FN(Type, fname, body, dbody)                                             \
  struct Type {                                                                                 \
    static constexpr Kind kind = Kind::floating;                                                \
    static constexpr const char* name = fname;                                                  \
    template <class X>                                                                          \
    EMBER_HD EMBER_FORCEINLINE X operator()(X x) const {                                        \
      body                                                                                      \
    }                                                                                           \
    template <class X>                                                                          \
    EMBER_HD EMBER_FORCEINLINE X derivative([[maybe_unused]] X x, [[maybe_unused]] X y) const { \
      dbody                                                                                     \
    }                                                                                           \
  };

EMBER_FLOATING_FN(Exp, "exp", return math::exp(x);, return y;)
EMBER_FLOATING_FN(Exp2, "exp2", return math::exp2(x);, return y * X(0.69314718055994530942);)
EMBER_FLOATING_FN(Log, "log", return math::log(x);, return X(1) / x;)
EMBER_FLOATING_FN(Log2, "log2", return math::log2(x);, return X(1.44269504088896340736) / x;)
EMBER_FLOATING_FN(Log1p, "log1p", return math::log1p(x);, return X(1) / (X(1) + x);)
EMBER_FLOATING_FN(Expm1, "expm1", return math::expm1(x);, return y + X(1);)
EMBER_FLOATING_FN(Sqrt, "sqrt", return math::sqrt(x);, return X(0.5) / y;)
EMBER_FLOATING_FN(Rsqrt, "rsqrt", return math::rsqrt(x);, return X(-0.5) * y * y * y;)
EMBER_FLOATING_FN(Sin, "sin", return math::sin(x);, return math::cos(x);)
EMBER_FLOATING_FN(Cos, "cos", return math::cos(x);, return -math::sin(x);)
EMBER_FLOATING_FN(Tan, "tan", return math::tan(x);, return X(1) + y * y;)
EMBER_FLOATING_FN(Tanh, "tanh", return math::tanh(x);, return X(1) - y * y;)
EMBER_FLOATING_FN(Erf, "erf", return math::erf(x);
                  , return X(1.12837916709551257390) * math::exp(-x * x);)
EMBER_FLOATING_FN(Floor, "floor", return math::floor(x);, return X(0);)
EMBER_FLOATING_FN(Ceil, "ceil", return math::ceil(x);, return X(0);)
EMBER_FLOATING_FN(Round, "round", return math::round_even(x);, return X(0);)
EMBER_FLOATING_FN(Reciprocal, "reciprocal", return X(1) / x;, return -y * y;)
// Stable on both tails: never exp of a large positive number. One exp and a select, no branch,
// so loops over it vectorise (forward and backward alike).
EMBER_FLOATING_FN(
    Sigmoid, "sigmoid",
    {
      const X e = math::exp(-math::fabs(x));  // exp(-x) for x >= 0, exp(x) below
      const X r = X(1) / (X(1) + e);
      return math::select(x >= X(0), r, e * r);
    },
    return y * (X(1) - y);)
EMBER_FLOATING_FN(Relu, "relu", return math::select(x < X(0), X(0), x);
                  , return math::select(x > X(0), X(1), X(0));)  // NaN passes through
EMBER_FLOATING_FN(Silu, "silu", return x * Sigmoid{}(x);, {
  const X s = Sigmoid{}(x);
  return s * (X(1) + x * (X(1) - s));
})
#undef EMBER_FLOATING_FN

/// GELU: 0.5 x (1 + erf(x / sqrt 2)) exactly (BERT's). Branch-free, so loops over it vectorise.
struct GeluErf {
  static constexpr Kind kind = Kind::floating;
  static constexpr const char* name = "gelu";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X x) const {
    return X(0.5) * x * (X(1) + math::erf(x * X(0.70710678118654752440)));
  }
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X derivative(X x, X) const {
    const X cdf = X(0.5) * (X(1) + math::erf(x * X(0.70710678118654752440)));
    return cdf + x * X(0.39894228040143267794) * math::exp(X(-0.5) * x * x);
  }
};
/// GPT-2's GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (cuBLASLt's GELU epilogue).
struct GeluTanh {
  static constexpr Kind kind = Kind::floating;
  static constexpr const char* name = "gelu_tanh";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X x) const {
    const X inner = X(0.79788456080286535588) * (x + X(0.044715) * x * x * x);
    return X(0.5) * x * (X(1) + math::tanh(inner));
  }
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X derivative(X x, X) const {
    const X k = X(0.79788456080286535588);
    const X t = math::tanh(k * (x + X(0.044715) * x * x * x));
    return X(0.5) * (X(1) + t) + X(0.5) * x * (X(1) - t * t) * k * (X(1) + X(3 * 0.044715) * x * x);
  }
};
/// GELU with the form chosen at run time (ember::gelu(x, GeluApproximation)); gelu(x) and
/// gelu_tanh(x) use the branch-free forms above.
struct Gelu {
  static constexpr Kind kind = Kind::floating;
  static constexpr const char* name = "gelu";
  bool tanh_form = false;
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X x) const {
    return tanh_form ? GeluTanh{}(x) : GeluErf{}(x);
  }
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X derivative(X x, X y) const {
    return tanh_form ? GeluTanh{}.derivative(x, y) : GeluErf{}.derivative(x, y);
  }
};
/// A unary functor's derivative as a function of its argument, F'(x): the backward passes of
/// hand-written rules (linear's GELU) use it as an elementwise function. Not differentiable
/// itself (it has no derivative of its own).
template <class F>
struct Derivative {
  static constexpr Kind kind = Kind::floating;
  static constexpr const char* name = "derivative";
  F f;
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X x) const {
    return f.derivative(x, f(x));
  }
};
struct LeakyRelu {
  static constexpr Kind kind = Kind::floating;
  static constexpr const char* name = "leaky_relu";
  double slope = 0.01;
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X x) const {
    return math::select(x < X(0), x * X(slope), x);
  }
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X derivative(X x, X) const {
    return math::select(x < X(0), X(slope), X(1));
  }
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
    return math::select(bx > X(threshold), x, math::log1p(math::exp(bx)) / X(beta));
  }
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X derivative(X x, X) const {
    const X bx = x * X(beta);
    return math::select(bx > X(threshold), X(1), Sigmoid{}(bx));
  }
};
struct Pow {
  static constexpr Kind kind = Kind::floating;
  static constexpr const char* name = "pow";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X x, X y) const {
    return math::pow(x, y);
  }
  // d/dx = y x^(y-1); d/dy = x^y log x (0 where x == 0, the limit for y > 0).
  template <int I, class X>
  EMBER_HD EMBER_FORCEINLINE X partial(X x, X e, X y) const {
    if constexpr (I == 0)
      return math::select(e == X(0), X(0), e * math::pow(x, e - X(1)));
    else
      return math::select(x == X(0), X(0), y * math::log(x));
  }
};

/// a + w (b - a), as torch.lerp: from the end nearer to w, so w = 0 gives a and w = 1 gives b
/// exactly.
struct Lerp {
  static constexpr Kind kind = Kind::arithmetic;
  static constexpr const char* name = "lerp";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(X a, X b, X w) const {
    const X d = b - a;
    return math::select(w < X(0.5), a + w * d, b - d * (X(1) - w));
  }
  template <int I, class X>
  EMBER_HD EMBER_FORCEINLINE X partial(X a, X b, X w, X) const {
    if constexpr (I == 0)
      return X(1) - w;
    else if constexpr (I == 1)
      return w;
    else
      return b - a;
  }
};

// ---- predicates ----
#define EMBER_PREDICATE_FN(Type, fname, op)                      \
  struct Type {                                                  \
    static constexpr Kind kind = Kind::predicate;                \
    static constexpr const char* name = fname;                   \
    template <class X>                                           \
    EMBER_HD EMBER_FORCEINLINE bool operator()(X a, X b) const { \
      return a op b;                                             \
    }                                                            \
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
  EMBER_HD EMBER_FORCEINLINE bool operator()(X a, X b) const {
    return a != X(0) && b != X(0);
  }
};
struct LogicalOr {
  static constexpr Kind kind = Kind::predicate;
  static constexpr const char* name = "logical_or";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE bool operator()(X a, X b) const {
    return a != X(0) || b != X(0);
  }
};
struct LogicalNot {
  static constexpr Kind kind = Kind::predicate;
  static constexpr const char* name = "logical_not";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE bool operator()(X a) const {
    return a == X(0);
  }
};
struct IsNan {
  static constexpr Kind kind = Kind::predicate;
  static constexpr const char* name = "isnan";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE bool operator()(X a) const {
    return math::isnan(a);
  }
};

// ---- select ----
struct Where {
  static constexpr Kind kind = Kind::select;
  static constexpr const char* name = "where";
  template <class X>
  EMBER_HD EMBER_FORCEINLINE X operator()(bool c, X a, X b) const {
    return math::select(c, a, b);
  }
  // The condition gets no gradient (I == 0 is never asked for).
  template <int I, class X>
  EMBER_HD EMBER_FORCEINLINE X partial(bool c, X, X, X) const {
    if constexpr (I == 1)
      return math::select(c, X(1), X(0));
    else
      return math::select(c, X(0), X(1));
  }
};

}  // namespace ember::fn
