// The small GPT of bench/user_gpt/gpt.cpp in libtorch's C++ frontend, the library a C++ user
// would otherwise pick: the same layers, sizes, optimizer and timing (median step after two
// warm-up steps). Built by bench/user_gpt.sh against the torch wheel's CMake package.
//
//   gpt_libtorch [steps]     prints one JSON line
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace F = torch::nn::functional;

constexpr int64_t kVocab = 256, kContext = 64, kModel = 128, kHeads = 4, kLayers = 4, kBatch = 16;

struct BlockImpl : torch::nn::Module {
  torch::nn::LayerNorm ln_1{torch::nn::LayerNormOptions({kModel})};
  torch::nn::LayerNorm ln_2{torch::nn::LayerNormOptions({kModel})};
  torch::nn::Linear in_proj{kModel, 3 * kModel}, out_proj{kModel, kModel};
  torch::nn::Linear fc{kModel, 4 * kModel}, proj{4 * kModel, kModel};
  BlockImpl() {
    register_module("ln_1", ln_1);
    register_module("in_proj", in_proj);
    register_module("out_proj", out_proj);
    register_module("ln_2", ln_2);
    register_module("fc", fc);
    register_module("proj", proj);
  }
  torch::Tensor attn(const torch::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1);
    const auto qkv = in_proj(x).view({B, T, 3, kHeads, kModel / kHeads}).permute({2, 0, 3, 1, 4});
    const auto y = at::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], {}, 0.0, true);
    return out_proj(y.transpose(1, 2).reshape({B, T, kModel}));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = x + attn(ln_1(x));
    return x + proj(F::gelu(fc(ln_2(x)), F::GELUFuncOptions().approximate("tanh")));
  }
};
TORCH_MODULE(Block);

struct GptImpl : torch::nn::Module {
  torch::nn::Embedding wte{kVocab, kModel}, wpe{kContext, kModel};
  torch::nn::Sequential h;
  torch::nn::LayerNorm ln_f{torch::nn::LayerNormOptions({kModel})};
  torch::nn::Linear lm_head{torch::nn::LinearOptions(kModel, kVocab).bias(false)};
  GptImpl() {
    for (int64_t i = 0; i < kLayers; ++i) h->push_back(Block());
    register_module("wte", wte);
    register_module("wpe", wpe);
    register_module("h", h);
    register_module("ln_f", ln_f);
    register_module("lm_head", lm_head);
  }
  torch::Tensor forward(const torch::Tensor& tokens) {
    const int64_t B = tokens.size(0), T = tokens.size(1);
    const auto x = h->forward(wte(tokens) + wpe(torch::arange(T)));
    return lm_head(ln_f(x)).view({B * T, kVocab});
  }
};
TORCH_MODULE(Gpt);

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 30;
  if (steps < 3) {
    std::fprintf(stderr, "usage: gpt_libtorch [steps >= 3]\n");
    return 2;
  }
  torch::manual_seed(0);
  Gpt model;
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(0.1));
  const auto data = torch::randint(0, kVocab, {kBatch, kContext + 1}, torch::kLong);
  const auto inputs = data.narrow(1, 0, kContext).contiguous();
  const auto targets = data.narrow(1, 1, kContext).reshape({-1});
  std::vector<double> ms;
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    auto loss = F::cross_entropy(model->forward(inputs), targets);
    loss.backward();
    opt.step();
    opt.zero_grad();
    last = loss.item<double>();
    if (step == 0) first = last;
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::vector<double> timed(ms.begin() + 2, ms.end());
  std::sort(timed.begin(), timed.end());
  std::printf(
      "{\"ms_per_step\": %.3f, \"min_ms\": %.3f, \"first_loss\": %.5f, \"last_loss\": %.5f, "
      "\"threads\": %d}\n",
      timed[timed.size() / 2], timed.front(), first, last, at::get_num_threads());
}
