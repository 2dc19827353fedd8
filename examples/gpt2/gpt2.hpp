// GPT-2 (Radford et al., 2019) as Hugging Face's transformers builds it (GPT2LMHeadModel):
// pre-LayerNorm blocks, causal self-attention from one fused q/k/v projection, the tanh-form GELU,
// learned absolute positions, and the LM head tied to the token embedding.
//
//   gpt2::GPT2LMHeadModel<float> model(gpt2::config_by_name("124M"));   // 124,439,808 parameters
//   ember::Var<float> logits = model(idx);              // idx [B, T] int64 -> [B, T, vocab]
//   ember::Var<float> loss = model.loss(idx, targets);  // mean cross entropy of the next tokens
//
// Module names are Hugging Face's (transformer.wte, transformer.h.3.attn.c_attn,
// transformer.h.3.mlp.c_proj, transformer.ln_f, ...), so its safetensors load by name:
//   ember::io::load(model, "model.safetensors", {.allow_unexpected = true});
// (allow_unexpected for the attention-mask buffers older files carry, and for lm_head.weight,
// which is transformer.wte.weight itself here: the head reads the embedding table). Hugging
// Face's projections are Conv1D modules, whose weight is [in, out] (the transpose of a Linear's);
// gpt2::Conv1D keeps that layout and multiplies by the weight's transposed view, read in place.
//
// Initialisation is Hugging Face's _init_weights: weights N(0, 0.02), biases zero, LayerNorm one
// and zero, and each residual projection (attn.c_proj, mlp.c_proj) N(0, 0.02 / sqrt(2 n_layer)),
// GPT-2's scaling of the paths that add into the residual stream.
//
// Model code, as a user writes it: no build plumbing.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <ember/ember.hpp>

namespace gpt2 {

struct GPT2Config {
  std::int64_t vocab_size = 50257;
  std::int64_t n_positions = 1024;  // the longest context
  std::int64_t n_embd = 768;
  std::int64_t n_layer = 12;
  std::int64_t n_head = 12;
  double layer_norm_eps = 1e-5;
  double dropout = 0.1;  // embd_pdrop, attn_pdrop and resid_pdrop (one value, as GPT-2's)
  double init_std = 0.02;

  // The released sizes (Hugging Face's gpt2 and gpt2-medium) and two small ones for the CPU.
  static GPT2Config gpt2_124m() { return {}; }
  static GPT2Config gpt2_350m() { return {.n_embd = 1024, .n_layer = 24, .n_head = 16}; }
  static GPT2Config tiny() { return {.n_positions = 128, .n_embd = 64, .n_layer = 2, .n_head = 4}; }
  static GPT2Config mini() {
    return {.n_positions = 256, .n_embd = 256, .n_layer = 4, .n_head = 4};
  }
};

inline constexpr std::array<std::string_view, 4> kConfigNames{"tiny", "mini", "124M", "350M"};

/// "tiny", "mini", "124M" or "350M"; anything else is an ember::Error listing them.
inline GPT2Config config_by_name(std::string_view name) {
  if (name == "tiny") return GPT2Config::tiny();
  if (name == "mini") return GPT2Config::mini();
  if (name == "124M") return GPT2Config::gpt2_124m();
  if (name == "350M") return GPT2Config::gpt2_350m();
  std::string valid;
  for (auto n : kConfigNames) valid += (valid.empty() ? "" : ", ") + std::string(n);
  ember::fail("gpt2: unknown configuration '", std::string(name), "' (valid: ", valid, ")");
}

/// The keys and values of the tokens a generation has seen, one pair per block ([B, H, t, D]):
/// each new token attends to them instead of recomputing the context, so it costs O(t), not a
/// forward over all t tokens. Empty at first; forward(idx, &cache) appends.
template <ember::FloatingElement T = float>
struct KVCache {
  std::vector<ember::Var<T>> keys, values;
  std::int64_t length = 0;  // tokens seen
};

/// Hugging Face's Conv1D: y = x W + b with W [in, out]; `act` applied in the same call.
template <ember::FloatingElement T = float>
class Conv1D : public ember::nn::Module {
 public:
  ember::Var<T> weight;  // [in, out]
  ember::Var<T> bias;    // [out]

  Conv1D(std::int64_t in, std::int64_t out, double std, ember::Device device)
      : weight(ember::param(ember::nn::init::normal<T>(ember::Shape{in, out}, 0.0, std, device))),
        bias(ember::param(ember::nn::init::zeros<T>(ember::Shape{out}, device))) {
    register_parameter("weight", weight);
    register_parameter("bias", bias);
  }

  ember::Var<T> forward(const ember::Var<T>& x,
                        ember::Activation act = ember::Activation::none) const {
    // x [..., in] as rows times W [in, out]: the weight's gradient comes out of one GEMM as
    // [in, out] (x^T dy), in its own layout, where linear(x, W^T) would make it [out, in] and
    // copy it through the transpose.
    const ember::Shape shape = x.shape();
    const std::int64_t in = weight.shape()[0], out = weight.shape()[1];
    const ember::Var<T> y = ember::matmul(x.reshape(ember::Shape{-1, in}), weight);
    ember::Shape out_shape = shape;
    out_shape[shape.rank() - 1] = out;
    if (act == ember::Activation::gelu_tanh) {
      return ember::Var<T>(ember::gelu_tanh(y + bias)).reshape(out_shape);
    }
    return ember::Var<T>(y + bias).reshape(out_shape);
  }
};

/// attn: causal self-attention; q, k and v come from one projection (c_attn) as views.
template <ember::FloatingElement T = float>
class GPT2Attention : public ember::nn::Module {
 public:
  Conv1D<T> c_attn;  // [C] -> [3C]: q, k, v
  Conv1D<T> c_proj;  // [C] -> [C]
  ember::nn::Dropout<T> resid_dropout;
  std::int64_t n_head;
  double attn_dropout;  // on the attention probabilities, inside the fused kernel

  GPT2Attention(const GPT2Config& c, ember::Device device)
      : c_attn(c.n_embd, 3 * c.n_embd, c.init_std, device),
        c_proj(c.n_embd, c.n_embd, c.init_std / std::sqrt(2.0 * c.n_layer), device),
        resid_dropout(c.dropout),
        n_head(c.n_head),
        attn_dropout(c.dropout) {
    EMBER_CHECK(c.n_head > 0 && c.n_embd % c.n_head == 0, "gpt2: n_embd ", c.n_embd,
                " must be a multiple of n_head ", c.n_head);
    register_module("c_attn", c_attn);
    register_module("c_proj", c_proj);
    register_module("resid_dropout", resid_dropout);
  }

  /// x [B, T, C] -> [B, T, C]. With `cache` (block i's slots of a KVCache): x's tokens follow
  /// the cached ones, attend to them too, and their keys and values are appended.
  ember::Var<T> forward(const ember::Var<T>& x, ember::Var<T>* cached_k = nullptr,
                        ember::Var<T>* cached_v = nullptr) const {
    const std::int64_t B = x.shape()[0], T_ = x.shape()[1], C = x.shape()[2], H = n_head;
    // [B, T, 3C] viewed as [B, T, 3, H, D].
    const ember::Var<T> qkv = c_attn.forward(x).reshape(ember::Shape{B, T_, 3, H, C / H});
    const std::int64_t past = cached_k != nullptr && cached_k->defined() ? cached_k->shape()[2] : 0;
    ember::AttentionOptions opt;
    opt.causal = true;
    if (is_training() && attn_dropout > 0) {
      opt.dropout_p = attn_dropout;
      std::tie(opt.seed, opt.offset) = ember::nn::reserve_random(B * H * T_ * (past + T_));
    }
    if (cached_k == nullptr) {  // q, k and v read in place -> [B, T, H, D]
      const ember::Var<T> y = ember::packed_qkv_attention<T>(qkv, ember::Tensor<bool>(), opt);
      return resid_dropout.forward(c_proj.forward(y.reshape(ember::Shape{B, T_, C})));
    }
    // With a cache: q, k and v as qkv's slices [B, H, T, D], the keys after the cached ones.
    auto part = [&](int i) { return qkv.select(2, i).transpose(1, 2); };
    ember::Var<T> k = part(1), v = part(2);
    if (past > 0) {
      k = ember::cat({*cached_k, k}, 2);
      v = ember::cat({*cached_v, v}, 2);
    }
    *cached_k = k, *cached_v = v;
    // The new queries are the last of the keys: query i sees key j <= i + Lk - Lq.
    opt.causal_align = ember::CausalAlign::lower_right;
    const ember::Var<T> y =
        ember::scaled_dot_product_attention<T>(part(0), k, v, ember::Tensor<bool>(), opt);
    return resid_dropout.forward(c_proj.forward(y.transpose(1, 2).reshape(ember::Shape{B, T_, C})));
  }
};

/// mlp: c_fc, the tanh-form GELU (fused into c_fc's product), c_proj.
template <ember::FloatingElement T = float>
class GPT2MLP : public ember::nn::Module {
 public:
  Conv1D<T> c_fc;    // [C] -> [4C]
  Conv1D<T> c_proj;  // [4C] -> [C]
  ember::nn::Dropout<T> dropout;

  GPT2MLP(const GPT2Config& c, ember::Device device)
      : c_fc(c.n_embd, 4 * c.n_embd, c.init_std, device),
        c_proj(4 * c.n_embd, c.n_embd, c.init_std / std::sqrt(2.0 * c.n_layer), device),
        dropout(c.dropout) {
    register_module("c_fc", c_fc);
    register_module("c_proj", c_proj);
    register_module("dropout", dropout);
  }

  ember::Var<T> forward(const ember::Var<T>& x) const {
    return dropout.forward(c_proj.forward(c_fc.forward(x, ember::Activation::gelu_tanh)));
  }
};

/// h.i: x + attn(ln_1(x)), then + mlp(ln_2(.)).
template <ember::FloatingElement T = float>
class GPT2Block : public ember::nn::Module {
 public:
  ember::nn::LayerNorm<T> ln_1;
  GPT2Attention<T> attn;
  ember::nn::LayerNorm<T> ln_2;
  GPT2MLP<T> mlp;

  GPT2Block(const GPT2Config& c, ember::Device device)
      : ln_1(c.n_embd, {.eps = c.layer_norm_eps}, device),
        attn(c, device),
        ln_2(c.n_embd, {.eps = c.layer_norm_eps}, device),
        mlp(c, device) {
    register_module("ln_1", ln_1);
    register_module("attn", attn);
    register_module("ln_2", ln_2);
    register_module("mlp", mlp);
  }

  ember::Var<T> forward(const ember::Var<T>& x, ember::Var<T>* cached_k = nullptr,
                        ember::Var<T>* cached_v = nullptr) const {
    const ember::Var<T> h = x + attn.forward(ln_1.forward(x), cached_k, cached_v);
    return h + mlp.forward(ln_2.forward(h));
  }
};

/// transformer: token and position embeddings, the blocks, the final LayerNorm.
template <ember::FloatingElement T = float>
class GPT2Model : public ember::nn::Module {
 public:
  ember::nn::Embedding<T> wte;  // [vocab, C]
  ember::nn::Embedding<T> wpe;  // [n_positions, C]
  ember::nn::Dropout<T> drop;
  ember::nn::ModuleList<GPT2Block<T>> h;
  ember::nn::LayerNorm<T> ln_f;

  GPT2Model(const GPT2Config& c, ember::Device device)
      : wte(c.vocab_size, c.n_embd, device),
        wpe(c.n_positions, c.n_embd, device),
        drop(c.dropout),
        ln_f(c.n_embd, {.eps = c.layer_norm_eps}, device) {
    ember::nn::init::normal_(wte.weight, 0.0, c.init_std);
    ember::nn::init::normal_(wpe.weight, 0.0, c.init_std);
    for (std::int64_t i = 0; i < c.n_layer; ++i) h.emplace_back(c, device);
    register_module("wte", wte);
    register_module("wpe", wpe);
    register_module("drop", drop);
    register_module("h", h);
    register_module("ln_f", ln_f);
  }

  /// idx [B, T] int64 -> the final hidden states [B, T, C]. With `cache`, idx's tokens come
  /// after the cached ones (positions from cache->length on), and the cache grows by T.
  ember::Var<T> forward(const ember::Tensor<std::int64_t>& idx, KVCache<T>* cache = nullptr) const {
    const std::int64_t start = cache ? cache->length : 0, end = start + idx.size(1);
    EMBER_CHECK(end <= wpe.num_embeddings, "gpt2: sequence length ", end, " exceeds n_positions ",
                wpe.num_embeddings);
    ember::Var<T> x =
        drop.forward(wte.forward(idx) +
                     wpe.forward(ember::arange<std::int64_t>(
                         static_cast<double>(start), static_cast<double>(end), 1, idx.device())));
    if (cache) {
      cache->keys.resize(h.size());
      cache->values.resize(h.size());
      cache->length = end;
    }
    for (std::size_t i = 0; i < h.size(); ++i) {
      x = cache ? h[i].forward(x, &cache->keys[i], &cache->values[i]) : h[i].forward(x);
    }
    return ln_f.forward(x);
  }
};

/// GPT2LMHeadModel: the transformer and the LM head, whose weight is the token embedding's.
template <ember::FloatingElement T = float>
class GPT2LMHeadModel : public ember::nn::Module {
 public:
  GPT2Config config;
  GPT2Model<T> transformer;

  explicit GPT2LMHeadModel(const GPT2Config& c, ember::Device device = ember::Device::cpu())
      : config(c), transformer(c, device) {
    register_module("transformer", transformer);
  }

  /// idx [B, T] int64 -> logits [B, T, vocab]; with `cache`, of tokens that follow the cached
  /// ones (generation: see KVCache).
  ember::Var<T> forward(const ember::Tensor<std::int64_t>& idx, KVCache<T>* cache = nullptr) const {
    return ember::linear(transformer.forward(idx, cache), transformer.wte.weight);
  }
  ember::Var<T> operator()(const ember::Tensor<std::int64_t>& idx) const { return forward(idx); }

  /// The mean cross entropy of predicting targets [B, T] (the next token at each position;
  /// -100 ignored) from idx [B, T].
  ember::Var<T> loss(const ember::Tensor<std::int64_t>& idx,
                     const ember::Tensor<std::int64_t>& targets) const {
    const ember::Var<T> logits = forward(idx);
    const std::int64_t V = logits.shape()[2];
    return ember::cross_entropy(logits.reshape(ember::Shape{-1, V}),
                                targets.reshape(ember::Shape{-1}));
  }
};

}  // namespace gpt2
