// Metrics logs: JSON Lines (one JSON object per line, for plots and scripts) and MLPerf's MLLOG
// lines (for the MLPerf Training compliance checker). See docs/io.md ("Logs").
//
//   io::JsonlWriter log("metrics.jsonl");                 // appends
//   log.log(step, {{"epoch", 1}, {"loss", 0.5}});
//   // {"step": 10, "epoch": 1, "loss": 0.5, "time_s": 12.345} (compact: no spaces)
//
//   io::MlLogger ml(std::cout);
//   ml.event(io::mllog::kEvalAccuracy, 0.91, {{io::mllog::kEpochNum, 3}});
//   // :::MLLOG {"namespace": "", "time_ms": 1690000000000, "event_type": "POINT_IN_TIME",
//   //           "key": "eval_accuracy", "value": 0.91, "metadata": {"file": "train.cpp",
//   //           "lineno": 42, "epoch_num": 3}}            (on one line)
//
// The fields are ember's own types (LogValue, LogFields), so this header needs only the standard
// library: the JSON is written by nlohmann/json in the definitions (io/metrics_log_impl.hpp,
// Debian: nlohmann-json3-dev). Where the program links ember::kernels built with nlohmann/json
// (EMBER_IO_COMPILED), src/kernels/io.cpp holds them and a program's units parse no JSON library;
// otherwise this header includes them, as in any header-only use. Not included by
// <ember/ember.hpp>. JsonlWriter uses POSIX calls (open, write).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "../core/config.hpp"

namespace ember::io {

// ---- Values and fields --------------------------------------------------------------------------

/// A value in a log record: null, a boolean, an integer, a floating-point number, a string, or a
/// list of values (JSON's values without nested objects). NaN and infinities are written as null.
/// A braced list is a list: `{1, 2, 3}`, and `LogValue{1}` is the list [1] (write `LogValue(1)`
/// for the number).
class LogValue {
 public:
  using List = std::vector<LogValue>;
  using Variant =
      std::variant<std::nullptr_t, bool, std::int64_t, std::uint64_t, double, std::string, List>;

  LogValue(std::nullptr_t = nullptr) noexcept {}
  LogValue(bool b) : value_(b) {}
  template <std::integral I>
  requires(!std::same_as<I, bool>) LogValue(I i) {
    if constexpr (std::is_signed_v<I>) {
      value_ = static_cast<std::int64_t>(i);
    } else {
      value_ = static_cast<std::uint64_t>(i);  // a seed above 2^63 stays itself
    }
  }
  template <std::floating_point F>
  LogValue(F x) : value_(static_cast<double>(x)) {}
  LogValue(const char* s) : value_(std::string(s)) {}
  LogValue(std::string_view s) : value_(std::string(s)) {}
  LogValue(std::string s) : value_(std::move(s)) {}
  LogValue(std::initializer_list<LogValue> list) : value_(List(list)) {}
  LogValue(List list) : value_(std::move(list)) {}

  const Variant& get() const { return value_; }

 private:
  Variant value_;
};

/// One named value of a record: `{"loss", 0.5}`.
struct LogField {
  LogField(std::string_view key, LogValue value) : key(key), value(std::move(value)) {}
  std::string key;
  LogValue value;
};

/// A record's fields in the order they are written: `{{"epoch", 1}, {"loss", 0.5}}`. A key given
/// twice keeps its first place and its last value.
using LogFields = std::vector<LogField>;

// ---- JSON Lines ---------------------------------------------------------------------------------

/// Appends one JSON object per line to a file, each line written with one write(2) as soon as it
/// is logged (nothing is buffered in the process, so a crash loses no line already logged).
/// Keys keep the order given.
class JsonlWriter {
 public:
  /// Opens `path` for appending, creating it (mode 0666 less the umask) when missing. `clock`
  /// gives seconds on a monotonic clock for "time_s" (tests inject one); unset: steady_clock.
  EMBER_IO_INLINE explicit JsonlWriter(std::filesystem::path path,
                                       std::function<double()> clock = {});
  EMBER_IO_INLINE ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;
  EMBER_IO_INLINE JsonlWriter(JsonlWriter&& o) noexcept;
  EMBER_IO_INLINE JsonlWriter& operator=(JsonlWriter&& o) noexcept;

  /// Writes `record` as one compact JSON object on its own line.
  EMBER_IO_INLINE void write(const LogFields& record);

  /// Writes {"step": step, <fields in their order>, "time_s": seconds since this writer was
  /// made, to the millisecond}. A "step" or "time_s" in `fields` replaces the writer's own.
  EMBER_IO_INLINE void log(std::int64_t step, const LogFields& fields = {});

  /// Seconds since the writer was made.
  double elapsed() const { return clock_() - start_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::function<double()> clock_;
  int fd_ = -1;
  double start_ = 0;
};

// ---- MLPerf logging -----------------------------------------------------------------------------

/// The keys and values of MLPerf's logging package (mlperf_logging.mllog.constants) that
/// training runs log most often.
namespace mllog {
// Event types.
inline constexpr std::string_view kPointInTime = "POINT_IN_TIME";
inline constexpr std::string_view kIntervalStart = "INTERVAL_START";
inline constexpr std::string_view kIntervalEnd = "INTERVAL_END";
// Timing keys.
inline constexpr std::string_view kRunStart = "run_start";
inline constexpr std::string_view kRunStop = "run_stop";  // with metadata {"status": kSuccess}
inline constexpr std::string_view kInitStart = "init_start";
inline constexpr std::string_view kInitStop = "init_stop";
inline constexpr std::string_view kEpochStart = "epoch_start";
inline constexpr std::string_view kEpochStop = "epoch_stop";
inline constexpr std::string_view kBlockStart = "block_start";
inline constexpr std::string_view kBlockStop = "block_stop";
inline constexpr std::string_view kEvalStart = "eval_start";
inline constexpr std::string_view kEvalStop = "eval_stop";
// Run information and hyperparameters.
inline constexpr std::string_view kEvalAccuracy = "eval_accuracy";
inline constexpr std::string_view kSubmissionBenchmark = "submission_benchmark";
inline constexpr std::string_view kSubmissionDivision = "submission_division";
inline constexpr std::string_view kSubmissionOrg = "submission_org";
inline constexpr std::string_view kSubmissionPlatform = "submission_platform";
inline constexpr std::string_view kSubmissionStatus = "submission_status";
inline constexpr std::string_view kGlobalBatchSize = "global_batch_size";
inline constexpr std::string_view kOptName = "opt_name";
inline constexpr std::string_view kOptBaseLearningRate = "opt_base_learning_rate";
inline constexpr std::string_view kSeed = "seed";
inline constexpr std::string_view kTrainSamples = "train_samples";
inline constexpr std::string_view kEvalSamples = "eval_samples";
// Metadata keys.
inline constexpr std::string_view kStatus = "status";
inline constexpr std::string_view kEpochNum = "epoch_num";
inline constexpr std::string_view kFirstEpochNum = "first_epoch_num";
inline constexpr std::string_view kEpochCount = "epoch_count";
// Values.
inline constexpr std::string_view kSuccess = "success";  // run_stop status
inline constexpr std::string_view kAborted = "aborted";  // run_stop status
inline constexpr std::string_view kResnet = "resnet";    // submission_benchmark
inline constexpr std::string_view kBert = "bert";        // submission_benchmark
}  // namespace mllog

/// Settings of an MlLogger.
struct MlLoggerOptions {
  /// The "namespace" field of every line (mllog's default is "").
  std::string name_space;
  /// A directory prefix cut from the "file" metadata, as mllog's root_dir (empty: none).
  std::string root_dir;
  /// Milliseconds since the Unix epoch (tests inject one). Unset: std::chrono::system_clock.
  std::function<std::int64_t()> clock_ms;
};

/// Writes MLPerf logging lines, as the reference package mlperf_logging.mllog does:
/// `:::MLLOG ` then a JSON object with the fields namespace, time_ms, event_type, key, value and
/// metadata, in that order, serialised as Python's json.dumps does (", " and ": " separators,
/// non-ASCII escaped as \uXXXX). metadata holds "file" and "lineno" of the call site, then the
/// caller's metadata (a caller's "file" or "lineno" replaces them in place). Each line is written
/// and flushed whole, under a mutex. The call site comes from default arguments,
/// __builtin_FILE() and __builtin_LINE(), which GCC, clang and nvcc all have (libstdc++ 12's
/// std::source_location needs a builtin that clang 14 lacks).
class MlLogger {
 public:
  EMBER_IO_INLINE explicit MlLogger(std::ostream& os = std::cout,
                                    const MlLoggerOptions& options = {});

  /// A POINT_IN_TIME event.
  void event(std::string_view key, const LogValue& value = nullptr, const LogFields& metadata = {},
             const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    log(mllog::kPointInTime, key, value, metadata, file, line);
  }
  /// An INTERVAL_START event (run_start, epoch_start, block_start, eval_start, ...).
  void start(std::string_view key, const LogValue& value = nullptr, const LogFields& metadata = {},
             const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    log(mllog::kIntervalStart, key, value, metadata, file, line);
  }
  /// An INTERVAL_END event (run_stop, epoch_stop, block_stop, eval_stop, ...).
  void end(std::string_view key, const LogValue& value = nullptr, const LogFields& metadata = {},
           const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    log(mllog::kIntervalEnd, key, value, metadata, file, line);
  }

  /// The line (without the newline) for an event at `time_ms` from `file`:`line`.
  EMBER_IO_INLINE std::string format(std::string_view event_type, std::string_view key,
                                     const LogValue& value, const LogFields& metadata,
                                     std::int64_t time_ms, std::string_view file,
                                     std::int64_t line) const;

 private:
  EMBER_IO_INLINE void log(std::string_view event_type, std::string_view key, const LogValue& value,
                           const LogFields& metadata, const char* file, int line);

  std::ostream* os_;
  MlLoggerOptions opt_;
  std::mutex mutex_;
};

}  // namespace ember::io

#if !defined(EMBER_IO_COMPILED)
#include "metrics_log_impl.hpp"
#endif
