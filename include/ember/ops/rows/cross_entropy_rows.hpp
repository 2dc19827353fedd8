// cross_entropy of [N, C] logits one row at a time (exec::for_each_row: a thread per row on the
// CPU, a warp per row on CUDA): the forward is one launch (the row's maximum, then its sum of
// exponentials and, for label smoothing, its plain sum in the same sweep), the backward one pass
// (softmax minus the smoothed target, scaled), where the expression path runs two reductions
// forward. The formulas are those at the top of losses.hpp; targets are checked by the caller.
#pragma once

#include <cstdint>

#include "../../core/dtype.hpp"
#include "../../exec/for_each_row.hpp"
#include "../../expr/math.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "softmax_rows.hpp"

namespace ember::ops::inline EMBER_UNIT_KIND {

/// Whether cross_entropy of these logits runs as rows: [N, C], contiguous, with elements (and
/// C within a warp's limit on CUDA).
template <FloatingElement T>
bool cross_entropy_rows_apply(const Tensor<T>& logits) {
  return logits.rank() == 2 && softmax_rows_apply(logits, 1);
}

template <FloatingElement T>
struct CrossEntropyRows {
  using A = acc_t<T>;
  const T* x;
  const std::int64_t* targets;
  A* loss;  // [N]: 0 where the target is ignored
  A* lse;   // [N]
  std::int64_t cols;
  std::int64_t ignore_index;
  A on, off;  // 1 - e and e / C

  template <class Across>
  EMBER_HD void row(std::int64_t r, int lane, int lanes, Across across) const {
    const T* xr = x + r * cols;
    A total = 0;
    const A l = row_logsumexp<A>(xr, cols, lane, lanes, across, &total);
    if (lane == 0) {
      const std::int64_t t = targets[r];
      lse[r] = l;
      loss[r] = t == ignore_index ? A(0) : l - (on * to_acc(xr[t]) + off * total);
    }
  }
};

template <FloatingElement T>
struct CrossEntropyBackwardRows {
  using A = acc_t<T>;
  const T* x;
  const std::int64_t* targets;
  const A* lse;
  const T* g;  // the loss's gradient: one value (g_stride 0) or one per row
  std::int64_t g_stride;
  T* dx;
  std::int64_t cols;
  std::int64_t ignore_index;
  A on, off, scale;

  template <class Across>
  EMBER_HD void row(std::int64_t r, int lane, int lanes, Across) const {
    const std::int64_t base = r * cols, t = targets[r];
    const bool ignored = t == ignore_index;
    const A gr = ignored ? A(0) : to_acc(g[r * g_stride]) * scale, l = lse[r];
    exec::for_lane_elements(cols, lane, lanes, [&](std::int64_t j) {
      dx[base + j] = to_storage<T>(gr * (math::exp(to_acc(x[base + j]) - l) - off));
    });
    // The target's own term, once, by the lane that owns it (after its own write above).
    if (!ignored && exec::lane_owns(t, lane, lanes)) {
      dx[base + t] = to_storage<T>(gr * (math::exp(to_acc(x[base + t]) - l) - off - on));
    }
  }
};

/// Per-row losses [N] (0 where ignored) and logsumexps [N, 1], in the compute type.
template <FloatingElement T>
std::pair<Tensor<acc_t<T>>, Tensor<acc_t<T>>> cross_entropy_rows(
    const Tensor<T>& logits, const Tensor<std::int64_t>& targets, std::int64_t ignore_index,
    double label_smoothing) {
  using A = acc_t<T>;
  const std::int64_t N = logits.size(0), C = logits.size(1);
  const Tensor<std::int64_t> t = targets.contiguous();
  Tensor<A> loss = empty<A>(Shape{N}, logits.device()),
            lse = empty<A>(Shape{N, 1}, logits.device());
  const CrossEntropyRows<T> f{logits.data(),
                              t.data(),
                              loss.data(),
                              lse.data(),
                              C,
                              ignore_index,
                              A(1.0 - label_smoothing),
                              A(label_smoothing / double(C))};
  exec::for_each_row<CrossEntropyRows<T>>(f, N, C, logits.device());
  return {loss, lse};
}

/// dlogits from the loss's gradient g (one value, or [N] for reduction none), already divided
/// by `scale`'s reciprocal for a mean.
template <FloatingElement T>
Tensor<T> cross_entropy_rows_backward(const Tensor<T>& logits, const Tensor<std::int64_t>& targets,
                                      const Tensor<acc_t<T>>& lse, const Tensor<T>& g,
                                      std::int64_t ignore_index, double label_smoothing,
                                      double scale) {
  using A = acc_t<T>;
  const std::int64_t N = logits.size(0), C = logits.size(1);
  const Tensor<std::int64_t> t = targets.contiguous();
  const Tensor<T> gc = g.contiguous();
  Tensor<T> dx = empty<T>(logits.shape(), logits.device());
  const CrossEntropyBackwardRows<T> f{logits.data(),
                                      t.data(),
                                      lse.data(),
                                      gc.data(),
                                      gc.numel() == 1 ? 0 : 1,
                                      dx.data(),
                                      C,
                                      ignore_index,
                                      A(1.0 - label_smoothing),
                                      A(label_smoothing / double(C)),
                                      A(scale)};
  exec::for_each_row<CrossEntropyBackwardRows<T>>(f, N, C, logits.device());
  return dx;
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND
