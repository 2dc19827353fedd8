// The BERT trainer's options settled and checked (options.hpp): the defaults that depend on the
// device, then every option, before the corpus is read or the model built.
#pragma once

#include <cmath>
#include <filesystem>

#include <ember/dist/world.hpp>
#include <ember/ember.hpp>

#include "bert.hpp"
#include "common/run_support.hpp"
#include "options.hpp"

namespace bert {

using namespace ember;

inline std::filesystem::path default_vocab() {
  return std::filesystem::path(EMBER_SOURCE_DIR) / "tests" / "data" / "wordpiece_vocab.txt";
}

inline void settle_defaults(PretrainConfig& c, Device device) {
  if (c.vocab.empty()) c.vocab = default_vocab().string();
  if (c.precision == "auto") c.precision = device.is_cpu() ? "float" : "bf16";
  EMBER_CHECK(!device.is_cpu() || c.precision != "bf16" || cpu_has_avx512_bf16(),
              "bert_pretrain: --precision bf16 on the CPU needs AVX512-BF16, which this CPU lacks "
              "(use --precision float)");
  if (c.lr == 0) c.lr = c.optimizer == "adamw" ? 1e-3 : 5e-3;
  if (c.cache_dir.empty()) c.cache_dir = (std::filesystem::path(c.out) / "cache").string();
}

/// Every option checked before the corpus is read or the model built (after
/// settle_defaults): an ember::Error naming the option and what it takes.
inline void validate_options(const PretrainConfig& c) {
  (void)config_by_name(c.config);  // its error lists the configurations
  EMBER_CHECK(!c.corpus.empty(), "bert_pretrain: --corpus must be gcide, synthetic or text files");
  EMBER_CHECK(std::filesystem::exists(c.vocab), "bert_pretrain: --vocab: no file '", c.vocab, "'");
  EMBER_CHECK(c.optimizer == "lamb" || c.optimizer == "adamw",
              "bert_pretrain: --optimizer must be lamb or adamw, got '", c.optimizer, "'");
  EMBER_CHECK(c.precision == "float" || c.precision == "bf16",
              "bert_pretrain: --precision must be float, bf16 or auto, got '", c.precision, "'");
  EMBER_CHECK(c.seq_len >= 8, "bert_pretrain: --seq-len must be at least 8, got ", c.seq_len);
  EMBER_CHECK(c.max_predictions > 0 && c.max_predictions < c.seq_len,
              "bert_pretrain: --max-predictions must be in [1, seq-len), got ", c.max_predictions);
  EMBER_CHECK(c.max_documents >= 0, "bert_pretrain: --max-documents must be >= 0, got ",
              c.max_documents);
  EMBER_CHECK(c.dupe_factor > 0, "bert_pretrain: --dupe-factor must be positive, got ",
              c.dupe_factor);
  EMBER_CHECK(c.eval_sequences > 0, "bert_pretrain: --eval-sequences must be positive, got ",
              c.eval_sequences);
  EMBER_CHECK(c.batch > 0, "bert_pretrain: --batch-size must be positive, got ", c.batch);
  EMBER_CHECK(c.accumulation > 0, "bert_pretrain: --accumulation must be positive, got ",
              c.accumulation);
  EMBER_CHECK(c.steps > 0, "bert_pretrain: --steps must be positive, got ", c.steps);
  EMBER_CHECK(c.warmup >= 0 && c.warmup < 1,
              "bert_pretrain: --warmup is a fraction in [0, 1), got ", c.warmup);
  EMBER_CHECK(c.lr > 0 && std::isfinite(c.lr), "bert_pretrain: --lr must be positive, got ", c.lr);
  EMBER_CHECK(c.weight_decay >= 0, "bert_pretrain: --weight-decay must be >= 0, got ",
              c.weight_decay);
  EMBER_CHECK(c.max_grad_norm >= 0, "bert_pretrain: --max-grad-norm must be >= 0, got ",
              c.max_grad_norm);
  EMBER_CHECK(c.eval_every > 0, "bert_pretrain: --eval-every must be positive, got ", c.eval_every);
  EMBER_CHECK(c.target_mlm_accuracy >= 0 && c.target_mlm_accuracy <= 1,
              "bert_pretrain: --target-mlm-accuracy is a fraction in (0, 1], got ",
              c.target_mlm_accuracy);
  EMBER_CHECK(c.init_checkpoint.empty() || std::filesystem::exists(c.init_checkpoint),
              "bert_pretrain: --init-checkpoint: no file '", c.init_checkpoint, "'");
  EMBER_CHECK(!c.eval_only || !c.init_checkpoint.empty() || !c.resume.empty(),
              "bert_pretrain: --eval-only needs the weights: --init-checkpoint FILE or --resume");
  EMBER_CHECK(c.stop_after >= 0, "bert_pretrain: --stop-after must be >= 0, got ", c.stop_after);
  EMBER_CHECK(c.log_every > 0, "bert_pretrain: --log-every must be positive, got ", c.log_every);
  if (!c.summary) {
    // The run's files go to --out; the tokenized corpus is cached (in OUT/cache unless
    // --cache-dir says otherwise) even for --eval-only.
    if (!c.eval_only) trainer::require_writable_directory(c.out, "bert_pretrain", "--out");
    trainer::require_writable_directory(c.cache_dir, "bert_pretrain", "--cache-dir");
  }
  trainer::check_batch_splits(c.batch, dist::world_size(), "global micro-batch", "bert_pretrain");
}

}  // namespace bert
