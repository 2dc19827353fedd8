// gpt2_generate: text from a GPT-2, a token at a time with the KV cache (gpt2.hpp's KVCache), so
// each new token costs one token's forward and attention over the cache.
//
//   gpt2_generate --weights runs/gpt2/ckpt-last.safetensors --config tiny --prompt "And God said"
//   gpt2_generate --weights model.safetensors --config 124M --tokens 100 --temperature 0.8
//
// --weights is gpt2_train's checkpoint (the model under "model.") or a Hugging Face GPT-2
// safetensors file (GPT2LMHeadModel's names). Sampling: the logits divided by --temperature, the
// --top-k most likely tokens (0: all), drawn from a seeded std::mt19937_64; --temperature 0 takes
// the most likely token (greedy). Host code, float, on the CPU.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <ember/data/gpt2_bpe.hpp>
#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>
#include <ember/io/safetensors.hpp>

#include "common/command_line.hpp"
#include "common/exit_status.hpp"
#include "gpt2/gpt2.hpp"
#include "gpt2/sampling.hpp"

namespace {

struct GenerateOptions {
  std::string weights, config = "tiny", prompt, vocab;
  std::int64_t tokens = 64, top_k = 40;
  double temperature = 1.0;
  std::uint64_t seed = 1;
};

/// gpt2_train's checkpoint holds the model under "model."; a Hugging Face file names it directly.
void load_weights(gpt2::GPT2LMHeadModel<float>& model, const std::string& path) {
  const ember::NamedTensors tensors = ember::io::load_safetensors(path);
  bool training_checkpoint = false;
  for (const auto& [name, t] : tensors) training_checkpoint |= name.rfind("model.", 0) == 0;
  ember::io::load_state_dict(model, tensors,
                             {.prefix = training_checkpoint ? ember::io::kModelPrefix : "",
                              .allow_unexpected = true,
                              .convert_floating = true});
}

int run(const GenerateOptions& o) {
  const auto vocab = o.vocab.empty() ? ember::data::Gpt2Bpe::find_vocabulary()
                                     : std::optional<std::filesystem::path>(o.vocab);
  EMBER_CHECK(vocab,
              "gpt2_generate: GPT-2's vocabulary not found: pip install --no-deps "
              "openai-whisper, or give --vocab gpt2.tiktoken");
  const ember::data::Gpt2Bpe bpe = ember::data::Gpt2Bpe::from_tiktoken(*vocab);
  gpt2::GPT2LMHeadModel<float> model(gpt2::config_by_name(o.config));
  load_weights(model, o.weights);
  model.eval();
  const ember::no_grad guard;

  std::vector<std::int64_t> feed{ember::data::Gpt2Bpe::kEndOfText};
  for (const std::int32_t id : bpe.encode(o.prompt)) feed.push_back(id);
  const std::int64_t context = model.config.n_positions;
  EMBER_CHECK(static_cast<std::int64_t>(feed.size()) + o.tokens <= context,
              "gpt2_generate: the "
              "prompt's ",
              feed.size() - 1, " tokens and --tokens ", o.tokens, " exceed the ", context,
              "-token context of --config ", o.config);
  std::mt19937_64 rng(o.seed);
  gpt2::KVCache<float> cache;
  std::printf("%s", o.prompt.c_str());
  for (std::int64_t i = 0; i < o.tokens; ++i) {
    const auto n = static_cast<std::int64_t>(feed.size());
    const ember::Tensor<float> last =
        model.forward(ember::from_vector<std::int64_t>(feed, ember::Shape{1, n}), &cache)
            .value()
            .select(1, n - 1)
            .contiguous();
    const std::vector<float> row = last.to_vector();
    const std::int32_t token = gpt2::sample_token(std::vector<double>(row.begin(), row.end()),
                                                  o.temperature, o.top_k, rng);
    if (token == ember::data::Gpt2Bpe::kEndOfText) break;
    std::printf("%s", bpe.decode({token}).c_str());
    std::fflush(stdout);
    feed = {token};
  }
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  GenerateOptions o;
  CLI::App app{"ember's GPT-2 text generation (a token at a time, with a KV cache)",
               "gpt2_generate"};
  app.add_option("--weights", o.weights,
                 "gpt2_train's checkpoint or Hugging Face GPT-2 safetensors")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--config", o.config, "tiny | mini | 124M | 350M")->capture_default_str();
  app.add_option("--prompt", o.prompt, "the text to continue")->capture_default_str();
  app.add_option("--tokens", o.tokens, "tokens to generate")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--temperature", o.temperature, "0: the most likely token")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--top-k", o.top_k, "sample among the k most likely (0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--vocab", o.vocab, "GPT-2's gpt2.tiktoken (default: openai-whisper's copy)")
      ->check(CLI::ExistingFile);
  app.add_option("--seed", o.seed)->capture_default_str();
  if (const auto status = trainer::parse_command_line(app, argc, argv)) return *status;
  try {
    (void)gpt2::config_by_name(o.config);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return trainer::kExitBadOption;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return trainer::kExitFailure;
  }
}
