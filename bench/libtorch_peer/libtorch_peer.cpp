// ResNet and BERT training steps in libtorch's C++ frontend, the library a C++ user would
// otherwise pick: the models of bench/resnet_torch.py and transformers' BertForPreTraining,
// written with torch::nn, and the steps of bench/resnet_cpu_peer.py and bench/gpu/bert_peer.py
// (bf16: autocast to bf16 around the forward and the loss, as torch.autocast does).
//
//   libtorch_peer resnet <arch> <width> <small_stem 0|1> <pixels> <batch> <channels_last 0|1>
//                        <bf16 0|1> <seconds>
//   libtorch_peer bert <tiny|mini|base> <batch> <seq> <predictions> <steps> <warmup> <bf16 0|1>
//
// Each prints one JSON line: the rate (images/s or sequences/s), the parameter count (to check
// the model against the Python peer's) and the threads. BERT's masked-LM head runs on the masked
// positions only, as ember's, NVIDIA's and MLPerf's BERT do (transformers' runs it at every
// position): the strongest step a libtorch user would write.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace F = torch::nn::functional;
namespace nn = torch::nn;

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// ResNet (v1.5: the stride on the 3x3 convolution), with bench/resnet_torch.py's options.

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t pad = 0) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}

struct BlockImpl : nn::Module {
  nn::Sequential body, downsample{nullptr};
  BlockImpl(bool bottleneck, int64_t inplanes, int64_t planes, int64_t stride) {
    const int64_t out = planes * (bottleneck ? 4 : 1);
    if (bottleneck) {
      body = nn::Sequential(conv(inplanes, planes, 1), nn::BatchNorm2d(planes), nn::ReLU(true),
                            conv(planes, planes, 3, stride, 1), nn::BatchNorm2d(planes),
                            nn::ReLU(true), conv(planes, out, 1), nn::BatchNorm2d(out));
    } else {
      body = nn::Sequential(conv(inplanes, planes, 3, stride, 1), nn::BatchNorm2d(planes),
                            nn::ReLU(true), conv(planes, planes, 3, 1, 1), nn::BatchNorm2d(planes));
    }
    register_module("body", body);
    if (stride != 1 || inplanes != out) {
      downsample = register_module(
          "downsample", nn::Sequential(conv(inplanes, out, 1, stride), nn::BatchNorm2d(out)));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const auto identity = downsample ? downsample->forward(x) : x;
    auto y = body->forward(x) + identity;
    return y.relu_();
  }
};
TORCH_MODULE(Block);

nn::Sequential resnet(const std::string& arch, int64_t width, bool small_stem) {
  const bool bottleneck = arch == "resnet50";
  const std::vector<int> blocks =
      arch == "resnet18" ? std::vector{2, 2, 2, 2} : std::vector{3, 4, 6, 3};
  const int64_t classes = small_stem ? 10 : 1000;
  nn::Sequential model;
  if (small_stem) {
    model->push_back(conv(3, width, 3, 1, 1));
    model->push_back(nn::BatchNorm2d(width));
    model->push_back(nn::ReLU(true));
  } else {
    model->push_back(conv(3, width, 7, 2, 3));
    model->push_back(nn::BatchNorm2d(width));
    model->push_back(nn::ReLU(true));
    model->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  }
  int64_t inplanes = width;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const int64_t planes = width << i;
    for (int b = 0; b < blocks[i]; ++b) {
      model->push_back(Block(bottleneck, inplanes, planes, b == 0 && i > 0 ? 2 : 1));
      inplanes = planes * (bottleneck ? 4 : 1);
    }
  }
  model->push_back(nn::AdaptiveAvgPool2d(1));
  model->push_back(nn::Flatten());
  model->push_back(nn::Linear(inplanes, classes));
  return model;
}

// ---------------------------------------------------------------------------------------------
// BERT for pretraining, as transformers' BertForPreTraining (post-LN encoder, exact GELU, layer
// norm eps 1e-12, dropout 0.1, the decoder tied to the word embeddings).

struct BertConfig {
  int64_t hidden, layers, heads, intermediate, vocab = 30522, positions = 512;
};

nn::LayerNorm layer_norm(int64_t d) { return nn::LayerNorm(nn::LayerNormOptions({d}).eps(1e-12)); }

struct EncoderLayerImpl : nn::Module {
  int64_t heads;
  nn::Linear query, key, value, attention_out, up, down;
  nn::LayerNorm attention_norm, output_norm;
  EncoderLayerImpl(const BertConfig& c)
      : heads(c.heads),
        query(c.hidden, c.hidden),
        key(c.hidden, c.hidden),
        value(c.hidden, c.hidden),
        attention_out(c.hidden, c.hidden),
        up(c.hidden, c.intermediate),
        down(c.intermediate, c.hidden),
        attention_norm(layer_norm(c.hidden)),
        output_norm(layer_norm(c.hidden)) {
    register_module("query", query);
    register_module("key", key);
    register_module("value", value);
    register_module("attention_out", attention_out);
    register_module("attention_norm", attention_norm);
    register_module("up", up);
    register_module("down", down);
    register_module("output_norm", output_norm);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), D = x.size(2);
    auto split = [&](const torch::Tensor& t) {
      return t.view({B, T, heads, D / heads}).transpose(1, 2);
    };
    const auto context =
        at::scaled_dot_product_attention(split(query(x)), split(key(x)), split(value(x)), {}, 0.1);
    const auto attended = context.transpose(1, 2).reshape({B, T, D});
    const auto h =
        attention_norm(x + F::dropout(attention_out(attended), F::DropoutFuncOptions().p(0.1)));
    return output_norm(h + F::dropout(down(F::gelu(up(h))), F::DropoutFuncOptions().p(0.1)));
  }
};
TORCH_MODULE(EncoderLayer);

struct BertImpl : nn::Module {
  nn::Embedding words, positions, token_types;
  nn::LayerNorm embedding_norm;
  nn::ModuleList layers;
  nn::Linear pooler, transform, next_sentence;
  nn::LayerNorm transform_norm;
  torch::Tensor decoder_bias;
  BertImpl(const BertConfig& c)
      : words(c.vocab, c.hidden),
        positions(c.positions, c.hidden),
        token_types(2, c.hidden),
        embedding_norm(layer_norm(c.hidden)),
        pooler(c.hidden, c.hidden),
        transform(c.hidden, c.hidden),
        next_sentence(c.hidden, 2),
        transform_norm(layer_norm(c.hidden)) {
    register_module("words", words);
    register_module("positions", positions);
    register_module("token_types", token_types);
    register_module("embedding_norm", embedding_norm);
    for (int64_t i = 0; i < c.layers; ++i) layers->push_back(EncoderLayer(c));
    register_module("layers", layers);
    register_module("pooler", pooler);
    register_module("transform", transform);
    register_module("transform_norm", transform_norm);
    register_module("next_sentence", next_sentence);
    decoder_bias = register_parameter("decoder_bias", torch::zeros({c.vocab}));
  }
  // The pretraining loss: masked-LM cross-entropy at the masked positions plus next-sentence.
  torch::Tensor loss(const torch::Tensor& ids, const torch::Tensor& types,
                     const torch::Tensor& masked, const torch::Tensor& masked_ids,
                     const torch::Tensor& next) {
    const int64_t T = ids.size(1);
    auto x = words(ids) + positions(torch::arange(T)) + token_types(types);
    x = F::dropout(embedding_norm(x), F::DropoutFuncOptions().p(0.1));
    for (const auto& layer : *layers) x = layer->as<EncoderLayer>()->forward(x);
    const auto at_masked = x.index_select(1, masked).reshape({-1, x.size(2)});
    const auto h = transform_norm(F::gelu(transform(at_masked)));
    const auto logits = F::linear(h, words->weight, decoder_bias);
    const auto pooled = torch::tanh(pooler(x.select(1, 0)));
    return F::cross_entropy(logits, masked_ids.reshape({-1})) +
           F::cross_entropy(next_sentence(pooled), next);
  }
};
TORCH_MODULE(Bert);

// ---------------------------------------------------------------------------------------------

int64_t parameter_count(const nn::Module& model) {
  int64_t n = 0;
  for (const auto& p : model.parameters()) n += p.numel();
  return n;
}

// Autocast to bf16 on the CPU for the forward and the loss, as `with torch.autocast(...)`.
torch::Tensor autocast(bool bf16, const std::function<torch::Tensor()>& forward) {
  if (!bf16) return forward();
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCPU, true);
  at::autocast::increment_nesting();
  auto loss = forward();
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(at::kCPU, false);
  return loss;
}

int run_resnet(char** argv) {
  const std::string arch = argv[0];
  const int64_t width = std::atoll(argv[1]);
  const bool small_stem = std::atoi(argv[2]) != 0;
  const int64_t pixels = std::atoll(argv[3]), batch = std::atoll(argv[4]);
  const bool channels_last = std::atoi(argv[5]) != 0, bf16 = std::atoi(argv[6]) != 0;
  const double seconds = std::atof(argv[7]);
  if ((arch != "resnet18" && arch != "resnet50") || width < 1 || pixels < 8 || batch < 1) {
    std::fprintf(stderr, "libtorch_peer resnet: bad arguments\n");
    return 2;
  }
  torch::manual_seed(1);
  auto model = resnet(arch, width, small_stem);
  const auto format = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  // Module::to has no memory format: convert the 4-d weights as Python's module.to does.
  for (auto& p : model->parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(format));
  }
  torch::optim::SGD opt(
      model->parameters(),
      torch::optim::SGDOptions(0.01).momentum(0.9).nesterov(true).weight_decay(5e-5));
  const auto x = torch::randn({batch, 3, pixels, pixels}).contiguous(format);
  const auto y = torch::randint(0, small_stem ? 10 : 1000, {batch}, torch::kLong);
  auto step = [&] {
    auto loss = autocast(bf16, [&] {
      return F::cross_entropy(model->forward(x), y,
                              F::CrossEntropyFuncOptions().label_smoothing(0.1));
    });
    loss.backward();
    opt.step();
    opt.zero_grad(true);
  };
  step();  // warm-up, as resnet_cpu_peer.py
  step();
  int64_t n = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < seconds || n < 2) {
    step();
    ++n;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  std::printf("{\"images_per_s\": %.3f, \"parameters\": %lld, \"threads\": %d}\n",
              batch * n / elapsed, static_cast<long long>(parameter_count(*model)),
              at::get_num_threads());
  return 0;
}

int run_bert(char** argv) {
  const std::string config = argv[0];
  const int64_t batch = std::atoll(argv[1]), seq = std::atoll(argv[2]);
  const int64_t predictions = std::atoll(argv[3]);
  const int steps = std::atoi(argv[4]), warmup = std::atoi(argv[5]);
  const bool bf16 = std::atoi(argv[6]) != 0;
  BertConfig c;
  if (config == "tiny")
    c = {128, 2, 2, 512};
  else if (config == "mini")
    c = {256, 4, 4, 1024};
  else if (config == "base")
    c = {768, 12, 12, 3072};
  else
    c.hidden = 0;
  if (c.hidden == 0 || batch < 1 || seq < 2 || seq > c.positions || predictions < 1 ||
      predictions > seq - 2 || steps < 1 || warmup < 0) {
    std::fprintf(stderr, "libtorch_peer bert: bad arguments\n");
    return 2;
  }
  torch::manual_seed(0);
  Bert model(c);
  model->train();
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-4).weight_decay(0.01));
  // bert_peer.py's sequences: two segments, the masked positions spread over the sequence.
  const auto ids = torch::randint(999, c.vocab, {batch, seq}, torch::kLong);
  auto types = torch::zeros({batch, seq}, torch::kLong);
  types.narrow(1, seq / 2, seq - seq / 2).fill_(1);
  const auto masked = torch::linspace(1, seq - 2, predictions).to(torch::kLong);
  const auto masked_ids = ids.index_select(1, masked).contiguous();
  const auto next = torch::randint(0, 2, {batch}, torch::kLong);
  auto step = [&] {
    auto loss = autocast(bf16, [&] { return model->loss(ids, types, masked, masked_ids, next); });
    loss.backward();
    nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    opt.zero_grad(true);
  };
  for (int i = 0; i < warmup; ++i) step();
  const auto start = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("{\"sequences_per_s\": %.4f, \"parameters\": %lld, \"threads\": %d}\n",
              batch * steps / elapsed, static_cast<long long>(parameter_count(*model)),
              at::get_num_threads());
  return 0;
}

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "resnet" && argc == 10) return run_resnet(argv + 2);
  if (what == "bert" && argc == 9) return run_bert(argv + 2);
  std::fprintf(stderr,
               "usage: libtorch_peer resnet <arch> <width> <small_stem> <pixels> <batch> "
               "<channels_last> <bf16> <seconds>\n"
               "       libtorch_peer bert <tiny|mini|base> <batch> <seq> <predictions> <steps> "
               "<warmup> <bf16>\n");
  return 2;
}
