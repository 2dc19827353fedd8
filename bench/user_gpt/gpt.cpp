// A small GPT trained on random tokens, written as a user writes a model from docs/nn.md and
// docs/training.md: the benchmark of the speed ember gives a program outside its own trainers.
// bench/user_gpt/CMakeLists.txt builds it as the README says (add_subdirectory, ember::ember,
// no flags); bench/user_gpt/gpt_torch.py is the same model in PyTorch; bench/user_gpt.sh runs
// both side by side.
//
//   gpt [steps] [--json]     4 layers, d_model 128, 4 heads, context 64, batch 16, vocab 256
#include <ember/ember.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace ember;

struct Config {
  std::int64_t vocab = 256, context = 64, d_model = 128, heads = 4, layers = 4, batch = 16;
};

struct Block : nn::Module {
  nn::LayerNorm<float> ln_1, ln_2;
  nn::MultiheadSelfAttention<float> attn;
  nn::Linear<float> fc, proj;

  explicit Block(const Config& c)
      : ln_1(c.d_model),
        ln_2(c.d_model),
        attn(c.d_model, c.heads),
        fc(c.d_model, 4 * c.d_model, {.activation = Activation::gelu_tanh}),
        proj(4 * c.d_model, c.d_model) {
    register_module("ln_1", ln_1);
    register_module("attn", attn);
    register_module("ln_2", ln_2);
    register_module("fc", fc);
    register_module("proj", proj);
  }

  Var<float> forward(const Var<float>& x) const {
    const Var<float> h = x + attn(ln_1(x), {}, /*causal=*/true);
    return h + proj(fc(ln_2(h)));
  }
};

struct Gpt : nn::Module {
  Config config;
  nn::Embedding<float> wte, wpe;
  nn::Sequential<float> h;  // the blocks, named h.0, h.1, ...
  nn::LayerNorm<float> ln_f;
  nn::Linear<float> lm_head;

  explicit Gpt(const Config& c)
      : config(c),
        wte(c.vocab, c.d_model),
        wpe(c.context, c.d_model),
        ln_f(c.d_model),
        lm_head(c.d_model, c.vocab, {.bias = false}) {
    register_module("wte", wte);
    register_module("wpe", wpe);
    for (std::int64_t i = 0; i < c.layers; ++i) h.emplace<Block>(c);
    register_module("h", h);
    register_module("ln_f", ln_f);
    register_module("lm_head", lm_head);
  }

  /// tokens [B, T] -> logits [B * T, vocab]
  Var<float> forward(const Tensor<std::int64_t>& tokens) const {
    const std::int64_t B = tokens.size(0), T = tokens.size(1);
    const Tensor<std::int64_t> positions = arange<std::int64_t>(T).reshape({1, T});
    const Var<float> x = h(wte(tokens) + wpe(positions));
    return lm_head(ln_f(x)).reshape(Shape{B * T, config.vocab});
  }
};

int main(int argc, char** argv) {
  int steps = 30;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else {
      steps = std::atoi(argv[i]);
      if (steps < 2) {
        std::fprintf(stderr, "usage: gpt [steps >= 2] [--json]\n");
        return 2;
      }
    }
  }
  const Config c;
  nn::manual_seed(0);
  Gpt model(c);
  optim::AdamW opt(model, {.lr = 1e-3, .weight_decay = 0.1});

  // Random tokens; the next token is the target.
  const Tensor<std::int64_t> data =
      cast<std::int64_t>(floor(rand<float>({c.batch, c.context + 1}, 1) * float(c.vocab)));
  const Tensor<std::int64_t> inputs = data.narrow(1, 0, c.context).contiguous();
  const Tensor<std::int64_t> targets = data.narrow(1, 1, c.context).reshape({c.batch * c.context});

  std::vector<double> ms;
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    Var<float> loss = cross_entropy(model.forward(inputs), targets);
    loss.backward();
    opt.step();
    opt.zero_grad();
    const float value = loss.value().item();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
    if (step == 0) first_loss = value;
    last_loss = value;
  }
  std::vector<double> timed(ms.begin() + 2, ms.end());  // the first steps warm the caches
  std::sort(timed.begin(), timed.end());
  const double median = timed[timed.size() / 2];
  if (json) {
    std::printf(
        "{\"ms_per_step\": %.3f, \"min_ms\": %.3f, \"first_loss\": %.5f, \"last_loss\": %.5f}\n",
        median, timed.front(), first_loss, last_loss);
  } else {
    std::printf("%lld parameters; loss %.4f -> %.4f; median %.2f ms a step (min %.2f)\n",
                static_cast<long long>(model.parameter_count()), first_loss, last_loss, median,
                timed.front());
  }
}
