// scaled_dot_product_attention on Tensors: softmax(q k^T scale, masked) v, with dropout on the
// attention probabilities, as PyTorch's function of that name (its math, not a flash kernel).
//
//   q [..., Lq, E], k [..., Lk, E], v [..., Lk, Ev] -> [..., Lq, Ev]; batch dims broadcast
//   mask: Tensor<bool> broadcastable to [..., Lq, Lk], true where a query may attend (undefined:
//         everywhere); causal: query i attends to keys j <= i + Lk - Lq
//   scale: 1 / sqrt(E) unless given; dropout_p with Philox (seed, offset) as ops/dropout.hpp
// Forward: a batched GEMM for the scores, then scale + mask + softmax + dropout a row at a time
// in one launch (attention_rows.hpp; on CUDA for rows of up to 32,768 keys), else in one
// logsumexp reduction and one elementwise pass (the mask and the causal condition are computed
// inside the expression from a lazy row and column index: no mask tensor is built), then a
// batched GEMM with v. A row whose every key is masked gives zeros, not NaN.
// Backward (attention_backward): two GEMMs for dv and dP, one row pass (else one reduction and
// one pass) for the softmax and dropout backward (the probabilities before dropout recomputed from
// the scores and the logsumexp, the dropout mask from its seed), two GEMMs for dq and dk.
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

namespace ember {

struct AttentionOptions {
  double dropout_p = 0.0;
  bool causal = false;
  std::optional<double> scale;  // default 1 / sqrt(E)
  std::uint64_t seed = 0, offset = 0;
};

namespace ops {

/// What the backward needs from the forward.
template <Storable T>
struct AttentionSaved {
  Tensor<T> scores;      // q k^T, unscaled, [..., Lq, Lk]
  Tensor<acc_t<T>> lse;  // logsumexp of the masked, scaled scores, kept
  Tensor<T> probs;       // after dropout: what multiplied v
  Tensor<bool> mask;     // as given, or a single true
  double scale = 1;
};

/// The masked, scaled logits of `scores` as a lazy expression (-inf where masked).
template <Storable T>
auto attention_logits(const Tensor<T>& scores, const Tensor<bool>& mask, bool causal,
                      double scale) {
  const int r = scores.rank();
  const std::int64_t Lq = scores.size(r - 2), Lk = scores.size(r - 1);
  const Device dev = scores.device();
  const expr::Generated<std::int64_t, expr::ArangeGen> row(Shape{Lq, 1}, dev, {0.0, 1.0});
  const expr::Generated<std::int64_t, expr::ArangeGen> col(Shape{Lk}, dev, {0.0, 1.0});
  // Not causal: a shift that every column satisfies.
  const std::int64_t shift = causal ? Lk - Lq : Lk;
  return where(logical_and(col <= row + shift, mask), scores * scale,
               -std::numeric_limits<double>::infinity());
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

/// The forward, keeping what the backward needs.
template <FloatingElement T, class Mode = exec::mode>
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
  s.scores = matmul<T, Mode>(q, k.transpose(-1, -2));
  if (attention_rows_apply(s.scores)) {
    std::tie(s.probs, s.lse) = attention_softmax_rows<T, Mode>(
        s.scores, s.mask, opt.causal, s.scale, DropoutOptions{opt.dropout_p, opt.seed, opt.offset});
    return {matmul<T, Mode>(s.probs, v), s};
  }
  const int r = s.scores.rank();
  const auto logits = attention_logits(s.scores, s.mask, opt.causal, s.scale);
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
  return {matmul<T, Mode>(s.probs, v), s};
}

/// The gradients of q, k and v, given the output's gradient g.
template <FloatingElement T, class Mode = exec::mode>
std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> attention_backward(
    const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v, const AttentionSaved<T>& s,
    const AttentionOptions& opt, const Tensor<T>& g) {
  using A = acc_t<T>;
  const int r = s.scores.rank();
  // dv = P^T g, dP = g v^T (summed later over broadcast batch dims by sum_to).
  const Tensor<T> dv = matmul<T, Mode>(s.probs.transpose(-1, -2), g);
  const Tensor<T> dp = matmul<T, Mode>(g, v.transpose(-1, -2));
  if (attention_rows_apply(s.scores)) {
    const Tensor<T> dlogits = attention_softmax_rows_backward<T, Mode>(
        s.scores, s.mask, opt.causal, s.scale, s.lse, dp,
        DropoutOptions{opt.dropout_p, opt.seed, opt.offset});
    return {sum_to<T, Mode>(matmul<T, Mode>(dlogits, k), q.shape()),
            sum_to<T, Mode>(matmul<T, Mode>(dlogits.transpose(-1, -2), q), k.shape()),
            sum_to<T, Mode>(dv, v.shape())};
  }
  const double inf = std::numeric_limits<double>::infinity();
  const auto logits = attention_logits(s.scores, s.mask, opt.causal, s.scale);
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
  const Tensor<T> dq = matmul<T, Mode>(dlogits, k);
  const Tensor<T> dk = matmul<T, Mode>(dlogits.transpose(-1, -2), q);
  return {sum_to<T, Mode>(dq, q.shape()), sum_to<T, Mode>(dk, k.shape()),
          sum_to<T, Mode>(dv, v.shape())};
}

}  // namespace ops

/// softmax(q k^T scale, masked) v with dropout (see the top of this header).
template <FloatingElement T, class Mode = exec::mode>
Tensor<T> scaled_dot_product_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                       const Tensor<bool>& mask = {},
                                       const AttentionOptions& opt = {}) {
  return ops::attention_forward<T, Mode>(q, k, v, mask, opt).first;
}

}  // namespace ember
