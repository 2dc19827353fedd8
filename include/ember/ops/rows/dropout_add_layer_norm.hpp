// dropout_add_layer_norm: y = layer_norm(dropout(x) + residual) over the last dimension, in one
// pass over each row (ops/rows/layer_norm_rows.hpp): the ending of every sublayer of a post-LN
// transformer (BERT's attention output and feed-forward output).
//
// Unfused this is a dropout pass, an add, and the normalisation; fused, the sum
// s = keep(x) / (1 - p) + residual is formed once, rounded to T (as the unfused sum would be),
// kept for the backward, and normalised while in cache. The dropout drops the elements
// ember::dropout(x, p, true, seed, offset) would. Backward: one row pass for dx and dresidual,
// and one column reduction each for dweight and dbias.
#pragma once

#include <cstdint>
#include <tuple>

#include "../../core/dtype.hpp"
#include "../../core/shape.hpp"
#include "../../tensor/tensor.hpp"
#include "../dropout.hpp"
#include "layer_norm_rows.hpp"

namespace ember::ops::inline EMBER_UNIT_KIND {

/// Checks dropout_add_layer_norm's operands; returns the row length.
template <FloatingElement T>
std::int64_t dropout_add_norm_cols(const Tensor<T>& x, const Tensor<T>& residual,
                                   const Tensor<T>& weight, const Tensor<T>& bias,
                                   const DropoutOptions& dropout, double eps) {
  EMBER_CHECK(x.rank() >= 1,
              "ember: dropout_add_layer_norm: the input must have rank 1 or more, got a scalar");
  EMBER_CHECK(residual.defined() && residual.shape() == x.shape(),
              "ember: dropout_add_layer_norm: residual ",
              residual.defined() ? residual.shape().str() : "undefined", " for an input of shape ",
              x.shape().str());
  const std::int64_t cols = x.size(x.rank() - 1);
  for (const Tensor<T>* p : {&weight, &bias}) {
    EMBER_CHECK(!p->defined() || p->shape() == Shape{cols},
                "ember: dropout_add_layer_norm: weight and bias must be [", cols,
                "] (the input's last dimension), got ", p->shape().str(), " for input ",
                x.shape().str());
  }
  for (const Tensor<T>* p : {&residual, &weight, &bias}) {
    EMBER_CHECK(!p->defined() || p->device() == x.device(),
                "ember: dropout_add_layer_norm: operands on ", x.device().str(), " and ",
                p->device().str());
  }
  EMBER_CHECK(dropout.p >= 0 && dropout.p <= 1,
              "ember: dropout_add_layer_norm: dropout p must be in [0, 1], got ", dropout.p);
  EMBER_CHECK(eps > 0, "ember: dropout_add_layer_norm: eps must be positive, got ", eps);
  return cols;
}

/// The forward: y, and what the backward (row_norm_backward) needs.
template <FloatingElement T>
std::tuple<Tensor<T>, RowNormSaved<T>> dropout_add_layer_norm_forward(
    const Tensor<T>& x, const Tensor<T>& residual, const Tensor<T>& weight, const Tensor<T>& bias,
    double eps, const DropoutOptions& dropout) {
  const std::int64_t cols = dropout_add_norm_cols(x, residual, weight, bias, dropout, eps);
  return row_norm_forward<T>(x, residual, weight, bias, cols, eps, dropout);
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// layer_norm(dropout(x) + residual) over the last dimension, in one pass (see the top of this
/// header). weight and bias ([x.size(-1)]) are optional; `dropout.p` = 0 drops nothing.
template <FloatingElement T>
Tensor<T> dropout_add_layer_norm(const Tensor<T>& x, const Tensor<T>& residual,
                                 const Tensor<T>& weight, const Tensor<T>& bias, double eps = 1e-5,
                                 const DropoutOptions& dropout = {}) {
  return std::get<0>(
      ops::dropout_add_layer_norm_forward<T>(x, residual, weight, bias, eps, dropout));
}
}  // namespace ember::inline EMBER_UNIT_KIND
