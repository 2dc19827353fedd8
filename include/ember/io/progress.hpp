// A progress bar for training loops: step/total, rate, elapsed time, ETA and the metrics the
// caller passes, redrawn in place on a terminal and printed as plain lines in a log file. See
// docs/io.md ("Logs").
//
//   io::ProgressBar bar(steps, "train");                 // writes to std::cerr
//   for (std::int64_t step = 1; step <= steps; ++step) {
//     ...
//     bar.update(step, {{"loss", loss}, {"lr", lr}});
//   }                                                     // step == total prints the final line
//
// Terminal (the stream is std::cerr, std::clog or std::cout and its file descriptor is a tty):
// one line, redrawn with '\r' at most every redraw_interval_s (0.1 s), with a bar:
//   train  350/1000  35% [########..............]  25.0 it/s  elapsed 0:14  eta 0:26  loss=0.31
// Otherwise (a file, a pipe, a CI log, any other stream): a plain line each time the step
// crosses another log_percent (10%) of the total, or log_interval_s (30 s) after the last line,
// whichever comes first, and a final line when the step reaches the total or finish() is called:
//   train  100/1000  10%  25.0 it/s  elapsed 0:04  eta 0:36  loss=0.31
//   train 1000/1000 100%  25.0 it/s  elapsed 0:40  done  loss=0.12
//
// The rate is the average since the bar was made: (step - initial) / elapsed. The ETA is
// (total - step) / rate. Durations print as M:SS, or H:MM:SS from an hour up, rounded to the
// nearest second. Not thread-safe: update one bar from one thread.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"

namespace ember::io {

/// Settings of a ProgressBar; the defaults suit a training loop.
struct ProgressOptions {
  /// The step the bar starts from (a resumed run): the rate counts steps from here.
  std::int64_t initial = 0;
  /// Redraw one line (true) or print plain lines (false). Unset: redraw when the stream is
  /// std::cerr, std::clog or std::cout and its file descriptor is a terminal.
  std::optional<bool> terminal{};
  /// Terminal mode: the least time between two redraws.
  double redraw_interval_s = 0.1;
  /// Plain mode: print a line each time the step crosses another `log_percent` of the total...
  int log_percent = 10;
  /// ...or when this long has passed since the last line printed.
  double log_interval_s = 30.0;
  /// Characters inside the bar's brackets (terminal mode).
  int bar_width = 24;
  /// Seconds on a monotonic clock (tests inject one). Unset: std::chrono::steady_clock.
  std::function<double()> clock{};
};

class ProgressBar {
 public:
  using Metrics = std::vector<std::pair<std::string, double>>;

  /// A bar counting to `total` steps (0 or less: unknown, so no percentage and no ETA), its lines
  /// starting with `label`, written to `os` (which must outlive the bar).
  ProgressBar(std::int64_t total, std::string label, std::ostream& os = std::cerr,
              const ProgressOptions& options = {})
      : total_(total), label_(std::move(label)), os_(&os), opt_(options) {
    EMBER_CHECK(opt_.log_percent > 0 && opt_.log_percent <= 100,
                "ember: ProgressBar: log_percent must be in [1, 100], got ", opt_.log_percent);
    EMBER_CHECK(opt_.bar_width >= 0, "ember: ProgressBar: negative bar_width ", opt_.bar_width);
    if (!opt_.clock) {
      opt_.clock = [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
      };
    }
    terminal_ = opt_.terminal ? *opt_.terminal : stream_is_tty(os);
    start_ = opt_.clock();
    step_ = opt_.initial;
    last_bucket_ = bucket(step_);
    last_print_ = start_;
  }

  ~ProgressBar() {
    // A redrawn line that was never finished still gets its newline, so the next output starts
    // on a line of its own. No "done" line: the loop may have ended by an exception.
    if (terminal_ && drawn_ && !finished_) {
      try {
        *os_ << '\n' << std::flush;
      } catch (...) {
      }
    }
  }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// Records that `step` steps are done, with the current metrics (shown in the order given).
  /// Prints or redraws as the mode's policy says; reaching the total prints the final line.
  void update(std::int64_t step, const Metrics& metrics = {}) {
    if (finished_) return;
    step_ = step;
    metrics_ = metrics;
    const double now = opt_.clock();
    if (total_ > 0 && step_ >= total_) {
      finish_at(now);
      return;
    }
    if (terminal_) {
      if (!drawn_ || now - last_print_ >= opt_.redraw_interval_s) draw(now, false);
    } else {
      const std::int64_t b = bucket(step_);
      if (b > last_bucket_ || now - last_print_ >= opt_.log_interval_s) {
        last_bucket_ = b;
        emit(now, false);
      }
    }
  }

  /// Prints the final line (once) with the last step and these metrics (the last ones given to
  /// update() when empty). Called by update() when the step reaches the total.
  void finish(const Metrics& metrics = {}) {
    if (finished_) return;
    if (!metrics.empty()) metrics_ = metrics;
    finish_at(opt_.clock());
  }

  /// True when the bar redraws one line in place.
  bool terminal() const { return terminal_; }
  std::int64_t total() const { return total_; }
  std::int64_t step() const { return step_; }
  /// Seconds since the bar was made.
  double elapsed() const { return opt_.clock() - start_; }
  /// Steps per second since the bar was made; nullopt before any time has passed.
  std::optional<double> rate() const { return rate_at(opt_.clock()); }
  /// Seconds left at the current rate; nullopt when the total or the rate is unknown.
  std::optional<double> eta() const { return eta_at(opt_.clock()); }

  /// The status text at the current time, as a plain line shows it (no '\r', no newline).
  std::string status() const { return format(opt_.clock(), false, false); }

  /// "M:SS", or "H:MM:SS" from an hour up, rounded to the nearest second.
  static std::string format_duration(double seconds) {
    if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
    const long long s = std::llround(seconds);
    char buf[48];
    if (s >= 3600) {
      std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
    } else {
      std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
    }
    return buf;
  }
  /// A rate with three significant figures or more: "1234", "25.0", "0.25".
  static std::string format_rate(double r) {
    char buf[48];
    std::snprintf(buf, sizeof buf, r >= 100 ? "%.0f" : r >= 10 ? "%.1f" : "%.2f", r);
    return buf;
  }
  /// A metric value with four significant figures ("%.4g"): "0.31", "0.1235", "1.235e+04".
  static std::string format_metric(double v) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
  }

 private:
  static bool stream_is_tty(const std::ostream& os) {
    if (&os == &std::cerr || &os == &std::clog) return ::isatty(2) == 1;
    if (&os == &std::cout) return ::isatty(1) == 1;
    return false;
  }

  // Which log_percent slice of the total `step` is in (0 for an unknown total).
  std::int64_t bucket(std::int64_t step) const {
    if (total_ <= 0 || step <= 0) return 0;
    return percent(step) / opt_.log_percent;
  }

  // Whole percent of the total done, rounded down, in [0, 100] (integer arithmetic, so 350 of
  // 1000 is 35, not 34).
  std::int64_t percent(std::int64_t step) const { return scaled(step, 100); }
  // floor(clamp(step, 0, total) * k / total), for a total > 0 and a small k >= 0.
  std::int64_t scaled(std::int64_t step, std::int64_t k) const {
    const std::int64_t done = std::clamp<std::int64_t>(step, 0, total_);
    if (k == 0 || done <= std::numeric_limits<std::int64_t>::max() / k) return done * k / total_;
    return static_cast<std::int64_t>(static_cast<long double>(done) * k / total_);
  }

  std::optional<double> rate_at(double now) const {
    const double dt = now - start_;
    if (!(dt > 0)) return std::nullopt;
    return static_cast<double>(step_ - opt_.initial) / dt;
  }
  std::optional<double> eta_at(double now) const {
    const std::optional<double> r = rate_at(now);
    if (total_ <= 0 || !r || !(*r > 0)) return std::nullopt;
    return static_cast<double>(std::max<std::int64_t>(total_ - step_, 0)) / *r;
  }

  std::string format(double now, bool with_bar, bool done) const {
    std::string s = label_;
    if (!s.empty()) s += ' ';
    const std::string step = std::to_string(step_);
    if (total_ > 0) {
      const std::string total = std::to_string(total_);
      s += std::string(total.size() > step.size() ? total.size() - step.size() : 0, ' ');
      s += step + "/" + total;
      char pct[16];
      std::snprintf(pct, sizeof pct, " %3d%%", static_cast<int>(percent(step_)));
      s += pct;
      if (with_bar && opt_.bar_width > 0) {
        const auto filled = static_cast<int>(scaled(step_, opt_.bar_width));
        s += " [" + std::string(static_cast<std::size_t>(filled), '#') +
             std::string(static_cast<std::size_t>(opt_.bar_width - filled), '.') + "]";
      }
    } else {
      s += step;
    }
    const std::optional<double> r = rate_at(now);
    s += "  " + (r ? format_rate(*r) : std::string("?")) + " it/s";
    s += "  elapsed " + format_duration(now - start_);
    if (done) {
      s += "  done";
    } else if (total_ > 0) {
      const std::optional<double> e = eta_at(now);
      s += "  eta " + (e ? format_duration(*e) : std::string("?"));
    }
    if (!metrics_.empty()) {
      s += ' ';
      for (const auto& [name, value] : metrics_) s += " " + name + "=" + format_metric(value);
    }
    return s;
  }

  void draw(double now, bool done) {
    std::string s = format(now, true, done);
    const std::size_t len = s.size();
    if (len < drawn_len_) s += std::string(drawn_len_ - len, ' ');  // erase the longer old line
    drawn_len_ = len;
    *os_ << '\r' << s;
    if (done) *os_ << '\n';
    *os_ << std::flush;
    drawn_ = true;
    last_print_ = now;
  }

  void emit(double now, bool done) {
    *os_ << format(now, false, done) << '\n' << std::flush;
    last_print_ = now;
  }

  void finish_at(double now) {
    finished_ = true;
    if (terminal_) {
      draw(now, true);
    } else {
      emit(now, true);
    }
  }

  std::int64_t total_;
  std::string label_;
  std::ostream* os_;
  ProgressOptions opt_;
  bool terminal_ = false;
  double start_ = 0;
  double last_print_ = 0;
  std::int64_t step_ = 0;
  std::int64_t last_bucket_ = 0;
  Metrics metrics_;
  bool drawn_ = false;
  bool finished_ = false;
  std::size_t drawn_len_ = 0;
};

}  // namespace ember::io
