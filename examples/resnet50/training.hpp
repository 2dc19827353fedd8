// The parts of the ResNet trainer's loop (train_main.hpp): the model's options, one training step,
// the top-1 and top-5 accuracy, and the checkpoints (--resume, --init-checkpoint).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>

#include "common/run_support.hpp"
#include "common/training_run.hpp"
#include "data_sources.hpp"
#include "options.hpp"
#include "resnet.hpp"
#include "weights.hpp"

namespace resnet {

using namespace ember;
using trainer::printf0;

struct Accuracy {
  double top1 = 0, top5 = 0;
};

/// Top-1 and top-5 accuracy over the evaluation set, in eval mode, without recording (each rank
/// counts its part of every batch; the counts are summed over the ranks).
template <class T>
Accuracy evaluate(ResNet<T>& model, ImageSource& data, Device device, MemoryFormat format) {
  model.eval();
  no_grad guard;
  double top1 = 0, top5 = 0, n = 0;
  for (std::int64_t b = 0; b < data.eval_batches(); ++b) {
    const Batch batch = data.eval_batch(b);
    const Var<T> x(Tensor<T>(cast<T>(batch.images.to(device).contiguous(format))));
    const Tensor<float> logits =
        Tensor<float>(cast<float>(model.forward(x).value())).to(Device::cpu());
    const std::int64_t rows = logits.size(0), classes = logits.size(1);
    const float* p = logits.data();
    const std::int64_t* y = batch.labels.data();
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t higher = trainer::rank_of(p + r * classes, classes, y[r]);
      top1 += higher == 0;
      top5 += higher < 5;
    }
    n += static_cast<double>(rows);
  }
  model.train();
  const Tensor<double> counts = from_vector<double>({top1, top5, n});
  dist::all_reduce(counts);
  const std::vector<double> total = counts.to_vector();
  return {total[0] / total[2], total[1] / total[2]};
}

// Channels-last on both devices: cuDNN's NHWC tensor-core kernels on a GPU; on the CPU,
// oneDNN's brgconv kernels read and write NHWC with no reorders (docs/benchmarks.md).
inline constexpr MemoryFormat kFormat = MemoryFormat::channels_last;

/// The checkpoint --resume names ("auto": the one the run saves in --out).
inline std::filesystem::path resume_path(const Config& c) {
  return trainer::resume_path(c.resume, trainer::last_checkpoint_in(c.out));
}

/// The architecture for this run's data and device.
inline ResNetOptions model_options(const Config& c, ImageShape images, Device device,
                                   MemoryFormat format) {
  ResNetOptions mo;
  mo.arch = parse_arch(c.arch);
  mo.num_classes = images.classes;
  mo.in_channels = images.channels;
  mo.small_stem = images.size <= 32;
  mo.zero_init_residual = c.zero_init_residual;
  mo.width = c.width;
  mo.device = device;
  mo.format = format;
  return mo;
}

/// Top-1 and top-5 of the weights named by --init-checkpoint or --resume (--eval-only).
template <class T>
Accuracy evaluate_checkpoint(const Config& c, ImageSource& data, Device device) {
  ResNet<T> model(model_options(c, shape_of(data), device, kFormat));
  if (!c.init_checkpoint.empty()) {
    load_weights(model, c.init_checkpoint);
  } else {
    const std::filesystem::path from = resume_path(c);
    EMBER_CHECK(std::filesystem::exists(from), "resnet50: --resume: no checkpoint at '",
                from.string(), "'");
    load_weights(model, from);
  }
  return evaluate(model, data, device, kFormat);
}

/// One training step on `batch` at learning rate `lr`: forward, loss, backward, update. Returns the
/// loss (on the device: reading it waits for the step).
template <class T, class Opt>
Var<T> train_step(ResNet<T>& model, Opt& opt, const Batch& batch, double lr, std::int64_t step,
                  Device device, const CrossEntropyOptions& loss_options) {
  // Pinned batches (every source but synthetic, on a GPU) are copied without the host waiting.
  const Var<T> x(
      Tensor<T>(cast<T>(batch.images.to(device, /*non_blocking=*/true).contiguous(kFormat))));
  const Tensor<std::int64_t> y = batch.labels.to(device, /*non_blocking=*/true);
  Var<T> loss = cross_entropy(model.forward(x), y, loss_options);
  if (device.is_cpu()) {
    trainer::check_finite_loss(static_cast<double>(loss.value().item()), step + 1, "resnet50");
  }
  loss.backward();
  trainer::optimizer_step(opt, lr);
  return loss;
}

/// The end of an epoch on stdout.
inline void print_epoch(std::int64_t epoch, const Accuracy& acc, double elapsed) {
  printf0("epoch %lld: top-1 %.2f%%, top-5 %.2f%%, %s elapsed\n", static_cast<long long>(epoch + 1),
          100 * acc.top1, 100 * acc.top5, trainer::hms(elapsed).c_str());
}

/// --resume's checkpoint loaded into the model and the optimizer. Returns where the run goes on
/// from: its step and epoch (0 and 0 without one).
template <class T, class Opt>
io::TrainingProgress resume(const Config& c, const trainer::RunFiles& files, ResNet<T>& model,
                            Opt& opt) {
  const auto p = trainer::resume_from(c.resume, files, model, opt, "resnet50");
  if (!p) return {};
  printf0("resumed from %s at epoch %lld, step %lld\n", resume_path(c).string().c_str(),
          static_cast<long long>(p->epoch), static_cast<long long>(p->step));
  return *p;
}

}  // namespace resnet
