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
// This header needs nlohmann/json, as io/safetensors.hpp does (Debian: nlohmann-json3-dev), and
// is not included by <ember/ember.hpp>. JsonlWriter uses POSIX calls (open, write).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <mutex>
#include <ostream>
#include <source_location>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "../core/error.hpp"

namespace ember::io {

// ---- JSON Lines ---------------------------------------------------------------------------------

/// Appends one JSON object per line to a file, each line written with one write(2) as soon as it
/// is logged (nothing is buffered in the process, so a crash loses no line already logged).
/// Keys keep the order given. NaN and infinities are written as null (JSON has no such numbers).
class JsonlWriter {
 public:
  /// Opens `path` for appending, creating it (mode 0666 less the umask) when missing. `clock`
  /// gives seconds on a monotonic clock for "time_s" (tests inject one); unset: steady_clock.
  explicit JsonlWriter(std::filesystem::path path, std::function<double()> clock = {})
      : path_(std::move(path)), clock_(std::move(clock)) {
    if (!clock_) {
      clock_ = [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
      };
    }
    do {
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) {
      fail("ember: JsonlWriter: cannot open '", path_.string(),
           "' for appending: ", std::system_category().message(errno));
    }
    start_ = clock_();
  }
  ~JsonlWriter() {
    if (fd_ >= 0) ::close(fd_);
  }
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;
  JsonlWriter(JsonlWriter&& o) noexcept
      : path_(std::move(o.path_)), clock_(std::move(o.clock_)), fd_(o.fd_), start_(o.start_) {
    o.fd_ = -1;
  }
  JsonlWriter& operator=(JsonlWriter&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      path_ = std::move(o.path_);
      clock_ = std::move(o.clock_);
      fd_ = std::exchange(o.fd_, -1);
      start_ = o.start_;
    }
    return *this;
  }

  /// Writes `record`, which must be a JSON object, as one compact line.
  void write(const nlohmann::ordered_json& record) {
    EMBER_CHECK(record.is_object(), "ember: JsonlWriter: a record must be a JSON object, got ",
                record.type_name(), " (writing '", path_.string(), "')");
    EMBER_CHECK(fd_ >= 0, "ember: JsonlWriter: the writer was moved from");
    std::string line;
    try {
      line = record.dump();
    } catch (const nlohmann::json::exception& e) {
      fail("ember: JsonlWriter: cannot write a record to '", path_.string(), "': ", e.what());
    }
    line += '\n';
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        fail("ember: JsonlWriter: cannot write to '", path_.string(),
             "': ", std::system_category().message(errno));
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }

  /// Writes {"step": step, <fields in their order>, "time_s": seconds since this writer was
  /// made, to the millisecond}. `fields` is a JSON object ({{"epoch", 1}, {"loss", 0.5}}) or
  /// null; a "step" or "time_s" in it replaces the writer's own.
  void log(std::int64_t step, const nlohmann::ordered_json& fields = nullptr) {
    EMBER_CHECK(fields.is_null() || fields.is_object(),
                "ember: JsonlWriter: log: the fields must be a JSON object, got ",
                fields.type_name());
    nlohmann::ordered_json record = nlohmann::ordered_json::object();
    record["step"] = step;
    if (fields.is_object()) {
      for (auto it = fields.begin(); it != fields.end(); ++it) record[it.key()] = it.value();
    }
    if (!record.contains("time_s")) record["time_s"] = std::round(elapsed() * 1000.0) / 1000.0;
    write(record);
  }

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
/// non-ASCII escaped as \uXXXX). metadata holds "file" and "lineno" of the call site
/// (std::source_location), then the caller's metadata (a caller's "file" or "lineno" replaces
/// them in place). Each line is written and flushed whole, under a mutex.
class MlLogger {
 public:
  using json = nlohmann::ordered_json;

  explicit MlLogger(std::ostream& os = std::cout, const MlLoggerOptions& options = {})
      : os_(&os), opt_(options) {
    if (!opt_.clock_ms) {
      opt_.clock_ms = [] {
        return static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
      };
    }
  }

  /// A POINT_IN_TIME event.
  void event(std::string_view key, const json& value = nullptr,
             const json& metadata = json::object(),
             std::source_location where = std::source_location::current()) {
    log(mllog::kPointInTime, key, value, metadata, where);
  }
  /// An INTERVAL_START event (run_start, epoch_start, block_start, eval_start, ...).
  void start(std::string_view key, const json& value = nullptr,
             const json& metadata = json::object(),
             std::source_location where = std::source_location::current()) {
    log(mllog::kIntervalStart, key, value, metadata, where);
  }
  /// An INTERVAL_END event (run_stop, epoch_stop, block_stop, eval_stop, ...).
  void end(std::string_view key, const json& value = nullptr, const json& metadata = json::object(),
           std::source_location where = std::source_location::current()) {
    log(mllog::kIntervalEnd, key, value, metadata, where);
  }

  /// The line (without the newline) for an event at `time_ms` from `file`:`line`.
  std::string format(std::string_view event_type, std::string_view key, const json& value,
                     const json& metadata, std::int64_t time_ms, std::string_view file,
                     std::int64_t line) const {
    EMBER_CHECK(metadata.is_null() || metadata.is_object(),
                "ember: MlLogger: metadata must be a JSON object, got ", metadata.type_name(),
                " (key '", key, "')");
    std::string_view f = file;
    if (!opt_.root_dir.empty() && f.size() > opt_.root_dir.size() &&
        f.substr(0, opt_.root_dir.size()) == opt_.root_dir && f[opt_.root_dir.size()] == '/') {
      f.remove_prefix(opt_.root_dir.size() + 1);
    }
    json meta = json::object();
    meta["file"] = std::string(f);
    meta["lineno"] = line;
    if (metadata.is_object()) {
      for (auto it = metadata.begin(); it != metadata.end(); ++it) meta[it.key()] = it.value();
    }
    json record = json::object();
    record["namespace"] = opt_.name_space;
    record["time_ms"] = time_ms;
    record["event_type"] = std::string(event_type);
    record["key"] = std::string(key);
    record["value"] = value;
    record["metadata"] = std::move(meta);
    std::string out = ":::MLLOG ";
    try {
      dump_python_style(record, out);
    } catch (const nlohmann::json::exception& e) {
      fail("ember: MlLogger: cannot write the event '", key, "': ", e.what());
    }
    return out;
  }

 private:
  void log(std::string_view event_type, std::string_view key, const json& value,
           const json& metadata, const std::source_location& where) {
    const std::string line = format(event_type, key, value, metadata, opt_.clock_ms(),
                                    where.file_name(), static_cast<std::int64_t>(where.line()));
    const std::lock_guard<std::mutex> lock(mutex_);
    *os_ << line << '\n' << std::flush;
  }

  // json.dumps(obj) with Python's defaults: separators (", ", ": "), ensure_ascii.
  static void dump_python_style(const json& j, std::string& out) {
    if (j.is_object()) {
      out += '{';
      bool first = true;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        out += json(it.key()).dump(-1, ' ', true);
        out += ": ";
        dump_python_style(it.value(), out);
      }
      out += '}';
    } else if (j.is_array()) {
      out += '[';
      bool first = true;
      for (const json& e : j) {
        if (!first) out += ", ";
        first = false;
        dump_python_style(e, out);
      }
      out += ']';
    } else {
      out += j.dump(-1, ' ', true);
    }
  }

  std::ostream* os_;
  MlLoggerOptions opt_;
  std::mutex mutex_;
};

}  // namespace ember::io
