// scaled_dot_product_attention on Tensors: softmax(q k^T scale, masked) v, with dropout on the
// attention probabilities, as PyTorch's function of that name.
//
//   q [..., Lq, E], k [..., Lk, E], v [..., Lk, Ev] -> [..., Lq, Ev]; batch dims broadcast
//   mask: Tensor<bool> broadcastable to [..., Lq, Lk], true where a query may attend (undefined:
//         everywhere); causal: query i attends to keys j <= i (PyTorch's is_causal), or with
//         CausalAlign::lower_right to keys j <= i + Lk - Lq
//   scale: 1 / sqrt(E) unless given; dropout_p with Philox (seed, offset) as ops/dropout.hpp
// Two kernels, the same results (attention_kernel says which runs):
// - flash (the CPU): flash_attention.hpp, tiles of queries and keys with
//   an online softmax; no [..., Lq, Lk] tensor is allocated either way, the backward recomputes
//   the probabilities from the saved logsumexp.
// - scores (CUDA; on the CPU when asked for): a batched GEMM for the scores, then scale + mask +
//   softmax + dropout a row at a time in one launch (attention_rows.hpp; on CUDA for rows of up
//   to 32,768 keys), else in one logsumexp reduction and one elementwise pass (the mask and the
//   causal condition computed inside the expression from a lazy row and column index), then a
//   batched GEMM with v. Backward (attention_backward): two GEMMs for dv and dP, one row pass
//   (else one reduction and one pass) for the softmax and dropout backward (the probabilities
//   before dropout recomputed from the scores and the logsumexp, the dropout mask from its
//   seed), two GEMMs for dq and dk.
// Both drop the same elements for the same seed and offset, and a row whose every key is masked
// gives zeros, not NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

#include "../../core/dtype.hpp"
#include "../../exec/assign.hpp"
#include "../../exec/reduce.hpp"
#include "../../expr/generator.hpp"
#include "../../expr/operators.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "../matmul/matmul.hpp"
#include "attention_rows.hpp"
#include "flash_attention.hpp"

namespace ember {

/// The ways attention runs (see the top of this header).
enum class AttentionKernel {
  automatic,  // attention_kernel's rule
  flash,      // flash_attention.hpp: tiles and an online softmax, no score matrix (the CPU)
  scores,     // the score matrix from a batched GEMM, a row pass, a GEMM with v
};

/// Where a causal mask's diagonal lies when there are fewer or more queries than keys (PyTorch's
/// torch.nn.attention.bias names).
enum class CausalAlign {
  upper_left,   // query i attends to keys j <= i: PyTorch's is_causal
  lower_right,  // query i attends to keys j <= i + Lk - Lq: the last query sees every key (new
                // queries against a cache of earlier keys)
};

struct AttentionOptions {
  double dropout_p = 0.0;
  bool causal = false;
  std::optional<double> scale;  // default 1 / sqrt(E)
  std::uint64_t seed = 0, offset = 0;
  AttentionKernel kernel = AttentionKernel::automatic;
  CausalAlign causal_align = CausalAlign::upper_left;
};
}  // namespace ember

namespace ember::ops::inline EMBER_UNIT_KIND {

/// Which kernel attention_forward runs for queries q (`asked`: the options' choice).
template <Storable T>
AttentionKernel attention_kernel(const Tensor<T>& q,
                                 AttentionKernel asked = AttentionKernel::automatic) {
  if (asked == AttentionKernel::flash) {
    EMBER_CHECK(q.device().is_cpu(), "ember: scaled_dot_product_attention: the flash kernel ",
                "runs on the CPU only; on ", q.device().str(), " ask for scores or automatic");
    return asked;
  }
  if (asked == AttentionKernel::scores) return asked;
  // On the CPU flash measured faster at every length, from 4 keys (docs/operators.md).
  return q.device().is_cpu() ? AttentionKernel::flash : AttentionKernel::scores;
}

/// What the backward needs from the forward.
template <Storable T>
struct AttentionSaved {
  AttentionKernel kernel = AttentionKernel::scores;
  Tensor<T> scores;      // scores: q k^T, unscaled, [..., Lq, Lk]
  Tensor<acc_t<T>> lse;  // logsumexp of the masked, scaled scores ([..., Lq, 1]; flash: [B, Lq])
  Tensor<T> probs;       // scores: after dropout, what multiplied v
  Tensor<T> out;         // flash: the output, dense [B, Lq, Ev] (B: the batch entries)
  Tensor<bool> mask;     // as given, or a single true
  double scale = 1;
};

/// Key j is allowed for query i when j <= i + shift: the options' causal bound (Lk when there is
/// none: every key).
inline std::int64_t causal_shift(const AttentionOptions& opt, std::int64_t Lq, std::int64_t Lk) {
  if (!opt.causal) return Lk;
  return opt.causal_align == CausalAlign::lower_right ? Lk - Lq : 0;
}

/// The masked, scaled logits of `scores` as a lazy expression (-inf where masked).
template <Storable T>
auto attention_logits(const Tensor<T>& scores, const Tensor<bool>& mask, std::int64_t shift,
                      double scale) {
  const int r = scores.rank();
  const std::int64_t Lq = scores.size(r - 2), Lk = scores.size(r - 1);
  const Device dev = scores.device();
  // Lk: no causal bound, every column satisfies it.
  const expr::Generated<std::int64_t, expr::ArangeGen> row(Shape{Lq, 1}, dev, {0.0, 1.0});
  const expr::Generated<std::int64_t, expr::ArangeGen> col(Shape{Lk}, dev, {0.0, 1.0});
  return where(logical_and(col <= row + shift, mask), scores * scale,
               -std::numeric_limits<double>::infinity());
}

/// A tensor whose elements are adjacent along its last dim (the flash kernels read rows).
template <Storable T>
Tensor<T> with_dense_rows(const Tensor<T>& t) {
  return t.size(-1) <= 1 || t.stride(-1) == 1 ? t : t.contiguous();
}

/// The flash kernels' view of q, k, v (rows dense) and the mask (undefined: none).
template <FloatingElement T>
FlashProblem<T> flash_problem(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                              const Tensor<bool>& mask, const AttentionOptions& opt, double scale) {
  auto lead = [](const Tensor<T>& t) {  // batch extents and strides
    Shape sizes, strides;
    for (int d = 0; d + 2 < t.rank(); ++d) {
      sizes.push_back(t.size(d));
      strides.push_back(t.stride(d));
    }
    return std::pair{sizes, strides};
  };
  const auto [qb, qstr] = lead(q);
  const auto [kb, kstr] = lead(k);
  const auto [vb, vstr] = lead(v);
  const char* name = "scaled_dot_product_attention";
  const Shape score_batch = broadcast_shapes(qb, kb, name);
  const Shape batch = broadcast_shapes(score_batch, vb, name);
  FlashProblem<T> p;
  p.batch_shape = batch;
  p.batch = batch.numel();
  p.Lq = q.size(-2);
  p.Lk = k.size(-2);
  p.E = q.size(-1);
  p.Ev = v.size(-1);
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.q_row = q.stride(-2);
  p.k_row = k.stride(-2);
  p.v_row = v.stride(-2);
  p.q_at = batch_offsets(qb, qstr, batch);
  p.k_at = batch_offsets(kb, kstr, batch);
  p.v_at = batch_offsets(vb, vstr, batch);
  Strides score_strides = contiguous_strides(score_batch);
  for (auto& s : score_strides) s *= p.Lq * p.Lk;
  p.score_at = batch_offsets(score_batch, score_strides, batch);
  if (mask.defined()) {
    Shape scores = score_batch, full = batch;
    scores.push_back(p.Lq);
    scores.push_back(p.Lk);
    full.push_back(p.Lq);
    full.push_back(p.Lk);
    EMBER_CHECK(broadcastable_to(mask.shape(), scores), "ember: ", name, ": the mask ",
                mask.shape().str(), " does not broadcast to the scores ", scores.str());
    const Tensor<bool> m = mask.expand(full);
    Shape mb, mstr;
    for (int d = 0; d < batch.rank(); ++d) {
      mb.push_back(m.size(d));
      mstr.push_back(m.stride(d));
    }
    p.mask = m.data();
    p.mask_at = batch_offsets(mb, mstr, batch);
    p.mask_row = m.stride(-2);
    p.mask_col = m.stride(-1);
  }
  p.causal = opt.causal;
  p.shift = causal_shift(opt, p.Lq, p.Lk);
  p.scale = static_cast<acc_t<T>>(scale);
  p.dropout = RowDropout<acc_t<T>>::from(DropoutOptions{opt.dropout_p, opt.seed, opt.offset});
  return p;
}

template <Storable T>
Tensor<bool> attention_mask(const Tensor<bool>& mask, Device device) {
  if (mask.defined()) {
    EMBER_CHECK(mask.device() == device, "ember: scaled_dot_product_attention: the mask is on ",
                mask.device().str(), ", the inputs on ", device.str());
    return mask;
  }
  return from_vector<bool>(std::vector<bool>{true}, Shape{}, device);
}

/// The flash forward (the checks done; mask undefined: none): the output, and into s what its
/// backward needs.
template <FloatingElement T>
std::pair<Tensor<T>, AttentionSaved<T>> flash_forward(const Tensor<T>& q_in, const Tensor<T>& k_in,
                                                      const Tensor<T>& v_in,
                                                      const Tensor<bool>& mask,
                                                      const AttentionOptions& opt,
                                                      AttentionSaved<T> s) {
  const Tensor<T> q = with_dense_rows<T>(q_in), k = with_dense_rows<T>(k_in),
                  v = with_dense_rows<T>(v_in);
  const FlashProblem<T> p = flash_problem(q, k, v, mask, opt, s.scale);
  s.mask = mask;
  s.out = empty<T>(Shape{p.batch, p.Lq, p.Ev}, q.device());
  s.lse = empty<acc_t<T>>(Shape{p.batch, p.Lq}, q.device());
  flash_attention_forward<T>(p, s.out.data(), s.lse.data());
  Shape shape = p.batch_shape;
  shape.push_back(p.Lq);
  shape.push_back(p.Ev);
  return {s.out.reshape(shape), s};
}

/// The flash backward: the gradients of q, k and v.
template <FloatingElement T>
std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> flash_backward(
    const Tensor<T>& q_in, const Tensor<T>& k_in, const Tensor<T>& v_in, const AttentionSaved<T>& s,
    const AttentionOptions& opt, const Tensor<T>& g) {
  const Tensor<T> q = with_dense_rows<T>(q_in), k = with_dense_rows<T>(k_in),
                  v = with_dense_rows<T>(v_in);
  const FlashProblem<T> p = flash_problem(q, k, v, s.mask, opt, s.scale);
  const Tensor<T> dout = g.contiguous();
  auto grad_shape = [&](std::int64_t rows, std::int64_t cols) {
    Shape out = p.batch_shape;
    out.push_back(rows);
    out.push_back(cols);
    return out;
  };
  Tensor<T> dq = empty<T>(grad_shape(p.Lq, p.E), q.device());
  Tensor<T> dk = empty<T>(grad_shape(p.Lk, p.E), q.device());
  Tensor<T> dv = empty<T>(grad_shape(p.Lk, p.Ev), q.device());
  flash_attention_backward<T>(p, s.out.data(), dout.data(), s.lse.data(), dq.data(), dk.data(),
                              dv.data());
  return {sum_to<T>(dq, q.shape()), sum_to<T>(dk, k.shape()), sum_to<T>(dv, v.shape())};
}

/// The forward, keeping what the backward needs.
template <FloatingElement T>
std::pair<Tensor<T>, AttentionSaved<T>> attention_forward(const Tensor<T>& q, const Tensor<T>& k,
                                                          const Tensor<T>& v,
                                                          const Tensor<bool>& mask_in,
                                                          const AttentionOptions& opt) {
  using A = acc_t<T>;
  const char* name = "scaled_dot_product_attention";
  EMBER_CHECK(
      q.defined() && k.defined() && v.defined() && q.rank() >= 2 && k.rank() >= 2 && v.rank() >= 2,
      "ember: ", name, ": q, k and v must have rank 2 or more");
  EMBER_CHECK(q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2), "ember: ", name, ": shapes q ",
              q.shape().str(), ", k ", k.shape().str(), ", v ", v.shape().str(),
              " do not fit (q and k share E, k and v share Lk)");
  EMBER_CHECK(opt.dropout_p >= 0 && opt.dropout_p < 1, "ember: ", name,
              ": dropout_p must be in [0, 1), got ", opt.dropout_p);
  AttentionSaved<T> s;
  s.scale = opt.scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  s.mask = attention_mask<T>(mask_in, q.device());
  s.kernel = attention_kernel(q, opt.kernel);
  if (s.kernel == AttentionKernel::flash) return flash_forward<T>(q, k, v, mask_in, opt, s);
  s.scores = matmul<T>(q, k.transpose(-1, -2));
  const std::int64_t shift = causal_shift(opt, q.size(-2), k.size(-2));
  if (attention_rows_apply(s.scores)) {
    std::tie(s.probs, s.lse) = attention_softmax_rows<T>(
        s.scores, s.mask, shift, s.scale, DropoutOptions{opt.dropout_p, opt.seed, opt.offset});
    return {matmul<T>(s.probs, v), s};
  }
  const int r = s.scores.rank();
  const auto logits = attention_logits(s.scores, s.mask, shift, s.scale);
  s.lse = exec::reduce_expression<A>(logits, reduce::Bound<reduce::LogSumExp<A>>{}, name,
                                     Dims{r - 1}, true, true);
  const double inf = std::numeric_limits<double>::infinity();
  const auto p = where(s.lse == -inf, 0.0, exp(logits - s.lse));
  if (opt.dropout_p > 0) {
    const expr::Generated<float, expr::UniformGen> u(s.scores.shape(), q.device(),
                                                     {opt.seed, opt.offset, 0.0f, 1.0f});
    s.probs = Tensor<T>(cast<T>(where(u >= opt.dropout_p, p * (1.0 / (1.0 - opt.dropout_p)), 0.0)));
  } else {
    s.probs = Tensor<T>(cast<T>(p));
  }
  return {matmul<T>(s.probs, v), s};
}

/// The gradients of q, k and v, given the output's gradient g.
template <FloatingElement T>
std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> attention_backward(
    const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v, const AttentionSaved<T>& s,
    const AttentionOptions& opt, const Tensor<T>& g) {
  using A = acc_t<T>;
  if (s.kernel == AttentionKernel::flash) return flash_backward<T>(q, k, v, s, opt, g);
  const int r = s.scores.rank();
  const std::int64_t shift = causal_shift(opt, q.size(-2), k.size(-2));
  // dv = P^T g, dP = g v^T (summed later over broadcast batch dims by sum_to).
  const Tensor<T> dv = matmul<T>(s.probs.transpose(-1, -2), g);
  const Tensor<T> dp = matmul<T>(g, v.transpose(-1, -2));
  if (attention_rows_apply(s.scores)) {
    const Tensor<T> dlogits =
        attention_softmax_rows_backward<T>(s.scores, s.mask, shift, s.scale, s.lse, dp,
                                           DropoutOptions{opt.dropout_p, opt.seed, opt.offset});
    return {sum_to<T>(matmul<T>(dlogits, k), q.shape()),
            sum_to<T>(matmul<T>(dlogits.transpose(-1, -2), q), k.shape()),
            sum_to<T>(dv, v.shape())};
  }
  const double inf = std::numeric_limits<double>::infinity();
  const auto logits = attention_logits(s.scores, s.mask, shift, s.scale);
  const auto p = where(s.lse == -inf, 0.0, exp(logits - s.lse));  // before dropout
  Tensor<T> dlogits;
  auto softmax_backward = [&](const auto& dpre) {
    // dlogits = p (dpre - sum(dpre p)) scale, into the scores' gradient.
    const Tensor<A> dot =
        exec::reduce_expression<A>(dpre * p, reduce::Bound<reduce::Sum<A>>{},
                                   "scaled_dot_product_attention", Dims{r - 1}, true, true);
    dlogits = Tensor<T>(cast<T>(p * (dpre - dot) * s.scale));
  };
  if (opt.dropout_p > 0) {
    const expr::Generated<float, expr::UniformGen> u(s.scores.shape(), q.device(),
                                                     {opt.seed, opt.offset, 0.0f, 1.0f});
    softmax_backward(where(u >= opt.dropout_p, dp * (1.0 / (1.0 - opt.dropout_p)), 0.0));
  } else {
    softmax_backward(dp * 1.0);
  }
  const Tensor<T> dq = matmul<T>(dlogits, k);
  const Tensor<T> dk = matmul<T>(dlogits.transpose(-1, -2), q);
  return {sum_to<T>(dq, q.shape()), sum_to<T>(dk, k.shape()), sum_to<T>(dv, v.shape())};
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// softmax(q k^T scale, masked) v with dropout (see the top of this header).
template <FloatingElement T>
Tensor<T> scaled_dot_product_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                       const Tensor<bool>& mask = {},
                                       const AttentionOptions& opt = {}) {
  return ops::attention_forward<T>(q, k, v, mask, opt).first;
}
}  // namespace ember::inline EMBER_UNIT_KIND
