// softmax and log_softmax along one axis, and their backward passes, on Tensors.
//
// Along the last axis of a contiguous tensor each is one launch each way, a row at a time
// (ops/rows/softmax_rows.hpp). Otherwise (and for CUDA rows over 32,768 elements):
// Forward is two launches on either device: one online logsumexp reduction (a single read of
// the input, rescaling the running sum as the maximum grows) and one elementwise pass.
//   softmax(x)     = exp(x - lse)              backward: dx = y (g - sum(g y))
//   log_softmax(x) = x - lse                   backward: dx = g - exp(y) sum(g)
// Each backward is one reduction and one elementwise pass. bf16/half compute in float.
#pragma once

#include "../../core/dtype.hpp"
#include "../../core/shape.hpp"
#include "../../exec/assign.hpp"
#include "../../exec/reduce.hpp"
#include "../../expr/operators.hpp"
#include "../../tensor/tensor.hpp"
#include "softmax_rows.hpp"

namespace ember::ops::inline EMBER_UNIT_KIND {

/// logsumexp of x over `axis`, kept (size 1), in the compute type.
template <FloatingElement T>
Tensor<acc_t<T>> kept_logsumexp(const Tensor<T>& x, int axis, const char* name) {
  EMBER_CHECK(x.rank() >= 1, "ember: ", name, ": needs rank 1 or more, got a scalar");
  using A = acc_t<T>;
  return exec::reduce_expression<A>(expr::Leaf<T>(x), reduce::Bound<reduce::LogSumExp<A>>{}, name,
                                    Dims{normalize_axis(axis, x.rank(), name)}, true, true);
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// exp(x) / sum(exp(x)) along `axis`.
template <FloatingElement T>
Tensor<T> softmax(const Tensor<T>& x, int axis) {
  if (x.rank() > 0 && ops::softmax_rows_apply(x, normalize_axis(axis, x.rank(), "softmax"))) {
    return ops::softmax_rows<T>(x, false);
  }
  const auto lse = ops::kept_logsumexp<T>(x, axis, "softmax");
  return Tensor<T>(cast<T>(exp(x - lse)));
}

/// x - log(sum(exp(x))) along `axis`.
template <FloatingElement T>
Tensor<T> log_softmax(const Tensor<T>& x, int axis) {
  if (x.rank() > 0 && ops::softmax_rows_apply(x, normalize_axis(axis, x.rank(), "log_softmax"))) {
    return ops::softmax_rows<T>(x, true);
  }
  const auto lse = ops::kept_logsumexp<T>(x, axis, "log_softmax");
  return Tensor<T>(cast<T>(x - lse));
}
}  // namespace ember::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// The gradient of softmax's input from its output y and the output's gradient g.
template <FloatingElement T>
Tensor<T> softmax_backward(const Tensor<T>& y, const Tensor<T>& g, int axis) {
  using A = acc_t<T>;
  if (y.rank() > 0 && softmax_rows_apply(y, normalize_axis(axis, y.rank(), "softmax"))) {
    return softmax_rows_backward<T>(y, g, false);
  }
  const Tensor<A> dot =
      exec::reduce_expression<A>(g * y, reduce::Bound<reduce::Sum<A>>{}, "softmax",
                                 Dims{normalize_axis(axis, y.rank(), "softmax")}, true, true);
  return Tensor<T>(cast<T>(y * (g - dot)));
}
/// The gradient of log_softmax's input from its output y and the output's gradient g.
template <FloatingElement T>
Tensor<T> log_softmax_backward(const Tensor<T>& y, const Tensor<T>& g, int axis) {
  using A = acc_t<T>;
  if (y.rank() > 0 && softmax_rows_apply(y, normalize_axis(axis, y.rank(), "log_softmax"))) {
    return softmax_rows_backward<T>(y, g, true);
  }
  const Tensor<A> total =
      exec::reduce_expression<A>(expr::Leaf<T>(g), reduce::Bound<reduce::Sum<A>>{}, "log_softmax",
                                 Dims{normalize_axis(axis, y.rank(), "log_softmax")}, true, true);
  return Tensor<T>(cast<T>(g - exp(y) * total));
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND
