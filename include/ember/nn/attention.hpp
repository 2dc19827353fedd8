// nn::MultiheadSelfAttention: PyTorch's nn.MultiheadAttention used as self-attention
// (query = key = value = x, batch first), with its parameter names and initialisation, so state
// dicts map one to one: in_proj_weight [3E, E] (xavier_uniform; rows q, k, v), in_proj_bias [3E]
// (zeros) and out_proj, an nn::Linear (out_proj.weight as Linear's default, out_proj.bias zeros).
//
//   forward(x [B, S, E], mask = {}, causal = false) -> [B, S, E]
//   qkv = linear(x, in_proj_weight, in_proj_bias) viewed as [B, S, 3, H, E / H]
//   out_proj(packed_qkv_attention(qkv, mask, causal, dropout) viewed as [B, S, E])
// (packed_qkv_attention: scaled_dot_product_attention of qkv's q, k and v, read in place.)
//
// The mask follows scaled_dot_product_attention's boolean convention: a Tensor<bool> that
// broadcasts to [B, H, S, S], TRUE WHERE A QUERY MAY ATTEND (undefined: everywhere). This is the
// opposite of nn.MultiheadAttention's key_padding_mask and boolean attn_mask (true = ignore):
// pass ~key_padding_mask there, or key_padding(keep) here, keep [B, S] true for real tokens.
// causal = true also hides every later position. A query row that can attend to nothing gives
// zeros (PyTorch gives NaN). Attention dropout (training only) draws its Philox (seed, offset)
// from nn::reserve_random, as nn::Dropout.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>

#include "../autograd/attention.hpp"
#include "../autograd/matmul.hpp"
#include "init.hpp"
#include "linear.hpp"
#include "module.hpp"

namespace ember::nn {

/// nn::MultiheadSelfAttention's settings beyond its sizes, nn.MultiheadAttention's keyword
/// arguments by name: `{.dropout = 0.1}`, `{.bias = false}`.
struct MultiheadSelfAttentionOptions {
  double dropout = 0.0;  // on the attention probabilities, in training
  bool bias = true;      // in_proj_bias and out_proj.bias
};

template <FloatingElement T = float>
class MultiheadSelfAttention : public Module {
 public:
  Var<T> in_proj_weight;
  Var<T> in_proj_bias;  // undefined when built without biases
  Linear<T> out_proj;
  std::int64_t embed_dim, num_heads, head_dim;
  double dropout;

  template <class Mode = exec::mode>
  MultiheadSelfAttention(std::int64_t embed, std::int64_t heads,
                         const MultiheadSelfAttentionOptions& opt = {},
                         Device device = Device::cpu())
      : out_proj(checked_embed(embed, heads, opt.dropout), embed, {.bias = opt.bias}, device),
        embed_dim(embed),
        num_heads(heads),
        head_dim(embed / heads),
        dropout(opt.dropout) {
    in_proj_weight = param(init::xavier_uniform<T>(Shape{3 * embed, embed}, 1.0, device));
    register_parameter("in_proj_weight", in_proj_weight);
    if (opt.bias) {
      in_proj_bias = param(init::zeros<T>(Shape{3 * embed}, device));
      register_parameter("in_proj_bias", in_proj_bias);
      out_proj.bias = param(init::zeros<T>(Shape{embed}, device));
    }
    register_module("out_proj", out_proj);
  }

  /// x [B, S, E] -> [B, S, E]; `mask` (true = attend) broadcasts to [B, H, S, S].
  template <class Mode = exec::mode>
  Var<T> forward(const Var<T>& x, const Tensor<bool>& mask = {}, bool causal = false) const {
    const Shape& s = x.shape();
    EMBER_CHECK(s.rank() == 3 && s[2] == embed_dim,
                "ember: nn::MultiheadSelfAttention: input must be [B, S, ", embed_dim, "], got ",
                s.str());
    const std::int64_t B = s[0], S = s[1], H = num_heads, D = head_dim;
    if (mask.defined()) check_mask(mask.shape(), B, S);
    const Var<T> qkv = in_proj_bias.defined()
                           ? linear<Var<T>, Var<T>, Var<T>>(x, in_proj_weight, in_proj_bias)
                           : linear<Var<T>, Var<T>, Tensor<T>>(x, in_proj_weight, Tensor<T>());
    AttentionOptions opt;
    opt.causal = causal;
    if (is_training() && dropout > 0) {
      opt.dropout_p = dropout;
      std::tie(opt.seed, opt.offset) = reserve_random(B * H * S * S);
    }
    // [B, S, 3E] viewed by heads -> [B, S, H, D] -> [B, S, E].
    const Var<T> att = packed_qkv_attention<T>(qkv.reshape(Shape{B, S, 3, H, D}), mask, opt);
    return out_proj.forward(att.reshape(Shape{B, S, embed_dim}));
  }
  template <class Mode = exec::mode>
  Var<T> operator()(const Var<T>& x, const Tensor<bool>& mask = {}, bool causal = false) const {
    return forward(x, mask, causal);
  }

  /// The attention mask for a key-padding mask keep [B, S] (true for real tokens, false for
  /// padding): keep viewed as [B, 1, 1, S], so every query attends to the real keys only.
  /// (A template, like every function that may evaluate: reshape copies a strided mask.)
  template <class Mode = exec::mode>
  static Tensor<bool> key_padding(const Tensor<bool>& keep) {
    EMBER_CHECK(keep.defined() && keep.rank() == 2,
                "ember: nn::MultiheadSelfAttention: a key-padding mask is [B, S], got ",
                keep.defined() ? keep.shape().str() : std::string("undefined"));
    return keep.reshape(Shape{keep.size(0), 1, 1, keep.size(1)});
  }

 private:
  /// The embedding dimension, after checking the arguments (out_proj is built first).
  static std::int64_t checked_embed(std::int64_t embed, std::int64_t heads, double dropout_p) {
    EMBER_CHECK(embed > 0 && heads > 0 && embed % heads == 0,
                "ember: nn::MultiheadSelfAttention: embed_dim ", embed,
                " must be a positive multiple of num_heads ", heads);
    EMBER_CHECK(dropout_p >= 0 && dropout_p < 1,
                "ember: nn::MultiheadSelfAttention: dropout must be in [0, 1), got ", dropout_p);
    return embed;
  }
  void check_mask(const Shape& m, std::int64_t B, std::int64_t S) const {
    const std::int64_t want[4] = {B, num_heads, S, S};
    bool fits = m.rank() <= 4;
    for (int i = 0; fits && i < m.rank(); ++i) {
      const std::int64_t e = m[m.rank() - 1 - i], w = want[3 - i];
      fits = e == 1 || e == w;
    }
    EMBER_CHECK(fits, "ember: nn::MultiheadSelfAttention: mask ", m.str(),
                " does not broadcast to [B, H, S, S] = [", B, ", ", num_heads, ", ", S, ", ", S,
                "]");
  }
};

}  // namespace ember::nn
