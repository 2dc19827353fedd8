// The BERT pretraining trainer's options: what its command line sets. options.cpp reads them,
// in a translation unit of its own (CLI11 is a large header-only library:
// common/command_line.hpp); validate_options.hpp settles the defaults and checks them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace bert {

struct PretrainConfig {
  std::string config = "tiny";     // tiny | mini | small | base | large
  std::string corpus = "gcide";    // gcide | comma-separated text files (a sentence per line)
  std::int64_t max_documents = 0;  // 0: all
  std::string vocab;               // empty: the BERT uncased vocabulary in tests/data
  std::int64_t seq_len = 128;
  std::int64_t max_predictions = 20;
  int dupe_factor = 1;
  std::int64_t eval_sequences = 1024;  // held out from the instances
  std::int64_t batch = 32;             // sequences per micro-batch
  std::int64_t accumulation = 1;       // micro-batches per optimizer step
  std::int64_t steps = 400;
  double warmup = 0.1;  // fraction of the steps
  std::string optimizer = "lamb";
  double lr = 0;  // 0: 5e-3 for LAMB, 1e-3 for AdamW (tiny); see settle_defaults
  double weight_decay = 0.01;
  double max_grad_norm = 1.0;
  std::string precision = "auto";
  std::string device = "auto";
  std::int64_t eval_every = 100;
  double target_mlm_accuracy = 0;
  std::string init_checkpoint;
  std::string out = "runs/bert";
  std::string cache_dir;  // empty: OUT/cache
  std::string resume;
  std::int64_t stop_after = 0;  // end after this step, as if interrupted
  bool eval_only = false;       // evaluate the loaded weights, print the metrics, exit
  bool detect_anomaly = false;  // stop at the first operation whose output is not finite
  bool summary = false;
  std::uint64_t seed = 1;
  std::int64_t log_every = 10;
};

/// Reads the command line into `c`: --help prints and gives 0, a bad option prints CLI11's line
/// and gives trainer::kExitBadOption; nothing when the program goes on (options.cpp).
std::optional<int> parse_options(PretrainConfig& c, int argc, char** argv);

}  // namespace bert
