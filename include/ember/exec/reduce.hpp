// Reductions of any elementwise expression over a set of axes, with the producer fused: the
// expression is evaluated inside the reduction loop, so each input is read once and nothing
// but the result is allocated. Spellings: sum(e), sum(e, {1}, keepdim), and likewise mean,
// max, min, prod, var, norm, logsumexp; argmax/argmin over one axis or the flattened input.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <vector>

#include "../core/concepts.hpp"
#include "../expr/leaves.hpp"
#include "assign.hpp"
#include "launch.hpp"
#include "reduce_layout.hpp"
#include "reducers.hpp"
#if defined(EMBER_OPENMP)
#include <omp.h>
#endif
#if defined(EMBER_CUDA_KERNELS)
#include "reduce_cuda.cuh"
#endif

namespace ember {

namespace exec {

namespace cpu {

/// Folds `plan` by `red` over layout L into `out`: one pass, counted as one launch. Never inlined,
/// and not compiled by ember::kernels' nvcc units (cpu_executor.hpp says why).
template <class R, class Red, class Plan>
EMBER_NOINLINE void run_reduce(const Red& red, const Plan& plan, const ReduceLayout& L, R* out);

/// Outputs per task on the column path, and reduced rows per task: about kColumnTaskElements
/// elements, between kColumnMinChunk and kColumnChunk rows (a function of the shape, not of the
/// thread count, so the sums' order and the result are the same on any number of threads). A
/// layer norm's weight gradient over 1,024 rows of 128 is eight tasks; with 2,048 rows a task, as
/// before, it was one, and one thread summed it while the others waited.
inline constexpr std::int64_t kColumnBlock = 256;
inline constexpr std::int64_t kColumnChunk = 2048;
inline constexpr std::int64_t kColumnMinChunk = 128;
inline constexpr std::int64_t kColumnTaskElements = std::int64_t{1} << 14;

/// Reduced rows per column task, for a block of `width` outputs.
inline std::int64_t column_chunk_rows(std::int64_t width) {
  return std::clamp(kColumnTaskElements / std::max<std::int64_t>(width, 1), kColumnMinChunk,
                    kColumnChunk);
}

}  // namespace cpu

/// Which axes of `shape` a reduction over `axes` (all when empty) folds, and the result's shape.
struct ReducedAxes {
  std::vector<bool> is_reduced;
  Shape out_shape;
};

/// The axes checked (each once, in range) and the result's shape; an empty range is refused
/// unless `empty_ok` (the reducer has an identity). Not a template: shared by every reduction.
inline ReducedAxes reduced_axes(const Shape& shape, const char* name, const Dims& axes,
                                bool keepdim, bool empty_ok) {
  const int rank = shape.rank();
  std::vector<bool> is_reduced(static_cast<std::size_t>(rank), axes.rank() == 0);
  for (int i = 0; i < axes.rank(); ++i) {
    const int d = normalize_axis(axes[i], rank, name);
    if (rank == 0) continue;  // a scalar has nothing to reduce
    EMBER_CHECK(!is_reduced[static_cast<std::size_t>(d)], "ember: ", name, ": axis ", d,
                " appears twice in ", axes.str());
    is_reduced[static_cast<std::size_t>(d)] = true;
  }
  Shape out_shape;
  std::int64_t reduced_count = 1;
  for (int d = 0; d < rank; ++d) {
    if (is_reduced[static_cast<std::size_t>(d)]) {
      reduced_count *= shape[d];
      if (keepdim) out_shape.push_back(1);
    } else {
      out_shape.push_back(shape[d]);
    }
  }
  if (!empty_ok && reduced_count == 0 && out_shape.numel() != 0) {
    fail("ember: ", name, ": cannot reduce over an empty range (shape ", shape.str(), ", axes ",
         axes.rank() ? axes.str() : std::string("all"), "); the result has no identity");
  }
  return {std::move(is_reduced), std::move(out_shape)};
}

inline namespace EMBER_UNIT_KIND {

/// A reduction's work for launch(): `plan` folded by `red` over layout L into `out`.
template <class R, class Red, class Plan>
struct ReducePass {
  const Red& red;
  const Plan& plan;
  const ReduceLayout& layout;
  R* out;

  void on_host() const { cpu::run_reduce(red, plan, layout, out); }
#if defined(EMBER_CUDA_KERNELS)
  void on_cuda(int device) const { gpu::run_reduce(red, plan, layout, out, device); }
#endif
};

/// Reduces expression `e` over `axes` (all axes when empty) into a new tensor of type R.
template <Storable R, class Red, class E>
Tensor<R> reduce_expression(const E& e, const Red& red, const char* name, const Dims& axes,
                            bool keepdim, bool empty_ok) {
  const Shape& shape = e.shape();
  const auto [is_reduced, out_shape] = reduced_axes(shape, name, axes, keepdim, empty_ok);

  // The operands as a launch sees them (launch.hpp); the result goes on their device.
  LaunchSpace space(shape, expr::detail::device_of(e).value_or(Device::cpu()));
  space.add_leaves(expr::leaves_of(e), name);
  const Device device = space.device();
  Tensor<R> out = empty<R>(out_shape, device);
  if (out.numel() == 0) return out;

  const ReduceLayout L = make_reduce_layout(shape, is_reduced, space.arrays());
  expr::PlanBuilder b(L.ndim(), L.arrays);
  const auto plan = e.plan(b);
  launch(ReducePass<R, Red, decltype(plan)>{red, plan, L, out.data()}, device);
  return out;
}

}  // namespace EMBER_UNIT_KIND
}  // namespace exec

namespace detail {
// Sums and products of integers accumulate in int64, as PyTorch does.
template <class V>
using sum_acc_t = std::conditional_t<FloatingElement<V>, acc_t<V>, std::int64_t>;
template <class V>
using sum_result_t = std::conditional_t<FloatingElement<V>, V, std::int64_t>;

template <class E>
constexpr void require_floating(const char* /*name*/) {
  static_assert(FloatingElement<typename E::value_type>,
                "ember: mean, var, norm and logsumexp are defined for floating-point expressions "
                "only; convert first, e.g. ember::mean(ember::cast<float>(x))");
}
}  // namespace detail

}  // namespace ember

namespace ember::inline EMBER_UNIT_KIND {
#define EMBER_REDUCTION(fname, ResultT, AccT, ReducerT, empty_ok, check)                      \
  template <ArrayOperand X>                                                                   \
  auto fname(const X& x, const Dims& axes, bool keepdim = false) {                            \
    auto e = expr::as_node(x);                                                                \
    using V = typename decltype(e)::value_type;                                               \
    check;                                                                                    \
    return exec::reduce_expression<ResultT>(e, reduce::Bound<ReducerT<AccT>>{}, #fname, axes, \
                                            keepdim, empty_ok);                               \
  }                                                                                           \
  template <ArrayOperand X>                                                                   \
  auto fname(const X& x) {                                                                    \
    return fname<X>(x, Dims{}, false);                                                        \
  }

EMBER_REDUCTION(sum, detail::sum_result_t<V>, detail::sum_acc_t<V>, reduce::Sum, true, (void)0)
EMBER_REDUCTION(prod, detail::sum_result_t<V>, detail::sum_acc_t<V>, reduce::Prod, true, (void)0)
EMBER_REDUCTION(mean, V, acc_t<V>, reduce::Mean, true,
                detail::require_floating<decltype(e)>("mean"))
EMBER_REDUCTION(max, V, acc_t<V>, reduce::Max, false, (void)0)
EMBER_REDUCTION(min, V, acc_t<V>, reduce::Min, false, (void)0)
EMBER_REDUCTION(logsumexp, V, acc_t<V>, reduce::LogSumExp, true,
                detail::require_floating<decltype(e)>("logsumexp"))
#undef EMBER_REDUCTION

/// Variance over `axes` (all when empty), one pass (Welford). correction 1 is unbiased.
template <ArrayOperand X>
auto var(const X& x, const Dims& axes, bool keepdim = false, double correction = 1.0) {
  auto e = expr::as_node(x);
  using V = typename decltype(e)::value_type;
  detail::require_floating<decltype(e)>("var");
  reduce::Var<acc_t<V>> r;
  r.correction = static_cast<acc_t<V>>(correction);
  return exec::reduce_expression<V>(e, reduce::Bound<reduce::Var<acc_t<V>>>{r}, "var", axes,
                                    keepdim, true);
}
template <ArrayOperand X>
auto var(const X& x) {
  return var<X>(x, Dims{}, false, 1.0);
}

/// p-norm over `axes` (all when empty); p = 2 by default, p = infinity for max |x|.
template <ArrayOperand X>
auto norm(const X& x, const Dims& axes, bool keepdim = false, double p = 2.0) {
  auto e = expr::as_node(x);
  using V = typename decltype(e)::value_type;
  detail::require_floating<decltype(e)>("norm");
  EMBER_CHECK(p > 0, "ember: norm: p must be positive, got ", p);
  reduce::Norm<acc_t<V>> r;
  r.p = static_cast<acc_t<V>>(p);
  return exec::reduce_expression<V>(e, reduce::Bound<reduce::Norm<acc_t<V>>>{r}, "norm", axes,
                                    keepdim, true);
}
/// The p-norm of all of x. p is a template parameter so that a braced list cannot become it:
/// norm(x, {1}) means the 2-norm over dim 1 (the overload above), not p = 1.
template <ArrayOperand X, class P>
requires std::integral<P> || std::floating_point<P>
auto norm(const X& x, P p) { return norm<X>(x, Dims{}, false, static_cast<double>(p)); }
template <ArrayOperand X>
auto norm(const X& x) {
  return norm<X>(x, Dims{}, false, 2.0);
}

/// x summed down to `shape`, from which x's shape broadcasts: the adjoint of broadcasting.
template <Storable T>
Tensor<T> sum_to(const Tensor<T>& x, const Shape& shape) {
  EMBER_CHECK(broadcastable_to(shape, x.shape()), "ember: sum_to: shape ", shape.str(),
              " does not broadcast to ", x.shape().str());
  const Dims axes = broadcast_axes(shape, x.shape());
  if (axes.rank() == 0) return x.reshape(shape);
  using C = detail::sum_acc_t<T>;
  return exec::reduce_expression<T>(expr::Leaf<T>(x), reduce::Bound<reduce::Sum<C>>{}, "sum_to",
                                    axes, true, true)
      .reshape(shape);
}

#define EMBER_ARG_REDUCTION(fname, Largest)                                                    \
  /** Index of the best element along `axis` (first on ties). */                               \
  template <ArrayOperand X>                                                                    \
  Tensor<std::int64_t> fname(const X& x, int axis, bool keepdim = false) {                     \
    auto e = expr::as_node(x);                                                                 \
    using V = typename decltype(e)::value_type;                                                \
    return exec::reduce_expression<std::int64_t>(                                              \
        e, reduce::Bound<reduce::ArgBest<acc_t<V>, Largest>>{}, #fname, Dims{axis}, keepdim,   \
        false);                                                                                \
  }                                                                                            \
  /** Index of the best element of the flattened input. */                                     \
  template <ArrayOperand X>                                                                    \
  Tensor<std::int64_t> fname(const X& x) {                                                     \
    auto e = expr::as_node(x);                                                                 \
    using V = typename decltype(e)::value_type;                                                \
    return exec::reduce_expression<std::int64_t>(                                              \
        e, reduce::Bound<reduce::ArgBest<acc_t<V>, Largest>>{}, #fname, Dims{}, false, false); \
  }
EMBER_ARG_REDUCTION(argmax, true)
EMBER_ARG_REDUCTION(argmin, false)
#undef EMBER_ARG_REDUCTION
}  // namespace ember::inline EMBER_UNIT_KIND

namespace ember {

namespace expr {
// Reductions found by argument-dependent lookup on expressions, like the elementwise functions.
using ember::argmax;
using ember::argmin;
using ember::logsumexp;
using ember::max;
using ember::mean;
using ember::min;
using ember::norm;
using ember::prod;
using ember::sum;
using ember::var;
}  // namespace expr

}  // namespace ember

// The definitions of the loops declared above: in every unit but ember::kernels' nvcc units,
// which link to the host units' copies (EMBER_CPU_LOOPS_ELSEWHERE: cpu_executor.hpp says why).
#if !defined(EMBER_CPU_LOOPS_ELSEWHERE)
#include "reduce_loops.hpp"
#endif
