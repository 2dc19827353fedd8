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

namespace ember::ops::inline EMBER_UNIT_KIND {

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
  /// How many leading keys the causal bound leaves query q (Lk when not causal): the keys from
  /// there on are masked, and the row passes neither sum nor exponentiate them.
  EMBER_HD EMBER_FORCEINLINE std::int64_t live_keys(std::int64_t q) const {
    const std::int64_t end = q + shift + 1;
    return end < Lk ? (end > 0 ? end : 0) : Lk;
  }
  /// A row's logits, written once (the CPU's single lane): out[j] = logit(r, mrow, q, j) for
  /// j < Lk, in loops the compiler vectorises (the per-element form reads the mask and tests the
  /// causal bound inside every sweep, which keeps those loops scalar).
  void logits_into(std::int64_t r, std::int64_t mrow, std::int64_t q, A* out) const {
    const T* s = scores + r * Lk;
    const bool* m = mask.data + mrow;
    const std::int64_t end = live_keys(q);
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

#if !defined(__CUDA_ARCH__)
/// The CPU's rows without dropout (one thread a row) sweep their exponentials in whole chunks of
/// this many values, the logits padded with -inf to the next multiple: loops of a fixed trip
/// count that the compiler vectorises with no scalar remainder. (A causal row has a different
/// length on every row, and the scalar remainders of the exponential's loops were most of the
/// work.)
inline constexpr std::int64_t kHostRowChunk = 16;

/// A row's logits in this thread's buffer (reused from row to row): the live keys' first, then
/// -inf up to a whole number of chunks. Returns the buffer; `padded` gets the chunks' length.
template <FloatingElement T>
acc_t<T>* host_row_logits(const AttentionRowLogits<T>& in, std::int64_t r, std::int64_t live,
                          std::int64_t& padded) {
  using A = acc_t<T>;
  padded = (live + kHostRowChunk - 1) / kHostRowChunk * kHostRowChunk;
  const std::int64_t size = padded > in.Lk ? padded : in.Lk;
  thread_local std::vector<A> buffer;
  if (buffer.size() < static_cast<std::size_t>(size)) buffer.resize(size);
  A* row = buffer.data();
  in.logits_into(r, in.mask.row_offset(r), r % in.Lq, row);
  for (std::int64_t j = in.Lk; j < padded; ++j) row[j] = -math::infinity<A>();
  return row;
}

/// The largest of x[0, n), n a multiple of kHostRowChunk (-inf when all are; NaN is skipped).
template <class A>
A host_row_max(const A* x, std::int64_t n) {
  A m[kHostRowChunk];
  for (auto& v : m) v = -math::infinity<A>();
  for (std::int64_t j0 = 0; j0 < n; j0 += kHostRowChunk) {
    for (std::int64_t k = 0; k < kHostRowChunk; ++k) m[k] = x[j0 + k] > m[k] ? x[j0 + k] : m[k];
  }
  A out = -math::infinity<A>();
  for (const A v : m) out = v > out ? v : out;
  return out;
}

/// The sum of f(x[j]) over x[0, n), n a multiple of kHostRowChunk.
template <class A, class F>
A host_row_sum(const A* x, std::int64_t n, F f) {
  A s[kHostRowChunk] = {};
  for (std::int64_t j0 = 0; j0 < n; j0 += kHostRowChunk) {
#pragma omp simd
    for (std::int64_t k = 0; k < kHostRowChunk; ++k) s[k] += f(x[j0 + k]);
  }
  A out = 0;
  for (const A v : s) out += v;
  return out;
}

/// x[j] = f(x[j]) over x[0, n), n a multiple of kHostRowChunk.
template <class A, class F>
void host_row_map(A* x, std::int64_t n, F f) {
  for (std::int64_t j0 = 0; j0 < n; j0 += kHostRowChunk) {
#pragma omp simd
    for (std::int64_t k = 0; k < kHostRowChunk; ++k) x[j0 + k] = f(x[j0 + k]);
  }
}
#endif

template <FloatingElement T>
struct AttentionSoftmaxRows {
  using A = acc_t<T>;
  AttentionRowLogits<T> in;
  T* probs;  // after dropout
  A* lse;    // [rows]
  RowDropout<A> dropout;

  template <class Across>
  EMBER_HD void row(std::int64_t r, int lane, int lanes, Across across) const {
#if !defined(__CUDA_ARCH__)
    if (lanes == 1 && !dropout.active()) return row_on_host(r);
#endif
    with_row_values(in, r, lanes, LogitItself{},
                    [&](auto logit) { row_from(r, lane, lanes, across, logit); });
  }

#if !defined(__CUDA_ARCH__)
  /// row_from's formulas for one thread and no dropout, in whole vectorised chunks.
  void row_on_host(std::int64_t r) const {
    const std::int64_t cols = in.Lk, base = r * cols, live = in.live_keys(r % in.Lq);
    std::int64_t padded = 0;
    A* x = host_row_logits(in, r, live, padded);
    const A m = host_row_max(x, padded);
    // The sum's terms are not kept: the probabilities are exp(logit - l), as on CUDA and in the
    // backward, which recomputes them so.
    const A l = m == -math::infinity<A>() || m == math::infinity<A>()
                    ? m
                    : m + math::log(host_row_sum(x, padded, [m](A v) { return math::exp(v - m); }));
    if (l == -math::infinity<A>()) {  // every key masked: zeros
      for (std::int64_t j = 0; j < live; ++j) x[j] = A(0);
    } else {
      host_row_map(x, padded, [l](A v) { return math::exp(v - l); });
    }
#pragma omp simd
    for (std::int64_t j = 0; j < live; ++j) probs[base + j] = to_storage<T>(x[j]);
    for (std::int64_t j = live; j < cols; ++j) probs[base + j] = T(0);
    lse[r] = l;
  }
#endif

  template <class Across, class Logit>
  EMBER_HD EMBER_FORCEINLINE void row_from(std::int64_t r, int lane, int lanes, Across across,
                                           Logit logit) const {
    const std::int64_t cols = in.Lk, base = r * cols, live = in.live_keys(r % in.Lq);
    const A m = across.max(exec::lane_max<A>(live, lane, lanes, logit));
    A s = 0, unused = 0;
    if (m != -math::infinity<A>()) {  // the same on every lane of the row
      exec::lane_sums(live, lane, lanes, s, unused, [&](std::int64_t j) {
        return exec::RowSums<A>{math::exp(logit(j) - m), A(0)};
      });
    }
    s = across.sum(s);
    const A l = m == -math::infinity<A>() || m == math::infinity<A>() ? m : m + math::log(s);
    auto prob = [&](std::int64_t j) { return attention_prob(logit(j), l); };
    if (!dropout.active()) {
      exec::for_lane_elements(live, lane, lanes,
                              [&](std::int64_t j) { probs[base + j] = to_storage<T>(prob(j)); });
      exec::for_lane_elements_from(live, cols, lane, lanes,
                                   [&](std::int64_t j) { probs[base + j] = T(0); });
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
#if !defined(__CUDA_ARCH__)
    if (lanes == 1 && !dropout.active()) return row_on_host(r);
#endif
    const A l = lse[r];
    with_row_values(
        in, r, lanes, [l](A logit) { return attention_prob(logit, l); },
        [&](auto prob) { row_from(r, lane, lanes, across, prob); });
  }

#if !defined(__CUDA_ARCH__)
  /// row_from's formulas for one thread and no dropout, the probabilities recomputed in whole
  /// vectorised chunks.
  void row_on_host(std::int64_t r) const {
    const std::int64_t cols = in.Lk, base = r * cols, live = in.live_keys(r % in.Lq);
    std::int64_t padded = 0;
    A* p = host_row_logits(in, r, live, padded);
    const A l = lse[r];
    if (l == -math::infinity<A>()) {  // every key masked: zeros
      for (std::int64_t j = 0; j < cols; ++j) dlogits[base + j] = T(0);
      return;
    }
    host_row_map(p, padded, [l](A v) { return math::exp(v - l); });
    A dot = 0;
#pragma omp simd reduction(+ : dot)
    for (std::int64_t j = 0; j < live; ++j) dot += to_acc(dp[base + j]) * p[j];
#pragma omp simd
    for (std::int64_t j = 0; j < live; ++j) {
      dlogits[base + j] = to_storage<T>(p[j] * (to_acc(dp[base + j]) - dot) * in.scale);
    }
    for (std::int64_t j = live; j < cols; ++j) dlogits[base + j] = T(0);
  }
#endif

  /// prob(j): column j's probability before dropout.
  template <class Across, class Prob>
  EMBER_HD EMBER_FORCEINLINE void row_from(std::int64_t r, int lane, int lanes, Across across,
                                           Prob prob) const {
    const std::int64_t cols = in.Lk, base = r * cols, live = in.live_keys(r % in.Lq);
    // dpre: the gradient before dropout; dlogits = p (dpre - sum(dpre p)) scale.
    A dot = 0;
    if (!dropout.active()) {
      A unused = 0;
      exec::lane_sums(live, lane, lanes, dot, unused, [&](std::int64_t j) {
        return exec::RowSums<A>{to_acc(dp[base + j]) * prob(j), A(0)};
      });
      dot = across.sum(dot);
      exec::for_lane_elements(live, lane, lanes, [&](std::int64_t j) {
        const A pj = prob(j);
        dlogits[base + j] = to_storage<T>(pj * (to_acc(dp[base + j]) - dot) * in.scale);
      });
      exec::for_lane_elements_from(live, cols, lane, lanes,
                                   [&](std::int64_t j) { dlogits[base + j] = T(0); });
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

/// shift: key j is allowed for query q when j <= q + shift (ops::causal_shift).
template <FloatingElement T>
AttentionRowLogits<T> attention_row_logits(const Tensor<T>& scores, const Tensor<bool>& mask,
                                           std::int64_t shift, double scale) {
  const int r = scores.rank();
  const std::int64_t Lq = scores.size(r - 2), Lk = scores.size(r - 1);
  return {scores.data(), mask_rows(mask, scores.shape()), Lq, Lk,
          shift,         static_cast<acc_t<T>>(scale)};
}

/// The probabilities (after dropout) and the logsumexp, kept ([..., Lq, 1]), of the scores.
template <FloatingElement T>
std::pair<Tensor<T>, Tensor<acc_t<T>>> attention_softmax_rows(const Tensor<T>& scores,
                                                              const Tensor<bool>& mask,
                                                              std::int64_t shift, double scale,
                                                              const DropoutOptions& dropout) {
  using A = acc_t<T>;
  const std::int64_t cols = scores.size(-1), rows = scores.numel() / cols;
  Shape kept = scores.shape();
  kept[kept.rank() - 1] = 1;
  Tensor<T> probs = empty<T>(scores.shape(), scores.device());
  Tensor<A> lse = empty<A>(kept, scores.device());
  const AttentionSoftmaxRows<T> f{attention_row_logits(scores, mask, shift, scale), probs.data(),
                                  lse.data(), RowDropout<A>::from(dropout)};
  exec::for_each_row<AttentionSoftmaxRows<T>>(f, rows, cols, scores.device());
  return {probs, lse};
}

/// The scores' gradient from the probabilities' gradient dp (after dropout).
template <FloatingElement T>
Tensor<T> attention_softmax_rows_backward(const Tensor<T>& scores, const Tensor<bool>& mask,
                                          std::int64_t shift, double scale,
                                          const Tensor<acc_t<T>>& lse, const Tensor<T>& dp,
                                          const DropoutOptions& dropout) {
  using A = acc_t<T>;
  const std::int64_t cols = scores.size(-1), rows = scores.numel() / cols;
  const Tensor<T> dpc = dp.contiguous();
  Tensor<T> dlogits = empty<T>(scores.shape(), scores.device());
  const AttentionSoftmaxBackwardRows<T> f{attention_row_logits(scores, mask, shift, scale),
                                          lse.data(), dpc.data(), dlogits.data(),
                                          RowDropout<A>::from(dropout)};
  exec::for_each_row<AttentionSoftmaxBackwardRows<T>>(f, rows, cols, scores.device());
  return dlogits;
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND
