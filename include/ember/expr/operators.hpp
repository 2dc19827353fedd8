// The user-facing spellings of elementwise expressions: operators + - * / and comparisons,
// the function library (exp, gelu, where, ...), and cast<U>. Each builds a lazy node; nothing
// is computed until the expression is assigned to a tensor.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../core/concepts.hpp"
#include "../tensor/tensor.hpp"
#include "leaf.hpp"
#include "map.hpp"

namespace ember {

namespace expr {
/// The expression node for an operand: tensors become leaves, numbers scalar nodes.
template <Operand X>
auto as_node(const X& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (TensorType<D>) {
    return Leaf<typename D::value_type>(x);
  } else if constexpr (Expression<D>) {
    return x;
  } else if constexpr (std::is_same_v<D, bool>) {
    return ScalarNode<bool>(x);
  } else if constexpr (std::is_integral_v<D>) {
    return ScalarNode<std::int64_t>(static_cast<std::int64_t>(x));
  } else {
    return ScalarNode<double>(static_cast<double>(x));
  }
}
template <class X>
using node_t = decltype(as_node(std::declval<const X&>()));

template <class F, Operand... X>
auto make_map(F f, const X&... x) {
  return Map<F, node_t<X>...>(f, as_node(x)...);
}
}  // namespace expr

/// At least one operand is a tensor or an expression (two plain numbers stay C++'s business).
template <class A, class B>
concept BinaryOperands = Operand<A> && Operand<B> &&(ArrayOperand<A> || ArrayOperand<B>);

#define EMBER_BINARY_OPERATOR(op, F) \
  template <class A, class B>        \
  requires BinaryOperands<A, B>      \
  auto operator op(const A& a, const B& b) { return expr::make_map(fn::F{}, a, b); }
EMBER_BINARY_OPERATOR(+, Add)
EMBER_BINARY_OPERATOR(-, Sub)
EMBER_BINARY_OPERATOR(*, Mul)
EMBER_BINARY_OPERATOR(/, Div)
EMBER_BINARY_OPERATOR(==, Equal)
EMBER_BINARY_OPERATOR(!=, NotEqual)
EMBER_BINARY_OPERATOR(<, Less)
EMBER_BINARY_OPERATOR(<=, LessEqual)
EMBER_BINARY_OPERATOR(>, Greater)
EMBER_BINARY_OPERATOR(>=, GreaterEqual)
#undef EMBER_BINARY_OPERATOR

template <ArrayOperand A>
auto operator-(const A& a) {
  return expr::make_map(fn::Neg{}, a);
}

#define EMBER_UNARY_FUNCTION(name, F)  \
  template <ArrayOperand A>            \
  auto name(const A& a) {              \
    return expr::make_map(fn::F{}, a); \
  }
EMBER_UNARY_FUNCTION(neg, Neg)
EMBER_UNARY_FUNCTION(abs, Abs)
EMBER_UNARY_FUNCTION(square, Square)
EMBER_UNARY_FUNCTION(sign, Sign)
EMBER_UNARY_FUNCTION(exp, Exp)
EMBER_UNARY_FUNCTION(exp2, Exp2)
EMBER_UNARY_FUNCTION(log, Log)
EMBER_UNARY_FUNCTION(log2, Log2)
EMBER_UNARY_FUNCTION(log1p, Log1p)
EMBER_UNARY_FUNCTION(expm1, Expm1)
EMBER_UNARY_FUNCTION(sqrt, Sqrt)
EMBER_UNARY_FUNCTION(rsqrt, Rsqrt)
EMBER_UNARY_FUNCTION(sin, Sin)
EMBER_UNARY_FUNCTION(cos, Cos)
EMBER_UNARY_FUNCTION(tan, Tan)
EMBER_UNARY_FUNCTION(tanh, Tanh)
EMBER_UNARY_FUNCTION(erf, Erf)
EMBER_UNARY_FUNCTION(floor, Floor)
EMBER_UNARY_FUNCTION(ceil, Ceil)
EMBER_UNARY_FUNCTION(round, Round)
EMBER_UNARY_FUNCTION(reciprocal, Reciprocal)
EMBER_UNARY_FUNCTION(sigmoid, Sigmoid)
EMBER_UNARY_FUNCTION(relu, Relu)
EMBER_UNARY_FUNCTION(silu, Silu)
EMBER_UNARY_FUNCTION(logical_not, LogicalNot)
EMBER_UNARY_FUNCTION(isnan, IsNan)
#undef EMBER_UNARY_FUNCTION

/// Which formula gelu uses: the exact erf form (BERT) or the tanh approximation (GPT-2).
enum class GeluApproximation { none, tanh };

/// GELU, exact (erf) form: BERT's.
template <ArrayOperand A>
auto gelu(const A& a) {
  return expr::make_map(fn::GeluErf{}, a);
}
/// GELU with the form chosen at run time (a branch per element: prefer gelu or gelu_tanh).
template <ArrayOperand A>
auto gelu(const A& a, GeluApproximation approx) {
  return expr::make_map(fn::Gelu{approx == GeluApproximation::tanh}, a);
}
/// GELU, tanh approximation: GPT-2's, and cuBLASLt's GELU epilogue.
template <ArrayOperand A>
auto gelu_tanh(const A& a) {
  return expr::make_map(fn::GeluTanh{}, a);
}

template <ArrayOperand A>
auto leaky_relu(const A& a, double negative_slope = 0.01) {
  return expr::make_map(fn::LeakyRelu{negative_slope}, a);
}
template <ArrayOperand A>
auto softplus(const A& a, double beta = 1.0, double threshold = 20.0) {
  return expr::make_map(fn::Softplus{beta, threshold}, a);
}

template <class A, class B>
requires BinaryOperands<A, B>
auto pow(const A& a, const B& b) { return expr::make_map(fn::Pow{}, a, b); }
/// Elementwise minimum of two operands (NaN propagates). min(e) / min(e, axes) reduce.
template <class A, class B>
requires BinaryOperands<A, B>
auto min(const A& a, const B& b) { return expr::make_map(fn::Minimum{}, a, b); }
/// Elementwise maximum of two operands (NaN propagates). max(e) / max(e, axes) reduce.
template <class A, class B>
requires BinaryOperands<A, B>
auto max(const A& a, const B& b) { return expr::make_map(fn::Maximum{}, a, b); }
template <class A, class B>
requires BinaryOperands<A, B>
auto logical_and(const A& a, const B& b) { return expr::make_map(fn::LogicalAnd{}, a, b); }
template <class A, class B>
requires BinaryOperands<A, B>
auto logical_or(const A& a, const B& b) { return expr::make_map(fn::LogicalOr{}, a, b); }
/// x limited to [lo, hi]; lo and hi may be numbers or operands that broadcast with x.
template <ArrayOperand X, Operand L, Operand H>
auto clamp(const X& x, const L& lo, const H& hi) {
  return expr::make_map(fn::Clamp{}, x, lo, hi);
}
/// a + w (b - a) (torch.lerp); any of the three may be a number or an operand that broadcasts.
template <Operand A, Operand B, Operand W>
requires(ArrayOperand<A> || ArrayOperand<B> || ArrayOperand<W>) auto lerp(const A& a, const B& b,
                                                                          const W& w) {
  return expr::make_map(fn::Lerp{}, a, b, w);
}
/// a where cond is true, else b; cond is any operand (nonzero is true).
template <Operand C, Operand A, Operand B>
requires(ArrayOperand<C> || ArrayOperand<A> || ArrayOperand<B>) auto where(const C& cond,
                                                                           const A& a, const B& b) {
  return expr::make_map(fn::Where{}, cond, a, b);
}

/// The operand's values converted to U. Narrowing floating types round to nearest even;
/// floating to integer truncates toward zero.
template <Storable U, ArrayOperand A>
auto cast(const A& a) {
  using N = expr::node_t<A>;
  return expr::Cast<U, N>(expr::as_node(a));
}

namespace expr {
// Expression nodes live here; make the operators visible to argument-dependent lookup on them.
using ember::operator+;
using ember::operator-;
using ember::operator*;
using ember::operator/;
using ember::operator==;
using ember::operator!=;
using ember::operator<;
using ember::operator<=;
using ember::operator>;
using ember::operator>=;
// ...and the functions, so `tanh(a * b)` works unqualified, without `using namespace ember`.
using ember::abs;
using ember::cast;
using ember::ceil;
using ember::clamp;
using ember::cos;
using ember::erf;
using ember::exp;
using ember::exp2;
using ember::expm1;
using ember::floor;
using ember::gelu;
using ember::gelu_tanh;
using ember::isnan;
using ember::leaky_relu;
using ember::lerp;
using ember::log;
using ember::log1p;
using ember::log2;
using ember::logical_and;
using ember::logical_not;
using ember::logical_or;
using ember::max;
using ember::min;
using ember::neg;
using ember::pow;
using ember::reciprocal;
using ember::relu;
using ember::round;
using ember::rsqrt;
using ember::sigmoid;
using ember::sign;
using ember::silu;
using ember::sin;
using ember::softplus;
using ember::sqrt;
using ember::square;
using ember::tan;
using ember::tanh;
using ember::where;
}  // namespace expr

}  // namespace ember
