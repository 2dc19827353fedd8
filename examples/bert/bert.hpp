// The BERT encoder (Devlin et al., 2018) as Hugging Face's transformers builds it (BertModel):
// post-LayerNorm blocks, exact (erf) GELU, LayerNorm eps 1e-12, learned absolute positions.
//
//   bert::BertModel<float> model(bert::config_by_name("base"));   // 109,482,240 parameters
//   auto out = model(input_ids, token_type_ids, attention_mask);  // all [B, S] int64
//   out.last_hidden_state;                                         // [B, S, H]
//   out.pooler_output;                                             // [B, H]
//
// Module names are Hugging Face's (embeddings.word_embeddings,
// encoder.layer.3.attention.self.query, encoder.layer.3.output.LayerNorm, pooler.dense, ...), so
// their safetensors load by name:
//   ember::io::load(model, "model.safetensors", {.allow_unexpected = true});
// (allow_unexpected for the `embeddings.position_ids` buffer that older files carry; a file saved
// from BertForPreTraining and friends names the encoder "bert.", so pass .prefix = "bert.").
//
// attention_mask is Hugging Face's: 1 for a real token, 0 for padding. It becomes the boolean mask
// of ember::scaled_dot_product_attention (true = may attend), viewed as [B, 1, 1, S]. Hugging Face
// adds a large negative number instead; the two agree wherever a query has a key to attend to,
// which [CLS] guarantees.
//
// Initialisation is Hugging Face's _init_weights: Linear and Embedding weights N(0, 0.02), biases
// zero, LayerNorm weight one and bias zero; the word embeddings' [PAD] row (pad_token_id) starts
// at zeros and gets no gradient (padding_idx, as Hugging Face's nn.Embedding).
//
// Model code, as a user writes it: no build plumbing. In a CUDA build a program compiles it in
// its .cu files (docs/design.md, "One source, two kinds of translation unit").
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <ember/ember.hpp>

namespace bert {

struct BertConfig {
  std::int64_t vocab_size = 30522;
  std::int64_t hidden = 768;
  std::int64_t layers = 12;
  std::int64_t heads = 12;
  std::int64_t intermediate = 3072;
  std::int64_t max_positions = 512;
  std::int64_t type_vocab = 2;
  double layer_norm_eps = 1e-12;
  /// hidden_dropout_prob and attention_probs_dropout_prob (one value, as in every released BERT).
  double dropout = 0.1;
  /// Hugging Face's initializer_range.
  double init_std = 0.02;
  /// The [PAD] id: the word embeddings' padding_idx (0 in every released BERT vocabulary).
  std::int64_t pad_token_id = 0;

  static BertConfig tiny() { return {.hidden = 128, .layers = 2, .heads = 2, .intermediate = 512}; }
  static BertConfig mini() {
    return {.hidden = 256, .layers = 4, .heads = 4, .intermediate = 1024};
  }
  static BertConfig small() {
    return {.hidden = 512, .layers = 4, .heads = 8, .intermediate = 2048};
  }
  static BertConfig base() {
    return {.hidden = 768, .layers = 12, .heads = 12, .intermediate = 3072};
  }
  static BertConfig large() {
    return {.hidden = 1024, .layers = 24, .heads = 16, .intermediate = 4096};
  }
};

inline constexpr std::array<std::string_view, 5> kConfigNames{"tiny", "mini", "small", "base",
                                                              "large"};

/// "tiny", "mini", "small", "base" or "large"; anything else is an ember::Error listing them.
inline BertConfig config_by_name(std::string_view name) {
  if (name == "tiny") return BertConfig::tiny();
  if (name == "mini") return BertConfig::mini();
  if (name == "small") return BertConfig::small();
  if (name == "base") return BertConfig::base();
  if (name == "large") return BertConfig::large();
  std::string valid;
  for (auto n : kConfigNames) valid += (valid.empty() ? "" : ", ") + std::string(n);
  ember::fail("bert: unknown configuration '", std::string(name), "' (valid: ", valid, ")");
}

namespace detail {

/// Hugging Face's Linear init: weight N(0, std), bias zero.
template <ember::FloatingElement T>
void init_linear(ember::nn::Linear<T>& lin, double std) {
  const ember::Device device = lin.weight.value().device();
  lin.weight = ember::param(ember::nn::init::normal<T>(lin.weight.shape(), 0.0, std, device));
  if (lin.bias.defined()) {
    lin.bias = ember::param(ember::nn::init::zeros<T>(lin.bias.shape(), device));
  }
}
template <ember::FloatingElement T>
void init_embedding(ember::nn::Embedding<T>& emb, double std) {
  ember::Tensor<T> table =
      ember::nn::init::normal<T>(emb.weight.shape(), 0.0, std, emb.weight.value().device());
  if (emb.padding_idx) {
    ember::Tensor<T> row =
        table.narrow(0, ember::ops::padding_row(emb.padding_idx, emb.num_embeddings), 1);
    row = 0.0;
  }
  emb.weight = ember::param(table);
}

}  // namespace detail

/// word + position + token-type embeddings, then LayerNorm and dropout.
template <ember::FloatingElement T = float>
class BertEmbeddings : public ember::nn::Module {
 public:
  ember::nn::Embedding<T> word_embeddings;
  ember::nn::Embedding<T> position_embeddings;
  ember::nn::Embedding<T> token_type_embeddings;
  ember::nn::LayerNorm<T> LayerNorm;  // NOLINT(readability-identifier-naming): HF's name
  ember::nn::Dropout<T> dropout;

  BertEmbeddings(const BertConfig& c, ember::Device device)
      : word_embeddings(c.vocab_size, c.hidden, device, c.pad_token_id),
        position_embeddings(c.max_positions, c.hidden, device),
        token_type_embeddings(c.type_vocab, c.hidden, device),
        LayerNorm(c.hidden, {.eps = c.layer_norm_eps}, device),
        dropout(c.dropout) {
    detail::init_embedding<T>(word_embeddings, c.init_std);
    detail::init_embedding<T>(position_embeddings, c.init_std);
    detail::init_embedding<T>(token_type_embeddings, c.init_std);
    register_module("word_embeddings", word_embeddings);
    register_module("position_embeddings", position_embeddings);
    register_module("token_type_embeddings", token_type_embeddings);
    register_module("LayerNorm", LayerNorm);
    register_module("dropout", dropout);
  }

  /// input_ids, token_type_ids [B, S] -> [B, S, H] (token_type_ids undefined: all zeros).
  ember::Var<T> forward(const ember::Tensor<std::int64_t>& input_ids,
                        const ember::Tensor<std::int64_t>& token_type_ids = {}) const {
    const std::int64_t B = input_ids.size(0), S = input_ids.size(1);
    EMBER_CHECK(S <= position_embeddings.num_embeddings, "bert: sequence length ", S,
                " exceeds max_positions ", position_embeddings.num_embeddings);
    const ember::Device device = word_embeddings.weight.value().device();
    std::vector<std::int64_t> pos(static_cast<std::size_t>(S));
    for (std::int64_t i = 0; i < S; ++i) pos[static_cast<std::size_t>(i)] = i;
    const ember::Tensor<std::int64_t> position_ids =
        ember::from_vector<std::int64_t>(pos, ember::Shape{1, S}, device);
    const ember::Tensor<std::int64_t> types =
        token_type_ids.defined()
            ? token_type_ids
            : ember::from_vector<std::int64_t>(
                  std::vector<std::int64_t>(static_cast<std::size_t>(B * S), 0), ember::Shape{B, S},
                  device);
    const ember::Var<T> sum = word_embeddings.forward(input_ids) +
                              position_embeddings.forward(position_ids) +
                              token_type_embeddings.forward(types);
    return dropout.forward(LayerNorm.forward(sum));
  }
};

/// attention.self: query, key, value and scaled dot-product attention over the heads.
template <ember::FloatingElement T = float>
class BertSelfAttention : public ember::nn::Module {
 public:
  ember::nn::Linear<T> query, key, value;
  std::int64_t num_heads, head_dim;
  double dropout;

  BertSelfAttention(const BertConfig& c, ember::Device device)
      : query(c.hidden, c.hidden, {}, device),
        key(c.hidden, c.hidden, {}, device),
        value(c.hidden, c.hidden, {}, device),
        num_heads(c.heads),
        head_dim(c.hidden / c.heads),
        dropout(c.dropout) {
    EMBER_CHECK(c.heads > 0 && c.hidden % c.heads == 0, "bert: hidden ", c.hidden,
                " must be a multiple of heads ", c.heads);
    for (auto* lin : {&query, &key, &value}) detail::init_linear<T>(*lin, c.init_std);
    register_module("query", query);
    register_module("key", key);
    register_module("value", value);
  }

  /// x [B, S, H] -> the heads' context, concatenated: [B, S, H]. mask: true = attend.
  ember::Var<T> forward(const ember::Var<T>& x, const ember::Tensor<bool>& mask) const {
    const std::int64_t B = x.shape()[0], S = x.shape()[1], H = num_heads, D = head_dim;
    auto heads = [&](const ember::nn::Linear<T>& lin) {  // [B, S, H*D] -> [B, H, S, D]
      return lin.forward(x).reshape(ember::Shape{B, S, H, D}).transpose(1, 2);
    };
    ember::AttentionOptions opt;
    if (is_training() && dropout > 0) {
      opt.dropout_p = dropout;
      std::tie(opt.seed, opt.offset) = ember::nn::reserve_random(B * H * S * S);
    }
    const ember::Var<T> ctx =
        ember::scaled_dot_product_attention<T>(heads(query), heads(key), heads(value), mask, opt);
    return ctx.transpose(1, 2).reshape(ember::Shape{B, S, H * D});
  }
};

/// dense, dropout, then LayerNorm(. + residual): attention.output and output.
template <ember::FloatingElement T = float>
class BertResidualOutput : public ember::nn::Module {
 public:
  ember::nn::Linear<T> dense;
  ember::nn::LayerNorm<T> LayerNorm;  // NOLINT(readability-identifier-naming): HF's name
  ember::nn::Dropout<T> dropout;

  BertResidualOutput(std::int64_t in, const BertConfig& c, ember::Device device)
      : dense(in, c.hidden, {}, device),
        LayerNorm(c.hidden, {.eps = c.layer_norm_eps}, device),
        dropout(c.dropout) {
    detail::init_linear<T>(dense, c.init_std);
    register_module("dense", dense);
    register_module("LayerNorm", LayerNorm);
    register_module("dropout", dropout);
  }

  ember::Var<T> forward(const ember::Var<T>& x, const ember::Var<T>& residual) const {
    // LayerNorm(dropout(dense(x)) + residual): one pass each way after the GEMM.
    return ember::nn::dropout_add_layer_norm<T>(dense.forward(x), residual, dropout, LayerNorm);
  }
};

template <ember::FloatingElement T = float>
class BertAttention : public ember::nn::Module {
 public:
  BertSelfAttention<T> self;
  BertResidualOutput<T> output;

  BertAttention(const BertConfig& c, ember::Device device)
      : self(c, device), output(c.hidden, c, device) {
    register_module("self", self);
    register_module("output", output);
  }

  ember::Var<T> forward(const ember::Var<T>& x, const ember::Tensor<bool>& mask) const {
    return output.forward(self.forward(x, mask), x);
  }
};

/// intermediate.dense with GELU (erf) fused into the product.
template <ember::FloatingElement T = float>
class BertIntermediate : public ember::nn::Module {
 public:
  ember::nn::Linear<T> dense;

  BertIntermediate(const BertConfig& c, ember::Device device)
      : dense(c.hidden, c.intermediate, {.activation = ember::Activation::gelu}, device) {
    detail::init_linear<T>(dense, c.init_std);
    register_module("dense", dense);
  }

  ember::Var<T> forward(const ember::Var<T>& x) const { return dense.forward(x); }
};

/// encoder.layer.N: attention, intermediate, output.
template <ember::FloatingElement T = float>
class BertLayer : public ember::nn::Module {
 public:
  BertAttention<T> attention;
  BertIntermediate<T> intermediate;
  BertResidualOutput<T> output;

  BertLayer(const BertConfig& c, ember::Device device)
      : attention(c, device), intermediate(c, device), output(c.intermediate, c, device) {
    register_module("attention", attention);
    register_module("intermediate", intermediate);
    register_module("output", output);
  }

  ember::Var<T> forward(const ember::Var<T>& x, const ember::Tensor<bool>& mask) const {
    const ember::Var<T> a = attention.forward(x, mask);
    return output.forward(intermediate.forward(a), a);
  }
};

/// encoder.layer: the layers, registered under their indices (an nn.ModuleList).
template <ember::FloatingElement T = float>
class BertLayerList : public ember::nn::Module {
 public:
  std::vector<std::unique_ptr<BertLayer<T>>> layers;

  BertLayerList(const BertConfig& c, ember::Device device) {
    for (std::int64_t i = 0; i < c.layers; ++i) {
      layers.push_back(std::make_unique<BertLayer<T>>(c, device));
      register_module(std::to_string(i), *layers.back());
    }
  }
};

template <ember::FloatingElement T = float>
class BertEncoder : public ember::nn::Module {
 public:
  BertLayerList<T> layer;

  BertEncoder(const BertConfig& c, ember::Device device) : layer(c, device) {
    register_module("layer", layer);
  }

  ember::Var<T> forward(ember::Var<T> x, const ember::Tensor<bool>& mask) const {
    for (const auto& l : layer.layers) x = l->forward(x, mask);
    return x;
  }
};

/// pooler: tanh(dense(h[:, 0])).
template <ember::FloatingElement T = float>
class BertPooler : public ember::nn::Module {
 public:
  ember::nn::Linear<T> dense;

  BertPooler(const BertConfig& c, ember::Device device) : dense(c.hidden, c.hidden, {}, device) {
    detail::init_linear<T>(dense, c.init_std);
    register_module("dense", dense);
  }

  ember::Var<T> forward(const ember::Var<T>& h) const {
    return ember::tanh(dense.forward(h.select(1, 0)));
  }
};

template <ember::FloatingElement T = float>
struct BertModelOutput {
  ember::Var<T> last_hidden_state;  // [B, S, H]
  ember::Var<T> pooler_output;      // [B, H]; undefined without the pooler
};

/// BertModel's settings beyond the configuration, Hugging Face's keyword arguments by name.
struct BertModelOptions {
  bool add_pooling_layer = true;  // the pooler ([CLS] -> dense -> tanh) and pooler_output
};

template <ember::FloatingElement T = float>
class BertModel : public ember::nn::Module {
 public:
  BertConfig config;
  BertEmbeddings<T> embeddings;
  BertEncoder<T> encoder;
  std::unique_ptr<BertPooler<T>> pooler;  // null when built without add_pooling_layer

  explicit BertModel(const BertConfig& c = BertConfig::base(), const BertModelOptions& opt = {},
                     ember::Device device = ember::Device::cpu())
      : config(c), embeddings(c, device), encoder(c, device) {
    register_module("embeddings", embeddings);
    register_module("encoder", encoder);
    if (opt.add_pooling_layer) {
      pooler = std::make_unique<BertPooler<T>>(c, device);
      register_module("pooler", *pooler);
    }
  }

  /// input_ids, token_type_ids, attention_mask [B, S] int64 (the last two may be undefined:
  /// all type 0, no padding). attention_mask is 1 for real tokens and 0 for padding.
  BertModelOutput<T> forward(const ember::Tensor<std::int64_t>& input_ids,
                             const ember::Tensor<std::int64_t>& token_type_ids = {},
                             const ember::Tensor<std::int64_t>& attention_mask = {}) const {
    EMBER_CHECK(input_ids.defined() && input_ids.rank() == 2,
                "bert: input_ids must be [B, S], got ",
                input_ids.defined() ? input_ids.shape().str() : std::string("undefined"));
    const ember::Shape& s = input_ids.shape();
    EMBER_CHECK(!token_type_ids.defined() || token_type_ids.shape() == s, "bert: token_type_ids ",
                token_type_ids.shape().str(), " must be ", s.str());
    EMBER_CHECK(!attention_mask.defined() || attention_mask.shape() == s, "bert: attention_mask ",
                attention_mask.shape().str(), " must be ", s.str());
    ember::Tensor<bool> mask;
    if (attention_mask.defined()) {
      const ember::Tensor<bool> keep = attention_mask != std::int64_t{0};
      mask = keep.reshape(ember::Shape{s[0], 1, 1, s[1]});
    }
    BertModelOutput<T> out;
    out.last_hidden_state = encoder.forward(embeddings.forward(input_ids, token_type_ids), mask);
    if (pooler) out.pooler_output = pooler->forward(out.last_hidden_state);
    return out;
  }
  BertModelOutput<T> operator()(const ember::Tensor<std::int64_t>& input_ids,
                                const ember::Tensor<std::int64_t>& token_type_ids = {},
                                const ember::Tensor<std::int64_t>& attention_mask = {}) const {
    return forward(input_ids, token_type_ids, attention_mask);
  }
};

// ---- Pretraining: masked LM + next-sentence prediction (Hugging Face's BertForPreTraining) ------

/// cls.predictions.transform: dense, GELU, LayerNorm.
template <ember::FloatingElement T = float>
class BertPredictionHeadTransform : public ember::nn::Module {
 public:
  ember::nn::Linear<T> dense;
  ember::nn::LayerNorm<T> LayerNorm;  // NOLINT(readability-identifier-naming): HF's name

  BertPredictionHeadTransform(const BertConfig& c, ember::Device device)
      : dense(c.hidden, c.hidden, {.activation = ember::Activation::gelu}, device),
        LayerNorm(ember::Shape{c.hidden}, {.eps = c.layer_norm_eps}, device) {
    detail::init_linear<T>(dense, c.init_std);
    register_module("dense", dense);
    register_module("LayerNorm", LayerNorm);
  }

  ember::Var<T> forward(const ember::Var<T>& x) const {
    return LayerNorm.forward(dense.forward(x));
  }
};

/// cls.predictions: the transform, then the decoder, whose weight is the word embeddings' (tied,
/// so it is not a parameter of its own), plus its own bias `cls.predictions.bias`.
template <ember::FloatingElement T = float>
class BertLMPredictionHead : public ember::nn::Module {
 public:
  BertPredictionHeadTransform<T> transform;
  ember::Var<T> bias;  // [vocab]

  BertLMPredictionHead(const BertConfig& c, ember::Device device) : transform(c, device) {
    bias = ember::param(ember::nn::init::zeros<T>(ember::Shape{c.vocab_size}, device));
    register_module("transform", transform);
    register_parameter("bias", bias);
  }

  /// x [..., H] -> logits [..., vocab] = transform(x) word_embeddings^T + bias.
  ember::Var<T> forward(const ember::Var<T>& x, const ember::Var<T>& word_embeddings) const {
    return ember::linear(transform.forward(x), word_embeddings, bias);
  }
};

/// cls: the masked-LM head and the next-sentence head (`seq_relationship`, hidden -> 2).
template <ember::FloatingElement T = float>
class BertPreTrainingHeads : public ember::nn::Module {
 public:
  BertLMPredictionHead<T> predictions;
  ember::nn::Linear<T> seq_relationship;

  BertPreTrainingHeads(const BertConfig& c, ember::Device device)
      : predictions(c, device), seq_relationship(c.hidden, 2, {}, device) {
    detail::init_linear<T>(seq_relationship, c.init_std);
    register_module("predictions", predictions);
    register_module("seq_relationship", seq_relationship);
  }
};

/// What BertForPreTraining::forward gives for a batch.
template <ember::FloatingElement T = float>
struct PreTrainingOutput {
  ember::Var<T> mlm_logits;  // [B * P, vocab]: at the masked positions only
  ember::Var<T> nsp_logits;  // [B, 2]
  ember::Var<T> mlm_loss;    // mean over the masked positions whose label is not -100
  ember::Var<T> nsp_loss;    // mean over the batch
  ember::Var<T> loss;        // mlm_loss + nsp_loss (undefined when no labels were given)
};

/// BERT for pretraining, as Hugging Face's BertForPreTraining (module names `bert.*` and
/// `cls.*`, so its checkpoints load by name; their `cls.predictions.decoder.*` entries are the
/// tied weights: load with allow_unexpected). The masked-LM head runs only at the masked
/// positions, as MLPerf's reference does: the hidden states of the P positions of each sequence
/// are gathered first (an embedding lookup into the [B * S, H] states, whose backward is a
/// deterministic scatter-add), so the vocabulary-wide product is [B * P, H] x [H, vocab] instead of
/// [B * S, H] x [H, vocab] (128 / 20 = 6.4 times less work at MLPerf's sequence length).
template <ember::FloatingElement T = float>
class BertForPreTraining : public ember::nn::Module {
 public:
  BertModel<T> bert;
  BertPreTrainingHeads<T> cls;

  explicit BertForPreTraining(const BertConfig& c = BertConfig::base(),
                              ember::Device device = ember::Device::cpu())
      : bert(c, {}, device), cls(c, device) {
    register_module("bert", bert);
    register_module("cls", cls);
  }

  const BertConfig& config() const { return bert.config; }

  /// input_ids, token_type_ids, attention_mask [B, S]; masked_positions [B, P] (indices into S;
  /// padding entries may be any valid index); masked_ids [B, P] (the original tokens, -100 for
  /// padding); next_sentence_labels [B] (0: B follows A, 1: random). Labels may be undefined:
  /// then only the logits are computed.
  PreTrainingOutput<T> forward(const ember::Tensor<std::int64_t>& input_ids,
                               const ember::Tensor<std::int64_t>& token_type_ids,
                               const ember::Tensor<std::int64_t>& attention_mask,
                               const ember::Tensor<std::int64_t>& masked_positions,
                               const ember::Tensor<std::int64_t>& masked_ids = {},
                               const ember::Tensor<std::int64_t>& next_sentence_labels = {}) const {
    EMBER_CHECK(masked_positions.defined() && masked_positions.rank() == 2 && input_ids.defined() &&
                    masked_positions.size(0) == input_ids.size(0),
                "bert: masked_positions must be [B, P] for input_ids [B, S], got ",
                masked_positions.defined() ? masked_positions.shape().str() : "undefined");
    const BertModelOutput<T> h = bert.forward(input_ids, token_type_ids, attention_mask);
    const std::int64_t B = input_ids.size(0), S = input_ids.size(1);
    const std::int64_t H = config().hidden;
    // Row b * S + position of the [B * S, H] hidden states, for each masked slot.
    const ember::Tensor<std::int64_t> rows = flat_rows(masked_positions, S);
    const ember::Var<T> gathered =
        ember::embedding(h.last_hidden_state.reshape(ember::Shape{B * S, H}), rows);
    PreTrainingOutput<T> out;
    out.mlm_logits = cls.predictions.forward(gathered, bert.embeddings.word_embeddings.weight);
    out.nsp_logits = cls.seq_relationship.forward(h.pooler_output);
    if (masked_ids.defined()) {
      EMBER_CHECK(masked_ids.shape() == masked_positions.shape(), "bert: masked_ids ",
                  masked_ids.shape().str(), " must be shaped as masked_positions ",
                  masked_positions.shape().str());
      out.mlm_loss = ember::cross_entropy(out.mlm_logits,
                                          masked_ids.reshape(ember::Shape{masked_ids.numel()}));
    }
    if (next_sentence_labels.defined()) {
      out.nsp_loss = ember::cross_entropy(out.nsp_logits, next_sentence_labels);
    }
    if (out.mlm_loss.defined() && out.nsp_loss.defined()) out.loss = out.mlm_loss + out.nsp_loss;
    return out;
  }

 private:
  /// b * S + masked_positions[b, p], as one flat index tensor on the positions' device.
  static ember::Tensor<std::int64_t> flat_rows(const ember::Tensor<std::int64_t>& positions,
                                               std::int64_t S) {
    const std::int64_t B = positions.size(0);
    const ember::Tensor<std::int64_t> base = ember::arange<std::int64_t>(B, positions.device()) * S;
    const ember::Tensor<std::int64_t> rows = positions + base.reshape(ember::Shape{B, 1});
    return rows.reshape(ember::Shape{positions.numel()});
  }
};

/// The parameter count of BertModel(c, opt), from the configuration alone.
inline std::int64_t parameter_count(const BertConfig& c, const BertModelOptions& opt = {}) {
  const std::int64_t H = c.hidden, I = c.intermediate;
  const std::int64_t embeddings = (c.vocab_size + c.max_positions + c.type_vocab) * H + 2 * H;
  const std::int64_t layer = 4 * (H * H + H) + 2 * H + (H * I + I) + (I * H + H) + 2 * H;
  return embeddings + c.layers * layer + (opt.add_pooling_layer ? H * H + H : 0);
}

/// The parameter count of BertForPreTraining(c): the encoder with pooler, the masked-LM head's
/// transform and bias (its decoder is the word embeddings) and the next-sentence head.
inline std::int64_t pretraining_parameter_count(const BertConfig& c) {
  const std::int64_t H = c.hidden;
  return parameter_count(c) + (H * H + H) + 2 * H + c.vocab_size + (2 * H + 2);
}

}  // namespace bert
