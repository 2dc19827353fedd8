// What a training run keeps around its loop, the same for the three example trainers
// (examples/resnet50, examples/bert, examples/gpt2):
// - Run: what watches the loop, behind one interface. The loop tells it what happened (a step, an
//   evaluation, a checkpoint to save) and it writes MLPerf's log, metrics.jsonl and the progress
//   bar, reads the loss from the device every --log-every steps, keeps the throughput clock
//   (evaluations and checkpoints left out), the time to the target, and the fault point that
//   tests/examples/kill_check.sh kills runs at.
// - RunFiles: the --out folder and what rank 0 writes there (MLPerf's log mllog.txt,
//   metrics.jsonl, the checkpoint ckpt-last.safetensors); the other ranks write nowhere.
// - resume_from: --resume's checkpoint loaded into the model and the optimizer.
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

#include <ember/core/fault_injection.hpp>
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

/// The checkpoint --resume names: "auto" is the run's own (`own`), anything else a path.
inline std::filesystem::path resume_path(const std::string& resume,
                                         const std::filesystem::path& own) {
  return resume == "auto" ? own : std::filesystem::path(resume);
}

/// --resume: "" (start afresh), "auto" (the run's own checkpoint when there is one) or a path.
/// Loads the checkpoint into `model` and `opt` and gives its progress; nothing when there is none
/// to load, which only "auto" (or `missing_ok`) allows.
template <class Model, class Optimizer>
std::optional<ember::io::TrainingProgress> resume_from(const std::string& resume,
                                                       const RunFiles& files, Model& model,
                                                       Optimizer& opt, const char* program,
                                                       bool missing_ok = true) {
  if (resume.empty()) return std::nullopt;
  const std::filesystem::path from = resume_path(resume, files.checkpoint());
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
  explicit Throughput(ember::Device device) : device_(device) {}

  /// Starts the clock (once): the warm-up is over.
  void start() {
    if (started_) return;
    started_ = true;
    resume();
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

/// The optimizer's step once the gradients of `micro_batches` micro-batches are summed: their
/// mean through the optimizer's gradient scale (no pass of its own), the gradient clipped to norm
/// `max_grad_norm` (0: not clipped), the update at learning rate `lr`, the gradients zeroed.
template <class Optimizer>
void optimizer_step(Optimizer& opt, double lr, std::int64_t micro_batches = 1,
                    double max_grad_norm = 0) {
  if (micro_batches > 1) opt.scale_grads(1.0 / static_cast<double>(micro_batches));
  if (max_grad_norm > 0) opt.clip_grad_norm(max_grad_norm);
  opt.set_lr(lr);
  opt.step();
  opt.zero_grad();
}

/// What a Run is told before its loop starts.
struct RunOptions {
  std::filesystem::path out;   // --out
  std::string_view benchmark;  // MLPerf's name for it in mllog.txt: resnet, bert, gpt2
  const char* program;         // names the trainer in errors
  ember::Device device;
  std::int64_t steps = 0;            // the run's steps: its warm-up is a tenth of them (1 to 10)
  std::int64_t steps_per_epoch = 0;  // 0: no epochs (one progress bar over the run)
  std::int64_t log_every = 1;        // steps between loss readings (in the epoch, with epochs)
  double target = 0;                 // the evaluation metric to reach (0: none)
  bool quiet = false;                // progress as plain lines even on a terminal
};

/// What a Run measured.
struct RunSummary {
  std::int64_t steps = 0;         // the steps taken, counting those before a resume
  double items_per_second = 0;    // after the warm-up, evaluations and checkpoints left out
  double train_seconds = 0;       // the whole loop's
  double seconds_to_target = -1;  // from the loop's start to the first evaluation that met
                                  // RunOptions::target (-1: none did)
};

/// Run::after_step's fields beyond the loss and the learning rate: none.
struct NoMoreFields {
  ember::io::LogFields operator()() const { return {}; }
};

/// What watches a training loop, behind one interface. The loop tells it what happened:
///
///   run.start(facts, step);                   MLPerf's run_start; the progress bar
///   ... a step ...
///   run.after_step(step, items, lr, loss);    throughput; every log_every steps the loss
///                                             (read from the device), metrics.jsonl, the bar
///   if (an evaluation is due) {
///     const E e = run.evaluate(at, [&] { return evaluate(...); });   outside the training time
///     run.report(step, metric, fields);       MLPerf's eval_accuracy, metrics.jsonl, the target
///     run.save(model, opt, progress);         the checkpoint, outside the training time
///   }
///   const RunSummary s = run.finish(step);
///
/// Loops with epochs (ResNet's) call start_epoch and end_epoch around each epoch's steps. Rank 0
/// alone writes (RunFiles); every rank keeps the clock and reads the loss, averaged over the ranks.
class Run {
 public:
  /// Made first: it opens MLPerf's init interval (RunFiles).
  explicit Run(const RunOptions& o)
      : options_(o),
        files_(o.out, o.benchmark),
        throughput_(o.device),
        started_at_(std::chrono::steady_clock::now()) {}

  RunFiles& files() { return files_; }

  /// MLPerf's run_start with the run's facts; the loop's clock starts at step `first_step` (a
  /// resumed run's), and without epochs the progress bar over the run's steps.
  void start(const RunFacts& facts, std::int64_t first_step) {
    files_.start_run(facts);
    first_step_ = first_step;
    started_at_ = std::chrono::steady_clock::now();
    if (options_.steps_per_epoch == 0)
      open_bar(options_.steps, first_step, std::string(options_.benchmark));
  }

  /// Epoch `epoch` (from 0) begins: MLPerf's epoch_start and the epoch's progress bar.
  void start_epoch(std::int64_t epoch) {
    epoch_ = epoch;
    epoch_loss_ = Mean();
    files_.mllog().start(ember::io::mllog::kEpochStart, nullptr, {{"epoch_num", epoch + 1}});
    open_bar(options_.steps_per_epoch, 0, "epoch " + std::to_string(epoch + 1));
  }
  void end_epoch() {
    bar_->finish();
    files_.mllog().end(ember::io::mllog::kEpochStop, nullptr, {{"epoch_num", epoch_ + 1}});
  }
  /// The mean of the losses read in this epoch.
  double epoch_loss() const { return epoch_loss_.value(); }

  /// After step `step` (counted from 1) processed `items` (over all ranks) at learning rate `lr`.
  /// Every log_every steps, and at the bar's last, reads the loss (waiting for the device), checks
  /// that it is finite, and writes it with `more()`'s fields to metrics.jsonl and to the bar.
  template <class T, class MoreFields = NoMoreFields>
  void after_step(std::int64_t step, std::int64_t items, double lr, const ember::Var<T>& loss,
                  MoreFields&& more = {}) {
    ember::fault_point("train-step");  // tests/examples/kill_check.sh may kill the run here
    throughput_.count(items);
    if (step - first_step_ == warm_up_steps(options_.steps)) throughput_.start();
    ++bar_step_;
    if (bar_step_ % options_.log_every != 0 && bar_step_ != bar_total_) return;
    const double l = step_loss(loss, step, options_.program);
    epoch_loss_.add(l);
    ember::io::LogFields fields;
    if (epoch_ >= 0) fields.emplace_back("epoch", epoch_ + 1);
    fields.emplace_back("loss", l);
    for (ember::io::LogField& f : more()) fields.push_back(std::move(f));
    fields.emplace_back("lr", lr);
    files_.metrics(step, fields);
    bar_->update(bar_step_, {{"loss", l}, {"lr", lr}});
  }

  /// `evaluate()`'s result, run inside MLPerf's eval interval `at` ({"epoch_num", n} or
  /// {"step", n}) and outside the training time.
  template <class Evaluate>
  auto evaluate(const ember::io::LogFields& at, Evaluate&& evaluate) {
    throughput_.pause();
    eval_at_ = at;
    files_.mllog().start(ember::io::mllog::kEvalStart, nullptr, at);
    auto result = evaluate();
    files_.mllog().end(ember::io::mllog::kEvalStop, nullptr, at);
    throughput_.resume();
    return result;
  }

  /// The last evaluation's `metric` (MLPerf's eval_accuracy, which RunOptions::target is
  /// compared with) and `fields`, with the loop's time, in metrics.jsonl at `step`. Returns
  /// whether this evaluation is the first to meet the target.
  bool report(std::int64_t step, double metric, ember::io::LogFields fields) {
    const double elapsed = seconds_since(started_at_);
    files_.mllog().event(ember::io::mllog::kEvalAccuracy, metric, eval_at_);
    fields.emplace_back("time_s", elapsed);
    files_.metrics(step, fields);
    if (options_.target <= 0 || metric < options_.target || summary_.seconds_to_target >= 0) {
      return false;
    }
    summary_.seconds_to_target = elapsed;
    return true;
  }
  /// Seconds since the loop started.
  double elapsed() const { return seconds_since(started_at_); }

  /// Saves the model and the optimizer (RunFiles::save), outside the training time.
  template <class Model, class Optimizer>
  void save(Model& model, Optimizer& opt, const ember::io::TrainingProgress& progress) {
    throughput_.pause();
    files_.save(model, opt, progress);
    throughput_.resume();
  }

  /// The loop ended after `steps` steps: the bar's last line, MLPerf's run_stop (success, or
  /// aborted when a target was set and not met), and what was measured.
  RunSummary finish(std::int64_t steps) {
    if (bar_) bar_->finish();
    summary_.steps = steps;
    summary_.items_per_second = throughput_.per_second();
    summary_.train_seconds = seconds_since(started_at_);
    files_.stop_run(options_.target <= 0 || summary_.seconds_to_target >= 0);
    return summary_;
  }

 private:
  /// A progress bar on stderr (rank 0's; the others' go nowhere): redrawn on a terminal, plain
  /// lines otherwise or when quiet.
  void open_bar(std::int64_t total, std::int64_t first, const std::string& label) {
    ember::io::ProgressOptions po;
    po.initial = first;
    if (options_.quiet) po.terminal = false;
    bar_.reset();  // the previous epoch's, finished
    bar_.emplace(total, label, files_.lead() ? std::cerr : nowhere(), po);
    bar_total_ = total;
    bar_step_ = first;
  }

  RunOptions options_;
  RunFiles files_;
  Throughput throughput_;
  std::chrono::steady_clock::time_point started_at_;
  std::optional<ember::io::ProgressBar> bar_;
  std::int64_t bar_total_ = 0, bar_step_ = 0;  // the bar's steps: the run's or the epoch's
  std::int64_t first_step_ = 0;
  std::int64_t epoch_ = -1;  // -1: a run without epochs
  Mean epoch_loss_;
  ember::io::LogFields eval_at_;
  RunSummary summary_;
};

/// The first lines of a run's report: its throughput in `items` per second, per rank too under
/// mpirun.
inline void report_throughput(const RunSummary& r, const char* items) {
  printf0("\n== results ==\n");
  printf0("training throughput: %.1f %s/s (after warm-up)\n", r.items_per_second, items);
  const int ranks = ember::dist::world_size();
  if (ranks > 1) {
    printf0("per rank: %.1f %s/s (%d ranks)\n", r.items_per_second / ranks, items, ranks);
  }
}

/// The last lines of a run's report: the training time and, with a `target` (of the metric
/// `what`), the time to reach it or that it was not reached, and what that time cost at
/// `cost_per_hour` (0: not printed).
inline void report_time(const RunSummary& r, double target = 0, const char* what = "",
                        double cost_per_hour = 0) {
  printf0("training time: %s for %lld steps\n", hms(r.train_seconds).c_str(),
          static_cast<long long>(r.steps));
  if (target <= 0) return;
  if (r.seconds_to_target < 0) {
    printf0("target %.2f%% %s not reached\n", 100 * target, what);
    return;
  }
  printf0("time to %.2f%% %s: %s\n", 100 * target, what, hms(r.seconds_to_target).c_str());
  if (cost_per_hour > 0) {
    printf0("cost to %.2f%% %s: %.2f (at %.2f per hour)\n", 100 * target, what,
            r.seconds_to_target / 3600 * cost_per_hour, cost_per_hour);
  }
}

}  // namespace trainer
