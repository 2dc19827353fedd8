// The GPT-2 trainer's options settled and checked (options.hpp): the defaults that depend on the
// device, then every option, before the text is read or the model built.
#pragma once

#include <cmath>
#include <filesystem>

#include <ember/data/gpt2_bpe.hpp>
#include <ember/dist/world.hpp>
#include <ember/ember.hpp>

#include "common/run_support.hpp"
#include "gpt2.hpp"
#include "options.hpp"

namespace gpt2 {

using namespace ember;

inline void settle_defaults(TrainConfig& c, Device device) {
  if (c.precision == "auto") c.precision = device.is_cpu() ? "float" : "bf16";
  EMBER_CHECK(!device.is_cpu() || c.precision != "bf16" || cpu_has_avx512_bf16(),
              "gpt2_train: --precision bf16 on the CPU needs AVX512-BF16, which this CPU lacks "
              "(use --precision float)");
  if (c.vocab.empty()) {
    if (const auto found = data::Gpt2Bpe::find_vocabulary()) c.vocab = found->string();
  }
}

/// Every option checked before the text is read or the model built (after settle_defaults): an
/// ember::Error naming the option and what it takes.
inline void validate_options(const TrainConfig& c) {
  (void)config_by_name(c.config);  // its error lists the configurations
  const std::filesystem::path dir = data_dir(c);
  EMBER_CHECK(
      !c.text.empty() || c.summary ||
          (std::filesystem::exists(dir / "train.bin") && std::filesystem::exists(dir / "val.bin")),
      "gpt2_train: no data: give --text FILE (tokenized into ", dir.string(),
      ") or --data DIR holding train.bin and val.bin");
  EMBER_CHECK(c.vocab.empty() || std::filesystem::exists(c.vocab), "gpt2_train: --vocab: no file '",
              c.vocab, "'");
  EMBER_CHECK(!c.vocab.empty() || (c.text.empty() && c.sample_tokens == 0) || c.summary,
              "gpt2_train: GPT-2's vocabulary not found: pip install --no-deps openai-whisper, or "
              "give --vocab gpt2.tiktoken");
  EMBER_CHECK(c.precision == "float" || c.precision == "bf16",
              "gpt2_train: --precision must be float, bf16 or auto, got '", c.precision, "'");
  EMBER_CHECK(c.val_fraction > 0 && c.val_fraction < 1,
              "gpt2_train: --val-fraction is a fraction in (0, 1), got ", c.val_fraction);
  EMBER_CHECK(c.batch > 0, "gpt2_train: --batch-size must be positive, got ", c.batch);
  EMBER_CHECK(c.seq_len > 0 && c.seq_len <= config_by_name(c.config).n_positions,
              "gpt2_train: --seq-len must be in [1, ", config_by_name(c.config).n_positions,
              "] for --config ", c.config, ", got ", c.seq_len);
  EMBER_CHECK(c.accumulation > 0, "gpt2_train: --accumulation must be positive, got ",
              c.accumulation);
  EMBER_CHECK(c.steps > 0, "gpt2_train: --steps must be positive, got ", c.steps);
  EMBER_CHECK(c.warmup >= 0 && c.warmup < 1, "gpt2_train: --warmup is a fraction in [0, 1), got ",
              c.warmup);
  EMBER_CHECK(c.lr > 0 && std::isfinite(c.lr), "gpt2_train: --lr must be positive, got ", c.lr);
  EMBER_CHECK(c.min_lr >= 0 && c.min_lr <= 1,
              "gpt2_train: --min-lr is a fraction of --lr in "
              "[0, 1], got ",
              c.min_lr);
  EMBER_CHECK(c.weight_decay >= 0, "gpt2_train: --weight-decay must be >= 0, got ", c.weight_decay);
  EMBER_CHECK(c.max_grad_norm >= 0, "gpt2_train: --max-grad-norm must be >= 0, got ",
              c.max_grad_norm);
  EMBER_CHECK(c.dropout >= 0 && c.dropout < 1, "gpt2_train: --dropout must be in [0, 1), got ",
              c.dropout);
  EMBER_CHECK(c.eval_every > 0 && c.eval_batches > 0 && c.log_every > 0,
              "gpt2_train: --eval-every, --eval-batches and --log-every must be positive");
  EMBER_CHECK(c.sample_tokens >= 0, "gpt2_train: --sample-tokens must be >= 0, got ",
              c.sample_tokens);
  EMBER_CHECK(c.stop_after >= 0, "gpt2_train: --stop-after must be >= 0, got ", c.stop_after);
  trainer::check_batch_splits(c.batch, dist::world_size(), "global micro-batch", "gpt2_train");
  trainer::require_writable_directory(c.out, "gpt2_train", "--out");
}

}  // namespace gpt2
