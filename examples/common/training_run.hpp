// What a training run keeps around its loop, the same for both example trainers
// (examples/resnet50, examples/bert):
// - RunFiles: the --out folder and what rank 0 writes there (MLPerf's log mllog.txt,
//   metrics.jsonl, the checkpoint ckpt-last.safetensors), with the run's opening and closing
//   MLPerf events; the other ranks write nowhere.
// - resume_from: --resume's checkpoint loaded into the model and the optimizer.
// - Throughput: items per second of training alone, after a warm-up and without evaluations.
// - step_loss: the loss as the logs report it (read from the device, averaged over the ranks,
//   checked finite).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include <ember/dist/world.hpp>
#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>
#include <ember/io/metrics_log.hpp>
#include <ember/io/progress.hpp>
#include <ember/io/temp_file.hpp>

#include "run_support.hpp"

namespace trainer {

/// The checkpoint a run in `out` saves (and `--resume auto` loads).
inline std::filesystem::path last_checkpoint_in(const std::filesystem::path& out) {
  return out / "ckpt-last.safetensors";
}

/// The facts MLPerf's log records before the run starts.
struct RunFacts {
  ember::Device device;
  std::int64_t global_batch = 0;
  std::string optimizer;
  double learning_rate = 0;
  std::uint64_t seed = 0;
  std::int64_t train_samples = 0;
  std::int64_t eval_samples = 0;
};

/// The files of a run in its output folder, written by rank 0 alone. Made first: it opens MLPerf's
/// init interval and removes the temporary files a run killed while saving left behind.
class RunFiles {
 public:
  RunFiles(const std::filesystem::path& out, std::string_view benchmark)
      : lead_(ember::dist::rank() == 0), checkpoint_(last_checkpoint_in(out)) {
    if (lead_) {
      std::filesystem::create_directories(out);
      ember::io::remove_stale_temp_files(checkpoint_);
      mllog_file_.open(out / "mllog.txt", std::ios::app);
      metrics_.emplace(out / "metrics.jsonl");
    }
    ember::io::MlLoggerOptions options;
    options.root_dir = EMBER_SOURCE_DIR;  // file names relative to the repository
    mllog_.emplace(lead_ ? static_cast<std::ostream&>(mllog_file_) : nowhere(), options);
    mllog_->event(ember::io::mllog::kSubmissionBenchmark, std::string(benchmark));
    mllog_->start(ember::io::mllog::kInitStart);
  }

  /// Whether this rank writes the files (rank 0).
  bool lead() const { return lead_; }
  /// Where the run saves its checkpoint (and `--resume auto` looks for one).
  const std::filesystem::path& checkpoint() const { return checkpoint_; }
  ember::io::MlLogger& mllog() { return *mllog_; }
  /// A progress bar on stderr (rank 0; nowhere elsewhere): redrawn on a terminal, plain lines
  /// otherwise or when `quiet`.
  ember::io::ProgressBar progress_bar(std::int64_t total, const std::string& label,
                                      bool quiet) const {
    ember::io::ProgressOptions options;
    if (quiet) options.terminal = false;
    return ember::io::ProgressBar(total, label, lead_ ? std::cerr : nowhere(), options);
  }

  /// One line of metrics.jsonl.
  void metrics(std::int64_t step, const ember::io::LogFields& fields) {
    if (metrics_) metrics_->log(step, fields);
  }

  /// Closes the init interval with the run's facts and opens the run.
  void start_run(const RunFacts& f) {
    namespace mllog = ember::io::mllog;
    mllog_->event(mllog::kSubmissionPlatform,
                  std::to_string(ember::dist::world_size()) + "x" + f.device.str());
    mllog_->event(mllog::kGlobalBatchSize, f.global_batch);
    mllog_->event(mllog::kOptName, f.optimizer);
    mllog_->event(mllog::kOptBaseLearningRate, f.learning_rate);
    mllog_->event(mllog::kSeed, f.seed);
    mllog_->event(mllog::kTrainSamples, f.train_samples);
    mllog_->event(mllog::kEvalSamples, f.eval_samples);
    mllog_->end(mllog::kInitStop);
    mllog_->start(mllog::kRunStart);
  }

  /// Closes the run: success, or aborted when it stopped short of its target.
  void stop_run(bool reached_target) {
    namespace mllog = ember::io::mllog;
    mllog_->end(mllog::kRunStop, nullptr,
                {{"status", std::string(reached_target ? mllog::kSuccess : mllog::kAborted)}});
  }

  /// Saves the model and the optimizer (rank 0; every rank holds the same weights). A sharded
  /// optimizer's state (ZeRO-1's) is gathered by every rank first: a collective.
  template <class Model, class Optimizer>
  void save(Model& model, Optimizer& opt, const ember::io::TrainingProgress& progress) const {
    if constexpr (requires { Optimizer::kShardedState; }) {
      const ember::optim::OptimizerState state = opt.state_dict();
      if (lead_) ember::io::save_training_checkpoint(checkpoint_, model, state, progress);
    } else if (lead_) {
      ember::io::save_training_checkpoint(checkpoint_, model, opt, progress);
    }
  }

 private:
  bool lead_;
  std::filesystem::path checkpoint_;
  std::ofstream mllog_file_;
  std::optional<ember::io::MlLogger> mllog_;
  std::optional<ember::io::JsonlWriter> metrics_;
};

/// --resume: "" (start afresh), "auto" (the run's own checkpoint when there is one) or a path.
/// Loads the checkpoint into `model` and `opt` and gives its progress; nothing when there is none
/// to load, which only "auto" (or `missing_ok`) allows.
template <class Model, class Optimizer>
std::optional<ember::io::TrainingProgress> resume_from(const std::string& resume,
                                                       const RunFiles& files, Model& model,
                                                       Optimizer& opt, const char* program,
                                                       bool missing_ok = true) {
  if (resume.empty()) return std::nullopt;
  const std::filesystem::path from =
      resume == "auto" ? files.checkpoint() : std::filesystem::path(resume);
  if (std::filesystem::exists(from)) return ember::io::load_training_checkpoint(from, model, opt);
  EMBER_CHECK(resume == "auto" && missing_ok, program, ": --resume: no checkpoint at '",
              from.string(), "'");
  return std::nullopt;
}

/// Training throughput: items per second over the steps after a warm-up (the first steps allocate
/// memory and pick algorithms), with evaluations and checkpoints left out (pause() before them,
/// resume() after). The clock is read after the device's queued work is done.
class Throughput {
 public:
  Throughput(std::int64_t warm_steps, ember::Device device)
      : warm_steps_(warm_steps), device_(device) {}

  /// Before each step, with the steps this run has taken so far: starts the clock after the
  /// warm-up.
  void before_step(std::int64_t steps_taken) {
    if (steps_taken == warm_steps_ && !started_) {
      started_ = true;
      resume();
    }
  }
  /// After a step that processed `items` (counted once the clock runs).
  void count(std::int64_t items) {
    if (running_) items_ += items;
  }
  void pause() {
    if (!running_) return;
    wait_for_device(device_);
    seconds_ += seconds_since(running_from_);
    running_ = false;
  }
  void resume() {
    if (!started_ || running_) return;
    wait_for_device(device_);
    running_from_ = std::chrono::steady_clock::now();
    running_ = true;
  }
  /// Items per second so far (0 before any timed step).
  double per_second() {
    pause();
    const double rate = seconds_ > 0 ? static_cast<double>(items_) / seconds_ : 0;
    resume();
    return rate;
  }

 private:
  std::int64_t warm_steps_;
  ember::Device device_;
  bool started_ = false, running_ = false;
  std::chrono::steady_clock::time_point running_from_{};
  std::int64_t items_ = 0;
  double seconds_ = 0;
};

/// The mean of the values added (NaN of none): the losses an epoch logged, say.
class Mean {
 public:
  void add(double x) {
    sum_ += x;
    ++count_;
  }
  double value() const { return count_ > 0 ? sum_ / static_cast<double>(count_) : NAN; }

 private:
  double sum_ = 0;
  std::int64_t count_ = 0;
};

/// The warm-up of a run of `steps` steps: a tenth of it, between 1 and 10.
inline std::int64_t warm_up_steps(std::int64_t steps) {
  return std::min<std::int64_t>(10, std::max<std::int64_t>(1, steps / 10));
}

/// A loss as the logs report it: read from the device (which waits for it), averaged over the
/// ranks, and checked finite at `step`.
template <class T>
double step_loss(const ember::Var<T>& loss, std::int64_t step, const char* program) {
  const double l = mean_over_ranks(static_cast<double>(loss.value().item()));
  check_finite_loss(l, step, program);
  return l;
}

}  // namespace trainer
