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
// packed_qkv_attention is the same attention over one projection's q, k and v, qkv
// [..., L, 3, H, E] -> [..., L, H, E]: the flash kernel reads them in place and its backward
// writes their gradients as one tensor, the projection's (FlashAttention's qkvpacked form).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

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
  Tensor<T> out;         // flash: the output [..., Lq, Ev]
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

/// t's extents before its last two (its batch extents).
template <Storable T>
Shape batch_extents(const Tensor<T>& t) {
  Shape sizes;
  for (int d = 0; d + 2 < t.rank(); ++d) sizes.push_back(t.size(d));
  return sizes;
}

/// t [..., L, cols] (its rows dense, its batch extents broadcasting to `batch`) as the flash
/// kernels' rows: BatchRows<const T> to read, BatchRows<T> to write.
template <class Element, Storable T>
BatchRows<Element> batch_rows(const Tensor<T>& t, const Shape& batch) {
  Shape strides;
  for (int d = 0; d + 2 < t.rank(); ++d) strides.push_back(t.stride(d));
  return {t.data(), batch_offsets(batch_extents(t), strides, batch), t.stride(-2)};
}

/// An uninitialised tensor of `shape` [..., H, L, cols] laid out as [..., L, H, cols]: heads
/// after rows, as the heads of a [..., L, H * cols] projection lie, so that a model's
/// transpose(-3, -2) and reshape back to [..., L, H * cols] is a view. PyTorch's CPU flash
/// attention lays its output out so too.
template <Storable T>
Tensor<T> empty_heads_after_rows(Shape shape, Device device) {
  const int r = shape.rank();
  std::swap(shape[r - 3], shape[r - 2]);
  return empty<T>(shape, device).transpose(r - 3, r - 2);
}

/// An uninitialised tensor for the gradient of x [..., H, L, cols]: heads after rows where x's
/// heads are closer in memory than its rows (x is a view of a projection), else dense.
template <Storable T>
Tensor<T> empty_gradient_like(const Tensor<T>& x) {
  const int r = x.rank();
  const bool heads_after_rows =
      r >= 3 && x.size(r - 3) > 1 && x.size(r - 2) > 1 && x.stride(r - 3) < x.stride(r - 2);
  return heads_after_rows ? empty_heads_after_rows<T>(x.shape(), x.device())
                          : empty<T>(x.shape(), x.device());
}

/// The flash kernels' view of q, k, v (rows dense) and the mask (undefined: none).
template <FloatingElement T>
FlashProblem<T> flash_problem(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                              const Tensor<bool>& mask, const AttentionOptions& opt, double scale) {
  const char* name = "scaled_dot_product_attention";
  const Shape score_batch = broadcast_shapes(batch_extents(q), batch_extents(k), name);
  const Shape batch = broadcast_shapes(score_batch, batch_extents(v), name);
  FlashProblem<T> p;
  p.batch_shape = batch;
  p.batch = batch.numel();
  p.Lq = q.size(-2);
  p.Lk = k.size(-2);
  p.E = q.size(-1);
  p.Ev = v.size(-1);
  p.q = batch_rows<const T>(q, batch);
  p.k = batch_rows<const T>(k, batch);
  p.v = batch_rows<const T>(v, batch);
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
/// backward needs. An output of rank 4 or more has its heads after its rows
/// (empty_heads_after_rows).
template <FloatingElement T>
std::pair<Tensor<T>, AttentionSaved<T>> flash_forward(const Tensor<T>& q_in, const Tensor<T>& k_in,
                                                      const Tensor<T>& v_in,
                                                      const Tensor<bool>& mask,
                                                      const AttentionOptions& opt,
                                                      AttentionSaved<T> s) {
  const Tensor<T> q = with_dense_rows<T>(q_in), k = with_dense_rows<T>(k_in),
                  v = with_dense_rows<T>(v_in);
  const FlashProblem<T> p = flash_problem(q, k, v, mask, opt, s.scale);
  Shape shape = p.batch_shape;
  shape.push_back(p.Lq);
  shape.push_back(p.Ev);
  s.mask = mask;
  s.out = shape.rank() >= 4 ? empty_heads_after_rows<T>(shape, q.device())
                            : empty<T>(shape, q.device());
  s.lse = empty<acc_t<T>>(Shape{p.batch, p.Lq}, q.device());
  flash_attention_forward<T>(p, batch_rows<T>(s.out, p.batch_shape), s.lse.data());
  return {s.out, s};
}

/// Where flash_backward writes the gradients of q, k and v (undefined: tensors of its own).
template <Storable T>
struct AttentionGradients {
  Tensor<T> dq, dk, dv;
};

/// The flash backward: the gradients of q, k and v, into `into` where it names them (views with
/// q's, k's and v's shapes and dense rows), else into tensors laid out like q, k and v
/// (empty_gradient_like; dense and summed where an operand was broadcast).
template <FloatingElement T>
std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> flash_backward(
    const Tensor<T>& q_in, const Tensor<T>& k_in, const Tensor<T>& v_in, const AttentionSaved<T>& s,
    const AttentionOptions& opt, const Tensor<T>& g, const AttentionGradients<T>& into = {}) {
  const Tensor<T> q = with_dense_rows<T>(q_in), k = with_dense_rows<T>(k_in),
                  v = with_dense_rows<T>(v_in);
  const FlashProblem<T> p = flash_problem(q, k, v, s.mask, opt, s.scale);
  auto gradient = [&](const Tensor<T>& given, const Tensor<T>& x, std::int64_t rows,
                      std::int64_t cols) {
    if (given.defined()) return given;
    Shape full = p.batch_shape;
    full.push_back(rows);
    full.push_back(cols);
    return x.shape() == full ? empty_gradient_like<T>(x) : empty<T>(full, x.device());
  };
  const Tensor<T> dq = gradient(into.dq, q_in, p.Lq, p.E);
  const Tensor<T> dk = gradient(into.dk, k_in, p.Lk, p.E);
  const Tensor<T> dv = gradient(into.dv, v_in, p.Lk, p.Ev);
  const Tensor<T> dout = with_dense_rows<T>(g);
  const Shape& batch = p.batch_shape;
  const FlashGradients<T> io{batch_rows<const T>(s.out, batch), batch_rows<const T>(dout, batch),
                             batch_rows<T>(dq, batch), batch_rows<T>(dk, batch),
                             batch_rows<T>(dv, batch)};
  flash_attention_backward<T>(p, io, s.lse.data());
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

/// q, k and v of qkv [..., L, 3, H, E] (one projection's output viewed by heads) as views
/// [..., H, L, E].
template <Storable T>
std::array<Tensor<T>, 3> unpack_qkv(const Tensor<T>& qkv) {
  EMBER_CHECK(qkv.defined() && qkv.rank() >= 4 && qkv.size(-3) == 3,
              "ember: packed_qkv_attention: qkv must be [..., L, 3, H, E], got ",
              qkv.defined() ? qkv.shape().str() : std::string("an undefined tensor"));
  const int r = qkv.rank();
  auto part = [&](int i) { return qkv.select(r - 3, i).transpose(r - 4, r - 3); };
  return {part(0), part(1), part(2)};
}

/// packed_qkv_attention's forward: the output [..., L, H, E] (dense from the flash kernel), and
/// what the backward needs.
template <FloatingElement T>
std::pair<Tensor<T>, AttentionSaved<T>> packed_attention_forward(const Tensor<T>& qkv,
                                                                 const Tensor<bool>& mask,
                                                                 const AttentionOptions& opt) {
  const auto [q, k, v] = unpack_qkv(qkv);
  auto [out, saved] = attention_forward<T>(q, k, v, mask, opt);
  const int r = out.rank();
  return {out.transpose(r - 3, r - 2), std::move(saved)};
}

/// packed_qkv_attention's backward: the gradient of qkv given the output's gradient g
/// [..., L, H, E]. The flash kernel writes dq, dk and dv straight into its parts.
template <FloatingElement T>
Tensor<T> packed_attention_backward(const Tensor<T>& qkv, const AttentionSaved<T>& s,
                                    const AttentionOptions& opt, const Tensor<T>& g) {
  const auto [q, k, v] = unpack_qkv(qkv);
  const Tensor<T> dqkv = empty<T>(qkv.shape(), qkv.device());
  auto [dq, dk, dv] = unpack_qkv(dqkv);
  const int r = g.rank();
  const Tensor<T> g_heads = g.transpose(r - 3, r - 2);
  if (s.kernel == AttentionKernel::flash) {
    flash_backward<T>(q, k, v, s, opt, g_heads, {dq, dk, dv});  // every element of dqkv
    return dqkv;
  }
  const auto [gq, gk, gv] = attention_backward<T>(q, k, v, s, opt, g_heads);
  dq.copy_(gq);
  dk.copy_(gk);
  dv.copy_(gv);
  return dqkv;
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

/// Self-attention over the q, k and v of one projection, as FlashAttention's qkvpacked form:
/// qkv [..., L, 3, H, E] (a [..., L, 3 H E] projection viewed by heads) -> [..., L, H, E],
/// which reshapes to [..., L, H E] without a copy. The same as scaled_dot_product_attention of
/// qkv's parts q, k and v as [..., H, L, E] (the mask broadcasting to [..., H, L, L], dropout
/// dropping the same elements), without copying the heads in or out: on the CPU the flash
/// kernel reads q, k and v in place and its backward writes their gradients into one tensor.
template <FloatingElement T>
Tensor<T> packed_qkv_attention(const Tensor<T>& qkv, const Tensor<bool>& mask = {},
                               const AttentionOptions& opt = {}) {
  return ops::packed_attention_forward<T>(qkv, mask, opt).first;
}
}  // namespace ember::inline EMBER_UNIT_KIND
