// The ResNet trainer's options settled and checked (options.hpp): the defaults that depend on the
// data and the device, then every option, before any data is read or model built.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>

#include <ember/dist/world.hpp>
#include <ember/ember.hpp>

#include "common/run_support.hpp"
#include "data_sources.hpp"
#include "options.hpp"
#include "resnet.hpp"

namespace resnet {

using namespace ember;

/// Fills the defaults that depend on the data and the device.
inline void settle_defaults(Config& c, Device device) {
  c.source = read_data_choice(c.data);
  const bool small = c.source.small();
  const bool cpu = device.is_cpu();
  if (c.arch == "auto") c.arch = small ? "resnet18" : "resnet50";
  if (c.width == 0) c.width = small && cpu ? 16 : 64;
  if (c.batch == 0) c.batch = small ? 128 : (cpu ? 16 : 256);
  if (c.epochs == 0) c.epochs = small ? (cpu ? 2 : 5) : 1;
  if (!c.source.takes_image_size()) c.image_size = 0;
  if (c.lr == 0) {
    // Goyal et al.'s linear scaling for SGD (0.1 per 256 images); MLPerf's LARS base rate.
    c.lr = c.optimizer == "lars" ? 2.0 * c.batch / 256.0 : 0.1 * c.batch / 256.0 * (small ? 2 : 1);
  }
  if (c.precision == "auto") c.precision = cpu ? "float" : "bf16";
  EMBER_CHECK(!cpu || c.precision != "bf16" || cpu_has_avx512_bf16(),
              "resnet50: --precision bf16 on the CPU needs AVX512-BF16, which this CPU lacks "
              "(use --precision float)");
}

/// Every option checked before any data is read or model built (after settle_defaults): an
/// ember::Error naming the option and what it takes.
inline void validate_options(const Config& c) {
  (void)parse_arch(c.arch);  // its error lists the architectures (--data: settle_defaults)
  EMBER_CHECK(c.optimizer == "sgd" || c.optimizer == "lars",
              "resnet50: --optimizer must be sgd or lars, got '", c.optimizer, "'");
  EMBER_CHECK(c.precision == "float" || c.precision == "bf16",
              "resnet50: --precision must be float, bf16 or auto, got '", c.precision, "'");
  EMBER_CHECK(c.epochs > 0, "resnet50: --epochs must be positive, got ", c.epochs);
  EMBER_CHECK(c.batch > 0, "resnet50: --batch-size must be positive, got ", c.batch);
  const int ranks = dist::world_size();
  trainer::check_batch_splits(c.batch, ranks, "global batch", "resnet50");
  EMBER_CHECK(c.width > 0, "resnet50: --width must be positive, got ", c.width);
  EMBER_CHECK(c.image_size == 0 || c.image_size >= 8,
              "resnet50: --image-size must be at least 8, got ", c.image_size);
  EMBER_CHECK(c.steps_per_epoch >= 0,
              "resnet50: --steps-per-epoch must be 0 (all) or positive, got ", c.steps_per_epoch);
  EMBER_CHECK(c.lr > 0 && std::isfinite(c.lr), "resnet50: --lr must be positive, got ", c.lr);
  EMBER_CHECK(c.momentum >= 0 && c.momentum < 1, "resnet50: --momentum must be in [0, 1), got ",
              c.momentum);
  EMBER_CHECK(c.weight_decay >= 0, "resnet50: --weight-decay must be >= 0, got ", c.weight_decay);
  EMBER_CHECK(c.label_smoothing >= 0 && c.label_smoothing < 1,
              "resnet50: --label-smoothing must be in [0, 1), got ", c.label_smoothing);
  EMBER_CHECK(c.warmup_epochs >= 0, "resnet50: --warmup-epochs must be >= 0, got ",
              c.warmup_epochs);
  EMBER_CHECK(c.target_accuracy >= 0 && c.target_accuracy <= 1,
              "resnet50: --target-accuracy is a fraction in (0, 1], got ", c.target_accuracy);
  EMBER_CHECK(c.stop_after >= 0, "resnet50: --stop-after must be >= 0, got ", c.stop_after);
  EMBER_CHECK(c.cost_per_hour >= 0, "resnet50: --cost-per-hour must be >= 0, got ",
              c.cost_per_hour);
  EMBER_CHECK(c.workers >= 0, "resnet50: --workers must be >= 0, got ", c.workers);
  EMBER_CHECK(c.log_every > 0, "resnet50: --log-every must be positive, got ", c.log_every);
  for (const std::int64_t b : c.sweep_batch) {
    EMBER_CHECK(b > 0 && b % ranks == 0,
                "resnet50: --sweep-batch sizes must be positive multiples of ", ranks,
                " (the ranks), got ", b);
  }
  EMBER_CHECK(c.init_checkpoint.empty() || std::filesystem::exists(c.init_checkpoint),
              "resnet50: --init-checkpoint: no file '", c.init_checkpoint, "'");
  EMBER_CHECK(!c.eval_only || !c.init_checkpoint.empty() || !c.resume.empty(),
              "resnet50: --eval-only needs the weights: --init-checkpoint FILE or --resume");
  EMBER_CHECK(!c.eval_only || c.sweep_batch.empty(),
              "resnet50: --eval-only and --sweep-batch do not go together");
  EMBER_CHECK(c.sweep_batch.empty() || c.source.kind == DataChoice::Kind::synthetic,
              "resnet50: --sweep-batch needs --data synthetic");
  if (!c.summary && !c.eval_only) trainer::require_writable_directory(c.out, "resnet50", "--out");
}

}  // namespace resnet
