// The ResNet-50 trainer: MLPerf's image-classification workload, end to end.
//
// The body of examples/resnet50/train.cpp (host compiler, CPU only) and train.cu (nvcc: the same
// program, able to run on the GPU), with options.cpp, which reads the command line. Read it top
// to bottom: options (options.hpp), data, model, optimizer and schedule, the training loop,
// evaluation, checkpoints, reports.
//
//   resnet50_train --data fashion-mnist                     the README's main job
//   resnet50_train --data synthetic --batch-size 256        raw throughput, 224x224
//   resnet50_train --data synthetic --sweep-batch 32,64,128,256
//   resnet50_train --data imagefolder=/data/imagenet --optimizer lars --epochs 40
//   resnet50_train --summary --arch resnet18
//   resnet50_train --data imagefolder=/data/imagenet --init-checkpoint resnet50.safetensors
//                  --eval-only                         torchvision's weights, evaluated
//   mpirun -np 4 resnet50_train --data imagefolder=/data/imagenet --batch-size 1024
//                  data-parallel on 4 processes (one GPU each): 256 images per rank per step
//
// Outputs go to --out (default runs/resnet): metrics.jsonl, mllog.txt, curves.png (when python3
// with matplotlib is present) and the checkpoints ckpt-last.safetensors. Under mpirun each rank
// trains on its part of every global batch (DistributedDataParallel averages the gradients);
// rank 0 alone prints and writes those files (docs/distributed.md).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>
#include <ember/io/metrics_log.hpp>
#include <ember/io/progress.hpp>
#include <ember/optim/lars.hpp>
#include <ember/optim/mixed_precision.hpp>
#include <ember/optim/schedule.hpp>
#include <ember/optim/sgd.hpp>

#include "common/run_support.hpp"
#include "common/training_run.hpp"
#include "config.hpp"
#include "data_sources.hpp"
#include "resnet.hpp"
#include "weights.hpp"

namespace resnet {

using trainer::hms;
using trainer::printf0;
using trainer::seconds_since;
using trainer::wait_for_device;

using namespace ember;

// ---- Options: config.hpp (Config, and the optimizer recipe it gives) ---------------------------

// ---- Data ---------------------------------------------------------------------------------------

/// --data read into what it names; the only place that reads the text.
inline DataChoice read_data_choice(const std::string& d) {
  using Kind = DataChoice::Kind;
  if (d == "synthetic") return {Kind::synthetic, {}};
  if (d == "fashion-mnist") return {Kind::fashion_mnist, {}};
  if (d.rfind("cifar10=", 0) == 0 && d.size() > 8) return {Kind::cifar10, d.substr(8)};
  if (d.rfind("imagefolder=", 0) == 0 && d.size() > 12) return {Kind::image_folder, d.substr(12)};
  fail("resnet50: --data must be synthetic, fashion-mnist, cifar10=DIR or imagefolder=DIR, got '",
       d, "'");
}

/// This rank's part of the data (--batch-size is the global batch).
inline std::unique_ptr<ImageSource> open_data(const Config& c, Device device) {
  const Shard shard{dist::rank(), dist::world_size()};
  // On a GPU the host-side batches are page-locked, so their copies do not block the step.
  const bool pin = device.is_cuda();
  switch (c.source.kind) {
    case DataChoice::Kind::synthetic:
      return std::make_unique<SyntheticSource>(c.batch / shard.ranks, c.image_size, 1000,
                                               c.steps_per_epoch > 0 ? c.steps_per_epoch : 50,
                                               device, c.seed);
    case DataChoice::Kind::fashion_mnist:
      return fashion_mnist(c.batch, c.seed, pin, shard);
    case DataChoice::Kind::cifar10:
      return cifar10(c.source.dir, c.batch, c.seed, pin, shard);
    case DataChoice::Kind::image_folder:
      return image_folder(c.source.dir, c.batch, c.image_size, c.seed, c.workers, pin, shard);
  }
  fail("resnet50: unknown data source");
}

/// The images a model is built for: from the opened source, or (for --summary, which opens
/// nothing) what --data names: image folders are taken to have ImageNet's 1000 classes.
struct ImageShape {
  std::int64_t channels, size, classes;
};
inline ImageShape shape_of(const ImageSource& data) {
  return {data.channels(), data.image_size(), data.classes()};
}
inline ImageShape expected_shape(const Config& c) {
  switch (c.source.kind) {
    case DataChoice::Kind::fashion_mnist:
      return {1, 28, 10};
    case DataChoice::Kind::cifar10:
      return {3, 32, 10};
    default:
      return {3, c.image_size, 1000};
  }
}

// ---- Evaluation ---------------------------------------------------------------------------------

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

// ---- The model ----------------------------------------------------------------------------------

// Channels-last on both devices: cuDNN's NHWC tensor-core kernels on a GPU; on the CPU,
// oneDNN's brgconv kernels read and write NHWC with no reorders (docs/benchmarks.md).
inline constexpr MemoryFormat kFormat = MemoryFormat::channels_last;

/// Where a run keeps its checkpoint, and the one --resume names ("auto": that one).
inline std::filesystem::path last_checkpoint(const Config& c) {
  return trainer::last_checkpoint_in(c.out);
}
inline std::filesystem::path resume_path(const Config& c) {
  return c.resume == "auto" ? last_checkpoint(c) : std::filesystem::path(c.resume);
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

// ---- Training -----------------------------------------------------------------------------------

/// What a run measured.
struct RunResult {
  double images_per_second = 0;
  double best_top1 = 0;
  double seconds_to_target = -1;
  double train_seconds = 0;
};

/// evaluate() within MLPerf's eval interval of `epoch`, its accuracy logged.
template <class T>
Accuracy evaluate_epoch(ResNet<T>& model, ImageSource& data, Device device, std::int64_t epoch,
                        trainer::RunFiles& files) {
  const io::LogFields at{{"epoch_num", epoch + 1}};
  files.mllog().start(io::mllog::kEvalStart, nullptr, at);
  const Accuracy acc = evaluate(model, data, device, kFormat);
  files.mllog().event(io::mllog::kEvalAccuracy, acc.top1, at);
  files.mllog().end(io::mllog::kEvalStop, nullptr, at);
  return acc;
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
  ember::fault_point("train-step");  // tests/examples/kill_check.sh may kill the run here
  opt.set_lr(lr);
  opt.step();
  opt.zero_grad();
  return loss;
}

/// The end of an epoch in metrics.jsonl and on stdout.
inline void report_epoch(trainer::RunFiles& files, std::int64_t epoch, std::int64_t step,
                         double train_loss, const Accuracy& acc, double elapsed) {
  files.metrics(step, {{"epoch", epoch + 1},
                       {"train_loss", train_loss},
                       {"eval_accuracy", acc.top1},
                       {"eval_top5_accuracy", acc.top5},
                       {"time_s", elapsed}});
  printf0("epoch %lld: top-1 %.2f%%, top-5 %.2f%%, %s elapsed\n", static_cast<long long>(epoch + 1),
          100 * acc.top1, 100 * acc.top5, hms(elapsed).c_str());
}

template <class T, class Opt>
RunResult train(const Config& c, ImageSource& data, Device device, bool quiet = false) {
  trainer::RunFiles files(c.out, io::mllog::kResnet);
  std::optional<ember::detect_anomaly> anomaly;  // this thread, while the run lasts
  if (c.detect_anomaly) anomaly.emplace();

  // The model, in the compute type T, on the device.
  nn::manual_seed(c.seed);
  ResNet<T> model(model_options(c, shape_of(data), device, kFormat));
  if (!c.init_checkpoint.empty()) load_weights(model, c.init_checkpoint);

  // Optimizer and schedule: SGD with warmup + cosine, or MLPerf's LARS with warmup + poly(2).
  const std::int64_t steps_per_epoch = data.batches_per_epoch();
  const Recipe<Opt> recipe = make_recipe<Opt>(c, steps_per_epoch);
  Opt opt(optim::decay_groups(model, recipe.main, recipe.excluded));

  std::int64_t step = 0, first_epoch = 0;
  if (const auto p = trainer::resume_from(c.resume, files, model, opt, "resnet50")) {
    step = p->step;
    first_epoch = p->epoch;
    printf0("resumed from %s at epoch %lld, step %lld\n", resume_path(c).string().c_str(),
            static_cast<long long>(first_epoch), static_cast<long long>(step));
  }

  // Every rank starts from rank 0's weights and averages its gradients with the others'.
  dist::DistributedDataParallel ddp(model);
  // --sync-bn: batch norm normalises with the global batch's statistics, as one process would.
  if (c.sync_bn) printf0("sync-bn: %zu batch-norm layers\n", dist::sync_batch_norm(model));

  files.start_run({device, c.batch, std::is_same_v<Opt, optim::LARS> ? "lars" : "sgd", c.lr, c.seed,
                   data.train_size(), data.eval_size()});
  const CrossEntropyOptions loss_options{.label_smoothing = c.label_smoothing};
  RunResult result;
  const auto run_start = std::chrono::steady_clock::now();
  trainer::Throughput throughput(trainer::warm_up_steps(c.epochs * steps_per_epoch), device);
  for (std::int64_t epoch = first_epoch; epoch < c.epochs; ++epoch) {
    files.mllog().start(io::mllog::kEpochStart, nullptr, {{"epoch_num", epoch + 1}});
    io::ProgressBar bar =
        files.progress_bar(steps_per_epoch, "epoch " + std::to_string(epoch + 1), quiet);
    trainer::Mean train_loss;
    for (std::int64_t b = 0; b < steps_per_epoch; ++b, ++step) {
      throughput.before_step(step - first_epoch * steps_per_epoch);
      const Batch batch = data.train_batch(epoch, b);
      const double lr = recipe.schedule(step);
      const Var<T> loss = train_step(model, opt, batch, lr, step, device, loss_options);
      throughput.count(batch.labels.numel() * dist::world_size());  // every rank's images
      if ((b + 1) % c.log_every == 0 || b + 1 == steps_per_epoch) {
        const double l = trainer::step_loss(loss, step + 1, "resnet50");  // waits for the device
        train_loss.add(l);
        files.metrics(step + 1, {{"epoch", epoch + 1}, {"loss", l}, {"lr", lr}});
        bar.update(b + 1, {{"loss", l}, {"lr", lr}});
      }
    }
    throughput.pause();
    bar.finish();
    files.mllog().end(io::mllog::kEpochStop, nullptr, {{"epoch_num", epoch + 1}});

    ddp.sync_buffers();  // every rank evaluates rank 0's running statistics, the ones it saves
    const Accuracy acc = evaluate_epoch(model, data, device, epoch, files);
    const double elapsed = seconds_since(run_start);
    report_epoch(files, epoch, step, train_loss.value(), acc, elapsed);
    result.best_top1 = std::max(result.best_top1, acc.top1);
    files.save(model, opt, {.step = step, .epoch = epoch + 1});
    throughput.resume();
    if (c.target_accuracy > 0 && acc.top1 >= c.target_accuracy && result.seconds_to_target < 0) {
      result.seconds_to_target = elapsed;
      printf0("target top-1 %.2f%% reached after %s\n", 100 * c.target_accuracy,
              hms(elapsed).c_str());
      if (c.stop_at_target) break;
    }
    if (c.stop_after > 0 && epoch + 1 >= c.stop_after) break;
  }
  result.train_seconds = seconds_since(run_start);
  result.images_per_second = throughput.per_second();
  files.stop_run(c.target_accuracy <= 0 || result.seconds_to_target >= 0);
  if (data.skipped() > 0) {
    printf0("skipped %lld unreadable images\n", static_cast<long long>(data.skipped()));
  }
  return result;
}

// ---- The program --------------------------------------------------------------------------------

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

template <class T>
RunResult dispatch_optimizer(const Config& c, ImageSource& data, Device device, bool quiet) {
  if (c.optimizer == "lars") return train<T, optim::LARS>(c, data, device, quiet);
  EMBER_CHECK(c.optimizer == "sgd", "resnet50: --optimizer must be sgd or lars, got '", c.optimizer,
              "'");
  return train<T, optim::SGD>(c, data, device, quiet);
}

inline RunResult run(const Config& c, ImageSource& data, Device device, bool quiet = false) {
  if (c.precision == "bf16") return dispatch_optimizer<bf16>(c, data, device, quiet);
  EMBER_CHECK(c.precision == "float", "resnet50: --precision must be float, bf16 or auto, got '",
              c.precision, "'");
  return dispatch_optimizer<float>(c, data, device, quiet);
}

inline int main(int argc, char** argv) {
  trainer::report_file_size_limit_as_error();
  // Then: under mpirun this joins the other ranks (MPI may take its own arguments out of argv).
  dist::World world = dist::init(argc, argv);
  Config c;
  if (const auto status = parse_options(c, argc, argv)) return *status;
  Device device = Device::cpu();
  if (const auto status = trainer::check_options([&] {
        device = trainer::pick_device(c.device, "resnet50", world.local_rank());
        settle_defaults(c, device);
        validate_options(c);
      })) {
    return *status;
  }

  try {
    if (c.summary) {
      const ImageShape images = expected_shape(c);
      const ResNet<float> model(model_options(c, images, Device::cpu(), kFormat));
      if (world.is_main()) {
        std::cout << summary(model, Shape{1, images.channels, images.size, images.size});
      }
      return 0;
    }
    printf0("ember ResNet trainer: %s (width %lld), %s, batch %lld, %s, %s on %s\n", c.arch.c_str(),
            static_cast<long long>(c.width), c.data.c_str(), static_cast<long long>(c.batch),
            c.optimizer.c_str(), c.precision.c_str(), device.str().c_str());
    if (world.size() > 1) {
      printf0("data-parallel: %d ranks, %lld images per rank per step\n", world.size(),
              static_cast<long long>(c.batch / world.size()));
    }

    if (!c.sweep_batch.empty()) {
      printf0("%10s %14s\n", "batch", "images/s");
      for (const std::int64_t b : c.sweep_batch) {
        Config one = c;
        one.batch = b;
        one.epochs = 1;
        one.out = c.out + "/sweep-" + std::to_string(b);
        SyntheticSource data(b / world.size(), c.image_size, 1000,
                             c.steps_per_epoch > 0 ? c.steps_per_epoch : 30, device, c.seed);
        const RunResult r = run(one, data, device, true);
        printf0("%10lld %14.1f\n", static_cast<long long>(b), r.images_per_second);
      }
      return 0;
    }

    std::unique_ptr<ImageSource> data = open_data(c, device);
    printf0("data: %lld training and %lld evaluation images of %lldx%lld, %lld classes\n",
            static_cast<long long>(data->train_size()), static_cast<long long>(data->eval_size()),
            static_cast<long long>(data->image_size()), static_cast<long long>(data->image_size()),
            static_cast<long long>(data->classes()));
    if (c.eval_only) {
      const Accuracy a = c.precision == "bf16" ? evaluate_checkpoint<bf16>(c, *data, device)
                                               : evaluate_checkpoint<float>(c, *data, device);
      printf0("\n== evaluation ==\n");
      printf0("top-1 accuracy: %.2f%%\ntop-5 accuracy: %.2f%%\n", 100 * a.top1, 100 * a.top5);
      return 0;
    }
    const RunResult r = run(c, *data, device);
    printf0("\n== results ==\n");
    printf0("training throughput: %.1f images/s (after warm-up)\n", r.images_per_second);
    if (world.size() > 1) {
      printf0("per rank: %.1f images/s (%d ranks)\n", r.images_per_second / world.size(),
              world.size());
    }
    printf0("best top-1 accuracy: %.2f%%\n", 100 * r.best_top1);
    printf0("training time: %s\n", hms(r.train_seconds).c_str());
    if (c.target_accuracy > 0) {
      if (r.seconds_to_target >= 0) {
        printf0("time to %.2f%% top-1: %s\n", 100 * c.target_accuracy,
                hms(r.seconds_to_target).c_str());
        if (c.cost_per_hour > 0) {
          printf0("cost to %.2f%% top-1: %.2f (at %.2f per hour)\n", 100 * c.target_accuracy,
                  r.seconds_to_target / 3600 * c.cost_per_hour, c.cost_per_hour);
        }
      } else {
        printf0("target %.2f%% top-1 not reached\n", 100 * c.target_accuracy);
      }
    }
    if (world.is_main()) {
      trainer::plot_curves(std::filesystem::path(c.out) / "metrics.jsonl",
                           std::filesystem::path(c.out) / "curves.png", "ResNet training");
    }
    return c.target_accuracy > 0 && r.seconds_to_target < 0 ? 3 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return trainer::kExitFailure;
  }
}

}  // namespace resnet
