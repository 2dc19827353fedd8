// The ResNet trainer: MLPerf's image-classification workload, end to end. train.cpp (host
// compiler, CPU only) and train.cu (nvcc: the same program, able to run on the GPU) are this file
// and a main(). The loop comes first; what it calls is beside it: options.hpp and
// validate_options.hpp (the command line), config.hpp (the optimizer recipe), data_sources.hpp
// (--data), training.hpp (one step, the accuracy, checkpoints), resnet.hpp (the model), and
// common/training_run.hpp (what watches the loop). docs/resnet50.md says the rest.
//
//   resnet50_train --data fashion-mnist                     the README's main job
//   resnet50_train --data synthetic --batch-size 256        raw throughput, 224x224
//   resnet50_train --data imagefolder=/data/imagenet --optimizer lars --epochs 40
//   mpirun -np 4 resnet50_train --data imagefolder=/data/imagenet --batch-size 1024
#pragma once

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "common/training_run.hpp"
#include "config.hpp"
#include "training.hpp"
#include "validate_options.hpp"

namespace resnet {

using namespace ember;
using trainer::printf0;

struct RunResult : trainer::RunSummary {
  double best_top1 = 0;
};

template <class T, class Opt>
RunResult train(const Config& c, ImageSource& data, Device device, bool quiet = false) {
  const std::int64_t steps_per_epoch = data.batches_per_epoch();
  trainer::Run run({.out = c.out,
                    .benchmark = io::mllog::kResnet,
                    .program = "resnet50",
                    .device = device,
                    .steps = c.epochs * steps_per_epoch,
                    .steps_per_epoch = steps_per_epoch,
                    .log_every = c.log_every,
                    .target = c.target_accuracy,
                    .quiet = quiet});
  std::optional<ember::detect_anomaly> anomaly;  // this thread, while the run lasts
  if (c.detect_anomaly) anomaly.emplace();

  // The model, in the compute type T, on the device; SGD with warmup + cosine, or MLPerf's LARS
  // with warmup + poly(2); every rank starts from rank 0's weights and averages its gradients.
  nn::manual_seed(c.seed);
  ResNet<T> model(model_options(c, shape_of(data), device, kFormat));
  if (!c.init_checkpoint.empty()) load_weights(model, c.init_checkpoint);
  const Recipe<Opt> recipe = make_recipe<Opt>(c, steps_per_epoch);
  Opt opt(optim::decay_groups(model, recipe.main, recipe.excluded));
  const io::TrainingProgress resumed = resume(c, run.files(), model, opt);
  dist::DistributedDataParallel ddp(model);
  // --sync-bn: batch norm normalises with the global batch's statistics, as one process would.
  if (c.sync_bn) printf0("sync-bn: %zu batch-norm layers\n", dist::sync_batch_norm(model));

  std::int64_t step = resumed.step;
  run.start({device, c.batch, std::is_same_v<Opt, optim::LARS> ? "lars" : "sgd", c.lr, c.seed,
             data.train_size(), data.eval_size()},
            step);
  const CrossEntropyOptions loss_options{.label_smoothing = c.label_smoothing};
  RunResult result;
  for (std::int64_t epoch = resumed.epoch; epoch < c.epochs; ++epoch) {
    run.start_epoch(epoch);
    for (std::int64_t b = 0; b < steps_per_epoch; ++b) {
      const Batch batch = data.train_batch(epoch, b);
      const double lr = recipe.schedule(step);
      const Var<T> loss = train_step(model, opt, batch, lr, step, device, loss_options);
      run.after_step(++step, batch.labels.numel() * dist::world_size(), lr, loss);
    }
    run.end_epoch();

    ddp.sync_buffers();  // every rank evaluates rank 0's running statistics, the ones it saves
    const Accuracy acc = run.evaluate({{"epoch_num", epoch + 1}},
                                      [&] { return evaluate(model, data, device, kFormat); });
    const bool reached = run.report(step, acc.top1,
                                    {{"epoch", epoch + 1},
                                     {"train_loss", run.epoch_loss()},
                                     {"eval_accuracy", acc.top1},
                                     {"eval_top5_accuracy", acc.top5}});
    print_epoch(epoch, acc, run.elapsed());
    result.best_top1 = std::max(result.best_top1, acc.top1);
    run.save(model, opt, {.step = step, .epoch = epoch + 1});
    if (reached) {
      printf0("target top-1 %.2f%% reached after %s\n", 100 * c.target_accuracy,
              trainer::hms(run.elapsed()).c_str());
      if (c.stop_at_target) break;
    }
    if (c.stop_after > 0 && epoch + 1 >= c.stop_after) break;
  }
  static_cast<trainer::RunSummary&>(result) = run.finish(step);
  if (data.skipped() > 0) {
    printf0("skipped %lld unreadable images\n", static_cast<long long>(data.skipped()));
  }
  return result;
}

/// The run in the compute type --precision names, with the optimizer --optimizer names.
inline RunResult run(const Config& c, ImageSource& data, Device device, bool quiet = false) {
  return trainer::with_precision(c.precision, [&]<class T>(T) {
    return c.optimizer == "lars" ? train<T, optim::LARS>(c, data, device, quiet)
                                 : train<T, optim::SGD>(c, data, device, quiet);
  });
}

// ---- The program --------------------------------------------------------------------------------

/// Images per second for each batch size of --sweep-batch (synthetic images).
inline void sweep_batch_sizes(const Config& c, Device device) {
  printf0("%10s %14s\n", "batch", "images/s");
  for (const std::int64_t b : c.sweep_batch) {
    Config one = c;
    one.batch = b;
    one.epochs = 1;
    one.out = c.out + "/sweep-" + std::to_string(b);
    SyntheticSource data(b / dist::world_size(), c.image_size, 1000,
                         c.steps_per_epoch > 0 ? c.steps_per_epoch : 30, device, c.seed);
    printf0("%10lld %14.1f\n", static_cast<long long>(b),
            run(one, data, device, true).items_per_second);
  }
}

inline int main(int argc, char** argv) {
  return trainer::main<Config>(
      argc, argv, "resnet50", [](const Config& c, Device device, const dist::World& world) {
        if (c.summary) {
          const ImageShape images = expected_shape(c);
          const ResNet<float> model(model_options(c, images, Device::cpu(), kFormat));
          if (world.is_main()) {
            std::cout << summary(model, Shape{1, images.channels, images.size, images.size});
          }
          return 0;
        }
        printf0("ember ResNet trainer: %s (width %lld), %s, batch %lld, %s, %s on %s\n",
                c.arch.c_str(), static_cast<long long>(c.width), c.data.c_str(),
                static_cast<long long>(c.batch), c.optimizer.c_str(), c.precision.c_str(),
                device.str().c_str());
        if (world.size() > 1) {
          printf0("data-parallel: %d ranks, %lld images per rank per step\n", world.size(),
                  static_cast<long long>(c.batch / world.size()));
        }
        if (!c.sweep_batch.empty()) {
          sweep_batch_sizes(c, device);
          return 0;
        }

        std::unique_ptr<ImageSource> data = open_data(c, device);
        printf0(
            "data: %lld training and %lld evaluation images of %lldx%lld, %lld classes\n",
            static_cast<long long>(data->train_size()), static_cast<long long>(data->eval_size()),
            static_cast<long long>(data->image_size()), static_cast<long long>(data->image_size()),
            static_cast<long long>(data->classes()));
        if (c.eval_only) {
          const Accuracy a = trainer::with_precision(
              c.precision, [&]<class T>(T) { return evaluate_checkpoint<T>(c, *data, device); });
          printf0("\n== evaluation ==\n");
          printf0("top-1 accuracy: %.2f%%\ntop-5 accuracy: %.2f%%\n", 100 * a.top1, 100 * a.top5);
          return 0;
        }
        const RunResult r = run(c, *data, device);
        trainer::report_throughput(r, "images");
        printf0("best top-1 accuracy: %.2f%%\n", 100 * r.best_top1);
        trainer::report_time(r, c.target_accuracy, "top-1", c.cost_per_hour);
        trainer::plot_curves(c.out, "ResNet training");
        return c.target_accuracy > 0 && r.seconds_to_target < 0 ? 3 : 0;
      });
}

}  // namespace resnet
