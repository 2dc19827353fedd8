// softmax and log_softmax along the last axis one row at a time, forward and backward, through
// exec::for_each_row (a thread per row on the CPU, a warp per row on CUDA): one launch each way,
// the row read from memory once and swept in cache (max, sum of exponentials, output), where
// the reduction path reads it twice and launches twice.
//   forward   lse = max + log(sum(exp(x - max)));  softmax = exp(x - lse), log_softmax = x - lse
//   backward  softmax: dx = y (g - sum(g y));  log_softmax: dx = g - exp(y) sum(g)
// Special values as the reduction path: a row of -inf has lse = -inf (softmax NaN, as PyTorch),
// +inf gives lse = +inf, a NaN anywhere makes the row NaN (it reaches the sum).
#pragma once

#include <cstdint>

#include "../../core/dtype.hpp"
#include "../../exec/for_each_row.hpp"
#include "../../expr/math.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"

namespace ember::ops::inline EMBER_UNIT_KIND {

/// The longest row a CUDA warp takes; longer rows use the reduction path. The CPU has no limit.
inline constexpr std::int64_t kSoftmaxRowMaxCudaCols = 32768;

/// Whether softmax of x along `axis` (normalised) runs as rows: the last axis of a contiguous
/// tensor with elements.
template <FloatingElement T>
bool softmax_rows_apply(const Tensor<T>& x, int axis) {
  if (x.rank() == 0 || axis != x.rank() - 1 || x.numel() == 0 || !x.is_contiguous()) return false;
  return x.device().is_cpu() || x.size(axis) <= kSoftmaxRowMaxCudaCols;
}

/// The logsumexp of row xr (of `cols`) over its lanes: the largest element, then the sum of
/// exponentials shifted by it. An infinite maximum is lse itself: -inf when the row holds only
/// -inf (or nothing), +inf when it holds +inf (whose softmax is then NaN there and 0 elsewhere,
/// as the reduction path gives). `total`, when given, receives the row's plain sum from the same
/// sweep (cross_entropy's label smoothing).
template <class A, class T, class Across>
EMBER_HD EMBER_FORCEINLINE A row_logsumexp(const T* xr, std::int64_t cols, int lane, int lanes,
                                           Across across, A* total = nullptr) {
  const A m = across.max(
      exec::lane_max<A>(cols, lane, lanes, [&](std::int64_t j) { return to_acc(xr[j]); }));
  A s = 0, plain = 0;
  exec::lane_sums(cols, lane, lanes, s, plain, [&](std::int64_t j) {
    const A v = to_acc(xr[j]);
    return exec::RowSums<A>{math::exp(v - m), v};
  });
  s = across.sum(s);
  if (total != nullptr) *total = across.sum(plain);  // the same pointer on every lane
  return m == -math::infinity<A>() || m == math::infinity<A>() ? m : m + math::log(s);
}

template <FloatingElement T>
struct SoftmaxRows {
  using A = acc_t<T>;
  const T* x;
  T* y;
  std::int64_t cols;
  bool log;

  template <class Across>
  EMBER_HD void row(std::int64_t r, int lane, int lanes, Across across) const {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    const A lse = row_logsumexp<A>(xr, cols, lane, lanes, across);
    exec::with_flag(log, [&](auto is_log) {
      exec::for_lane_elements(cols, lane, lanes, [&](std::int64_t j) {
        const A shifted = to_acc(xr[j]) - lse;
        if constexpr (decltype(is_log)::value) {
          yr[j] = to_storage<T>(shifted);
        } else {
          yr[j] = to_storage<T>(math::exp(shifted));
        }
      });
    });
  }
};

template <FloatingElement T>
struct SoftmaxBackwardRows {
  using A = acc_t<T>;
  const T* y;
  const T* g;
  T* dx;
  std::int64_t cols;
  bool log;

  template <class Across>
  EMBER_HD void row(std::int64_t r, int lane, int lanes, Across across) const {
    const std::int64_t base = r * cols;
    exec::with_flag(log, [&](auto is_log) {
      constexpr bool kLog = decltype(is_log)::value;
      A total = 0, unused = 0;
      exec::lane_sums(cols, lane, lanes, total, unused, [&](std::int64_t j) {
        const A gj = to_acc(g[base + j]);
        return exec::RowSums<A>{kLog ? gj : gj * to_acc(y[base + j]), A(0)};
      });
      total = across.sum(total);
      exec::for_lane_elements(cols, lane, lanes, [&](std::int64_t j) {
        const A gj = to_acc(g[base + j]), yj = to_acc(y[base + j]);
        if constexpr (kLog) {
          dx[base + j] = to_storage<T>(gj - math::exp(yj) * total);
        } else {
          dx[base + j] = to_storage<T>(yj * (gj - total));
        }
      });
    });
  }
};

/// softmax (or log_softmax) of a tensor for which softmax_rows_apply holds.
template <FloatingElement T>
Tensor<T> softmax_rows(const Tensor<T>& x, bool log) {
  const std::int64_t cols = x.size(x.rank() - 1), rows = x.numel() / cols;
  Tensor<T> y = empty<T>(x.shape(), x.device());
  exec::for_each_row<SoftmaxRows<T>>(SoftmaxRows<T>{x.data(), y.data(), cols, log}, rows, cols,
                                     x.device());
  return y;
}

/// The gradient of softmax's (log_softmax's) input from its output y (as softmax_rows made it)
/// and the output's gradient g.
template <FloatingElement T>
Tensor<T> softmax_rows_backward(const Tensor<T>& y, const Tensor<T>& g, bool log) {
  const std::int64_t cols = y.size(y.rank() - 1), rows = y.numel() / cols;
  const Tensor<T> gc = g.contiguous();
  Tensor<T> dx = empty<T>(y.shape(), y.device());
  exec::for_each_row<SoftmaxBackwardRows<T>>(
      SoftmaxBackwardRows<T>{y.data(), gc.data(), dx.data(), cols, log}, rows, cols, y.device());
  return dx;
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND
