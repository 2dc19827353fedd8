// Reductions of expressions over Vars: sum, mean, max, min, prod, var, norm, logsumexp.
//
// Each computes its result as the Tensor reduction does (one launch, the producer fused) and
// records a FusedNode over the whole expression with the reduction's seed rule
// (seed_rules.hpp), so that the backward of, say, max(a * b, axes) is one launch that writes
// the gradients of a and b (plus the small reductions the rule needs). The signatures are those
// of the Tensor reductions (exec/reduce.hpp); VarOperand is more constrained than ArrayOperand,
// so these win for expressions that contain a Var.
#pragma once

#include <concepts>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include "../exec/reduce.hpp"
#include "fused_backward.hpp"
#include "grad_mode.hpp"
#include "seed_rules.hpp"
#include "var.hpp"

namespace ember {

/// An operand whose expression has a Var among its leaves.
template <class X>
concept VarOperand = ArrayOperand<X> && autograd::contains_var_v<expr::node_t<X>>;

namespace autograd {
// In the translation unit's executor namespace, like every evaluating part (core/config.hpp).
inline namespace EMBER_UNIT_KIND {

/// Wraps the reduction's result `r` of expression `e` as a Var and records its backward.
template <class E, Storable V, class MakeRule>
Var<V> record_reduction(const E& e, Tensor<V> r, const Dims& axes, const char* name,
                        MakeRule&& make_rule) {
  auto n = std::make_shared<VarNode<V>>();
  n->value = r;
  if (grad_enabled() && any_requires_grad(e)) {
    const Shape kept = kept_shape(e.shape(), axes, name);
    auto rule = make_rule(r.reshape(kept));
    n->record(std::make_shared<FusedNode<E, V, decltype(rule)>>(e, n.get(), std::move(rule), kept));
  }
  return Var<V>::from_node(std::move(n));
}

/// The reduction in the compute type, and that result rounded to V (the same tensor when V is
/// the compute type; one small extra launch for bf16 and half).
template <Storable V, class E, class Red>
std::pair<Tensor<V>, Tensor<acc_t<V>>> reduce_keeping_exact(const E& e, const Red& red,
                                                            const char* name, const Dims& axes,
                                                            bool keepdim) {
  using A = acc_t<V>;
  Tensor<A> exact = exec::reduce_expression<A>(e, red, name, axes, keepdim, true);
  if constexpr (std::is_same_v<V, A>) {
    return {exact, exact};
  } else {
    return {Tensor<V>(ember::cast<V>(exact)), exact};
  }
}

template <class E>
constexpr void require_floating_var() {
  static_assert(FloatingElement<typename E::value_type>,
                "ember: reductions of Vars need floating-point operands; reduce .value() (a "
                "Tensor, no gradient) for integer or bool expressions");
}

/// The number of elements of `shape` that each result element of a reduction over `axes` sees.
inline std::int64_t reduced_count(const Shape& shape, const Dims& axes, const char* name) {
  if (axes.rank() == 0) return shape.numel();
  if (shape.rank() == 0) return 1;
  std::int64_t n = 1;
  for (int i = 0; i < axes.rank(); ++i) n *= shape[normalize_axis(axes[i], shape.rank(), name)];
  return n;
}

}  // namespace EMBER_UNIT_KIND
}  // namespace autograd

}  // namespace ember

namespace ember::inline EMBER_UNIT_KIND {
#define EMBER_VAR_REDUCTION_OVERLOADS(fname) \
  template <VarOperand X>                    \
  auto fname(const X& x) {                   \
    return fname<X>(x, Dims{}, false);       \
  }

/// Sum over `axes` (all when empty) of an expression over Vars.
template <VarOperand X>
auto sum(const X& x, const Dims& axes, bool keepdim = false) {
  const auto e = expr::as_node(x);
  using V = typename decltype(e)::value_type;
  autograd::require_floating_var<decltype(e)>();
  using C = acc_t<V>;
  auto r =
      exec::reduce_expression<V>(e, reduce::Bound<reduce::Sum<C>>{}, "sum", axes, keepdim, true);
  return autograd::record_reduction(e, r, axes, "sum",
                                    [](const Tensor<V>&) { return autograd::ScaledRule{"sum"}; });
}
EMBER_VAR_REDUCTION_OVERLOADS(sum)

/// Mean over `axes` (all when empty) of an expression over Vars.
template <VarOperand X>
auto mean(const X& x, const Dims& axes, bool keepdim = false) {
  const auto e = expr::as_node(x);
  using V = typename decltype(e)::value_type;
  autograd::require_floating_var<decltype(e)>();
  using C = acc_t<V>;
  auto r =
      exec::reduce_expression<V>(e, reduce::Bound<reduce::Mean<C>>{}, "mean", axes, keepdim, true);
  const std::int64_t n = autograd::reduced_count(e.shape(), axes, "mean");
  return autograd::record_reduction(e, r, axes, "mean", [n](const Tensor<V>&) {
    return autograd::ScaledRule{"mean", n > 0 ? 1.0 / static_cast<double>(n) : 1.0};
  });
}
EMBER_VAR_REDUCTION_OVERLOADS(mean)

#define EMBER_VAR_EXTREMUM(fname, Reducer)                                                     \
  /** fname over `axes` of an expression over Vars; ties share the gradient evenly. */         \
  template <VarOperand X>                                                                      \
  auto fname(const X& x, const Dims& axes, bool keepdim = false) {                             \
    const auto e = expr::as_node(x);                                                           \
    using V = typename decltype(e)::value_type;                                                \
    autograd::require_floating_var<decltype(e)>();                                             \
    auto r = exec::reduce_expression<V>(e, reduce::Bound<reduce::Reducer<acc_t<V>>>{}, #fname, \
                                        axes, keepdim, false);                                 \
    return autograd::record_reduction(e, r, axes, #fname, [&](const Tensor<V>& kept) {         \
      return autograd::ExtremumRule<V>{#fname, kept, axes};                                    \
    });                                                                                        \
  }                                                                                            \
  EMBER_VAR_REDUCTION_OVERLOADS(fname)
EMBER_VAR_EXTREMUM(max, Max)
EMBER_VAR_EXTREMUM(min, Min)
#undef EMBER_VAR_EXTREMUM

/// Product over `axes` of an expression over Vars; exact with zeros in the slice.
template <VarOperand X>
auto prod(const X& x, const Dims& axes, bool keepdim = false) {
  const auto e = expr::as_node(x);
  using V = typename decltype(e)::value_type;
  autograd::require_floating_var<decltype(e)>();
  auto r = exec::reduce_expression<V>(e, reduce::Bound<reduce::Prod<acc_t<V>>>{}, "prod", axes,
                                      keepdim, true);
  return autograd::record_reduction(e, r, axes, "prod",
                                    [&](const Tensor<V>&) { return autograd::ProdRule<V>{axes}; });
}
EMBER_VAR_REDUCTION_OVERLOADS(prod)

/// log(sum(exp(x))) over `axes` of an expression over Vars.
template <VarOperand X>
auto logsumexp(const X& x, const Dims& axes, bool keepdim = false) {
  const auto e = expr::as_node(x);
  using V = typename decltype(e)::value_type;
  autograd::require_floating_var<decltype(e)>();
  const auto r = autograd::reduce_keeping_exact<V>(e, reduce::Bound<reduce::LogSumExp<acc_t<V>>>{},
                                                   "logsumexp", axes, keepdim);
  return autograd::record_reduction(e, r.first, axes, "logsumexp", [&](const Tensor<V>&) {
    const Shape kept = autograd::kept_shape(e.shape(), axes, "logsumexp");
    return autograd::LogSumExpRule<V>{r.second.reshape(kept)};
  });
}
EMBER_VAR_REDUCTION_OVERLOADS(logsumexp)
#undef EMBER_VAR_REDUCTION_OVERLOADS

/// Variance over `axes` of an expression over Vars (correction 1: unbiased).
template <VarOperand X>
auto var(const X& x, const Dims& axes, bool keepdim = false, double correction = 1.0) {
  const auto e = expr::as_node(x);
  using V = typename decltype(e)::value_type;
  autograd::require_floating_var<decltype(e)>();
  reduce::Var<acc_t<V>> red;
  red.correction = static_cast<acc_t<V>>(correction);
  auto r = exec::reduce_expression<V>(e, reduce::Bound<reduce::Var<acc_t<V>>>{red}, "var", axes,
                                      keepdim, true);
  const double n = static_cast<double>(autograd::reduced_count(e.shape(), axes, "var"));
  return autograd::record_reduction(e, r, axes, "var", [&](const Tensor<V>&) {
    return autograd::VarianceRule<V>{axes, 2.0 / (n - correction)};
  });
}
template <VarOperand X>
auto var(const X& x) {
  return var<X>(x, Dims{}, false, 1.0);
}

/// p-norm over `axes` of an expression over Vars (p = infinity: max |x|).
template <VarOperand X>
auto norm(const X& x, const Dims& axes, bool keepdim = false, double p = 2.0) {
  const auto e = expr::as_node(x);
  using V = typename decltype(e)::value_type;
  autograd::require_floating_var<decltype(e)>();
  EMBER_CHECK(p > 0, "ember: norm: p must be positive, got ", p);
  reduce::Norm<acc_t<V>> red;
  red.p = static_cast<acc_t<V>>(p);
  const auto r = autograd::reduce_keeping_exact<V>(e, reduce::Bound<reduce::Norm<acc_t<V>>>{red},
                                                   "norm", axes, keepdim);
  return autograd::record_reduction(e, r.first, axes, "norm", [&](const Tensor<V>&) {
    const Shape kept = autograd::kept_shape(e.shape(), axes, "norm");
    return autograd::NormRule<V>{r.second.reshape(kept), axes, p};
  });
}
/// The p-norm of all of x. p is a template parameter so that a braced list cannot become it:
/// norm(x, {1}) means the 2-norm over dim 1 (the overload above), not p = 1.
template <VarOperand X, class P>
requires std::integral<P> || std::floating_point<P>
auto norm(const X& x, P p) { return norm<X>(x, Dims{}, false, static_cast<double>(p)); }
template <VarOperand X>
auto norm(const X& x) {
  return norm<X>(x, Dims{}, false, 2.0);
}

}  // namespace ember::inline EMBER_UNIT_KIND
