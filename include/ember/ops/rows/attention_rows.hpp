// Attention's scale + mask + softmax + dropout one row of scores at a time (exec::for_each_row: a
// thread per row on the CPU, a warp per row on CUDA), forward and backward: one launch each way
// where the expression path runs a logsumexp reduction and a pass (and, back, a reduction and a
// pass). A row is query q of one batch entry: its Lk scores, the mask's row read through the
// mask's broadcast strides, the causal condition from q and the column. The formulas, the
// dropout's Philox indices (the element's row-major index in the scores) and the special cases
// (a row with every key masked gives zeros) are those of attention.hpp.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/shape.hpp"
#include "../../exec/for_each_row.hpp"
#include "../../expr/math.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "../dropout.hpp"
#include "layer_norm_rows.hpp"

namespace ember::ops {

/// Whether the attention softmax of these scores [..., Lq, Lk] (dense, from the GEMM) runs as
/// rows: they have elements, and on CUDA a row fits a warp's limit.
template <Storable T>
bool attention_rows_apply(const Tensor<T>& scores) {
  return scores.numel() > 0 && scores.is_contiguous() &&
         (scores.device().is_cpu() || scores.size(-1) <= kRowNormMaxCudaCols);
}

/// The mask broadcast to the scores' shape, read a row at a time: row r's first element is at
/// row_offset(r), its columns `col_stride` apart.
struct MaskRows {
  const bool* data = nullptr;
  std::int64_t sizes[kMaxRank] = {};    // the scores' leading extents (all but the last)
  std::int64_t strides[kMaxRank] = {};  // the broadcast mask's strides along them
  int lead = 0;
  std::int64_t col_stride = 0;

  EMBER_HD std::int64_t row_offset(std::int64_t r) const {
    std::int64_t off = 0;
    for (int d = lead - 1; d >= 0; --d) {
      off += (r % sizes[d]) * strides[d];
      r /= sizes[d];
    }
    return off;
  }
};

inline MaskRows mask_rows(const Tensor<bool>& mask, const Shape& scores) {
  const Tensor<bool> m = mask.expand(scores);
  MaskRows out;
  out.data = m.data();
  out.lead = scores.rank() - 1;
  for (int d = 0; d < out.lead; ++d) {
    out.sizes[d] = scores[d];
    out.strides[d] = m.stride(d);
  }
  out.col_stride = m.stride(scores.rank() - 1);
  return out;
}

/// What a row of either pass needs to form its logits: scores * scale where the key is allowed.
template <FloatingElement T>
struct AttentionRowLogits {
  using A = acc_t<T>;
  const T* scores;
  MaskRows mask;
  std::int64_t Lq, Lk;
  std::int64_t shift;  // causal: key j is allowed for query q when j <= q + shift
  A scale;

  /// The logit of column j of row r (mrow: the mask's row offset, q: the query).
  EMBER_HD EMBER_FORCEINLINE A logit(std::int64_t r, std::int64_t mrow, std::int64_t q,
                                     std::int64_t j) const {
    const bool allowed = j <= q + shift && mask.data[mrow + j * mask.col_stride];
    return allowed ? to_acc(scores[r * Lk + j]) * scale : -math::infinity<A>();
  }
  /// A row's logits, written once (the CPU's single lane): out[j] = logit(r, mrow, q, j) for
  /// j < Lk, in loops the compiler vectorises (the per-element form reads the mask and tests the
  /// causal bound inside every sweep, which keeps those loops scalar).
  void logits_into(std::int64_t r, std::int64_t mrow, std::int64_t q, A* out) const {
    const T* s = scores + r * Lk;
    const bool* m = mask.data + mrow;
    // Keys past q + shift are masked by the causal bound (none when not causal: shift = Lk).
    const std::int64_t end = q + shift + 1 < Lk ? (q + shift + 1 > 0 ? q + shift + 1 : 0) : Lk;
    const std::int64_t cs = mask.col_stride;
    const A masked = -math::infinity<A>();
    if (cs == 1) {
#pragma omp simd
      for (std::int64_t j = 0; j < end; ++j) out[j] = m[j] ? to_acc(s[j]) * scale : masked;
    } else if (cs == 0 && m[0]) {  // one flag for the whole row
#pragma omp simd
      for (std::int64_t j = 0; j < end; ++j) out[j] = to_acc(s[j]) * scale;
    } else {
      for (std::int64_t j = 0; j < end; ++j) out[j] = m[j * cs] ? to_acc(s[j]) * scale : masked;
    }
    for (std::int64_t j = end; j < Lk; ++j) out[j] = masked;
  }
};

/// The probability of an element of logit `logit` before dropout, given its row's logsumexp l
/// (-inf: every key is masked, and the row is zeros).
template <class A>
EMBER_HD EMBER_FORCEINLINE A attention_prob(A logit, A l) {
  return l == -math::infinity<A>() ? A(0) : math::exp(logit - l);
}

/// with_row_values' identity: the values are the logits themselves.
struct LogitItself {
  template <class A>
  EMBER_HD EMBER_FORCEINLINE A operator()(A logit) const {
    return logit;
  }
};

/// f(value) for row r of the scores, value(j) = op(logit of column j): on the CPU (one lane) from
/// a buffer the row's values were written to once (the thread's, reused from row to row: the
/// logits, then op in one more vectorised sweep), on CUDA formed per element by each lane.
template <FloatingElement T, class Op, class F>
EMBER_HD EMBER_FORCEINLINE void with_row_values(const AttentionRowLogits<T>& in, std::int64_t r,
                                                int lanes, Op op, F&& f) {
  using A = acc_t<T>;
  const std::int64_t q = r % in.Lq, mrow = in.mask.row_offset(r);
#if !defined(__CUDA_ARCH__)
  if (lanes == 1) {
    thread_local std::vector<A> buffer;
    if (buffer.size() < static_cast<std::size_t>(in.Lk)) buffer.resize(in.Lk);
    A* row = buffer.data();
    in.logits_into(r, mrow, q, row);
    if constexpr (!std::is_same_v<Op, LogitItself>) {
#pragma omp simd
      for (std::int64_t j = 0; j < in.Lk; ++j) row[j] = op(row[j]);
    }
    f([row](std::int64_t j) { return row[j]; });
    return;
  }
#endif
  f([&in, r, mrow, q, op](std::int64_t j) { return op(in.logit(r, mrow, q, j)); });
}

template <FloatingElement T>
struct AttentionSoftmaxRows {
  using A = acc_t<T>;
  AttentionRowLogits<T> in;
  T* probs;  // after dropout
  A* lse;    // [rows]
  RowDropout<A> dropout;

  template <class Across>
  EMBER_HD void row(std::int64_t r, int lane, int lanes, Across across) const {
    with_row_values(in, r, lanes, LogitItself{},
                    [&](auto logit) { row_from(r, lane, lanes, across, logit); });
  }

  template <class Across, class Logit>
  EMBER_HD EMBER_FORCEINLINE void row_from(std::int64_t r, int lane, int lanes, Across across,
                                           Logit logit) const {
    const std::int64_t cols = in.Lk, base = r * cols;
    const A m = across.max(exec::lane_max<A>(cols, lane, lanes, logit));
    A s = 0, unused = 0;
    if (m != -math::infinity<A>()) {  // the same on every lane of the row
      exec::lane_sums(cols, lane, lanes, s, unused, [&](std::int64_t j) {
        return exec::RowSums<A>{math::exp(logit(j) - m), A(0)};
      });
    }
    s = across.sum(s);
    const A l = m == -math::infinity<A>() || m == math::infinity<A>() ? m : m + math::log(s);
    auto prob = [&](std::int64_t j) { return attention_prob(logit(j), l); };
    if (!dropout.active()) {
      exec::for_lane_elements(cols, lane, lanes,
                              [&](std::int64_t j) { probs[base + j] = to_storage<T>(prob(j)); });
    } else {
      dropout.for_each(base, cols, lane, lanes, [&](std::int64_t j, float u) {
        probs[base + j] = to_storage<T>(dropout.apply(u, prob(j)));
      });
    }
    if (lane == 0) lse[r] = l;
  }
};

template <FloatingElement T>
struct AttentionSoftmaxBackwardRows {
  using A = acc_t<T>;
  AttentionRowLogits<T> in;
  const A* lse;
  const T* dp;  // the gradient of the probabilities after dropout
  T* dlogits;   // the scores' gradient (the scale included)
  RowDropout<A> dropout;

  template <class Across>
  EMBER_HD void row(std::int64_t r, int lane, int lanes, Across across) const {
    const A l = lse[r];
    with_row_values(
        in, r, lanes, [l](A logit) { return attention_prob(logit, l); },
        [&](auto prob) { row_from(r, lane, lanes, across, prob); });
  }

  /// prob(j): column j's probability before dropout.
  template <class Across, class Prob>
  EMBER_HD EMBER_FORCEINLINE void row_from(std::int64_t r, int lane, int lanes, Across across,
                                           Prob prob) const {
    const std::int64_t cols = in.Lk, base = r * cols;
    // dpre: the gradient before dropout; dlogits = p (dpre - sum(dpre p)) scale.
    A dot = 0;
    if (!dropout.active()) {
      A unused = 0;
      exec::lane_sums(cols, lane, lanes, dot, unused, [&](std::int64_t j) {
        return exec::RowSums<A>{to_acc(dp[base + j]) * prob(j), A(0)};
      });
      dot = across.sum(dot);
      exec::for_lane_elements(cols, lane, lanes, [&](std::int64_t j) {
        const A pj = prob(j);
        dlogits[base + j] = to_storage<T>(pj * (to_acc(dp[base + j]) - dot) * in.scale);
      });
      return;
    }
    dropout.for_each(base, cols, lane, lanes, [&](std::int64_t j, float u) {
      dot += dropout.apply(u, to_acc(dp[base + j])) * prob(j);
    });
    dot = across.sum(dot);
    dropout.for_each(base, cols, lane, lanes, [&](std::int64_t j, float u) {
      const A dpre = dropout.apply(u, to_acc(dp[base + j]));
      dlogits[base + j] = to_storage<T>(prob(j) * (dpre - dot) * in.scale);
    });
  }
};

template <FloatingElement T>
AttentionRowLogits<T> attention_row_logits(const Tensor<T>& scores, const Tensor<bool>& mask,
                                           bool causal, double scale) {
  const int r = scores.rank();
  const std::int64_t Lq = scores.size(r - 2), Lk = scores.size(r - 1);
  return {scores.data(),         mask_rows(mask, scores.shape()), Lq, Lk,
          causal ? Lk - Lq : Lk, static_cast<acc_t<T>>(scale)};
}

/// The probabilities (after dropout) and the logsumexp, kept ([..., Lq, 1]), of the scores.
template <FloatingElement T, class Mode = exec::mode>
std::pair<Tensor<T>, Tensor<acc_t<T>>> attention_softmax_rows(const Tensor<T>& scores,
                                                              const Tensor<bool>& mask, bool causal,
                                                              double scale,
                                                              const DropoutOptions& dropout) {
  using A = acc_t<T>;
  const std::int64_t cols = scores.size(-1), rows = scores.numel() / cols;
  Shape kept = scores.shape();
  kept[kept.rank() - 1] = 1;
  Tensor<T> probs = empty<T>(scores.shape(), scores.device());
  Tensor<A> lse = empty<A>(kept, scores.device());
  const AttentionSoftmaxRows<T> f{attention_row_logits(scores, mask, causal, scale), probs.data(),
                                  lse.data(), RowDropout<A>::from(dropout)};
  exec::for_each_row<AttentionSoftmaxRows<T>, Mode>(f, rows, cols, scores.device());
  return {probs, lse};
}

/// The scores' gradient from the probabilities' gradient dp (after dropout).
template <FloatingElement T, class Mode = exec::mode>
Tensor<T> attention_softmax_rows_backward(const Tensor<T>& scores, const Tensor<bool>& mask,
                                          bool causal, double scale, const Tensor<acc_t<T>>& lse,
                                          const Tensor<T>& dp, const DropoutOptions& dropout) {
  using A = acc_t<T>;
  const std::int64_t cols = scores.size(-1), rows = scores.numel() / cols;
  const Tensor<T> dpc = dp.template contiguous<Mode>();
  Tensor<T> dlogits = empty<T>(scores.shape(), scores.device());
  const AttentionSoftmaxBackwardRows<T> f{attention_row_logits(scores, mask, causal, scale),
                                          lse.data(), dpc.data(), dlogits.data(),
                                          RowDropout<A>::from(dropout)};
  exec::for_each_row<AttentionSoftmaxBackwardRows<T>, Mode>(f, rows, cols, scores.device());
  return dlogits;
}

}  // namespace ember::ops
