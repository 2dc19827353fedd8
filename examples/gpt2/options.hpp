// The GPT-2 trainer's options: what its command line sets. options.cpp reads them, in a
// translation unit of its own (CLI11 is a large header-only library: common/command_line.hpp);
// validate_options.hpp settles the defaults and checks them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace gpt2 {

struct TrainConfig {
  std::string config = "tiny";  // tiny | mini | 124M | 350M
  std::string text;             // a UTF-8 text file, tokenized once into OUT/data (or --data)
  std::string data;             // a folder with train.bin and val.bin (llm.c's token files)
  std::string vocab;            // GPT-2's gpt2.tiktoken (empty: openai-whisper's copy)
  double val_fraction = 0.05;   // of --text's tokens, the last ones, held out
  std::int64_t batch = 16;      // sequences per micro-batch
  std::int64_t seq_len = 64;
  std::int64_t accumulation = 1;  // micro-batches per optimizer step
  std::int64_t steps = 800;
  double warmup = 0.05;  // fraction of the steps
  double lr = 3e-3;
  double min_lr = 0.1;  // the cosine's floor, as a fraction of --lr
  double weight_decay = 0.1;
  double max_grad_norm = 1.0;
  double dropout = 0.0;  // embedding, attention and residual (GPT-2 had 0.1; 0 as llm.c)
  bool zero = false;     // ZeRO-1: AdamW's state sharded over the ranks
  std::string precision = "auto";
  std::string device = "auto";
  std::int64_t eval_every = 200;
  std::int64_t eval_batches = 8;
  std::int64_t sample_tokens = 64;  // printed after training (0: none)
  std::string out = "runs/gpt2";
  std::string resume;
  std::int64_t stop_after = 0;  // end after this step, as if interrupted
  bool eval_only = false;
  bool summary = false;
  std::uint64_t seed = 1;
  std::int64_t log_every = 10;
};

/// Reads the command line into `c`: --help prints and gives 0, a bad option prints CLI11's line
/// and gives trainer::kExitBadOption; nothing when the program goes on (options.cpp).
std::optional<int> parse_options(TrainConfig& c, int argc, char** argv);

/// Where the token files are: --data, or OUT/data where --text is tokenized.
inline std::filesystem::path data_dir(const TrainConfig& c) {
  return c.data.empty() ? std::filesystem::path(c.out) / "data" : std::filesystem::path(c.data);
}

}  // namespace gpt2
