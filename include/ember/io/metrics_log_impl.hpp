// The definitions of io/metrics_log.hpp's writers: included by that header in header-only use, and
// compiled once in src/kernels/io.cpp where the program links ember::kernels (EMBER_IO_COMPILED).
// They write the JSON with nlohmann/json (ordered_json: keys keep their order).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <system_error>

#include <nlohmann/json.hpp>

#include "../core/error.hpp"
#include "metrics_log.hpp"

namespace ember::io {

namespace detail {

using ordered_json = nlohmann::ordered_json;

inline ordered_json log_json(const LogValue& value) {
  return std::visit(
      [](const auto& v) -> ordered_json {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, LogValue::List>) {
          ordered_json list = ordered_json::array();
          for (const LogValue& e : v) list.push_back(log_json(e));
          return list;
        } else if constexpr (std::is_same_v<V, double>) {
          return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr);  // JSON has no NaN
        } else {
          return ordered_json(v);
        }
      },
      value.get());
}

// The fields added to `object` in order: a key already there keeps its place, takes the value.
inline void add_log_fields(ordered_json& object, const LogFields& fields) {
  for (const LogField& f : fields) object[f.key] = log_json(f.value);
}

// `record` as one compact line appended to `fd` (the writer's file, `path`), in write(2) calls.
inline void append_json_line(int fd, const std::filesystem::path& path,
                             const ordered_json& record) {
  EMBER_CHECK(fd >= 0, "ember: JsonlWriter: the writer was moved from");
  std::string line;
  try {
    line = record.dump();
  } catch (const nlohmann::json::exception& e) {
    fail("ember: JsonlWriter: cannot write a record to '", path.string(), "': ", e.what());
  }
  line += '\n';
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      fail("ember: JsonlWriter: cannot write to '", path.string(),
           "': ", std::system_category().message(errno));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

// json.dumps(obj) with Python's defaults: separators (", ", ": "), ensure_ascii.
inline void dump_python_style(const ordered_json& j, std::string& out) {
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += ordered_json(it.key()).dump(-1, ' ', true);
      out += ": ";
      dump_python_style(it.value(), out);
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    bool first = true;
    for (const ordered_json& e : j) {
      if (!first) out += ", ";
      first = false;
      dump_python_style(e, out);
    }
    out += ']';
  } else {
    out += j.dump(-1, ' ', true);
  }
}

}  // namespace detail

// ---- JsonlWriter --------------------------------------------------------------------------------

EMBER_IO_INLINE JsonlWriter::JsonlWriter(std::filesystem::path path, std::function<double()> clock)
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

EMBER_IO_INLINE JsonlWriter::~JsonlWriter() {
  if (fd_ >= 0) ::close(fd_);
}

EMBER_IO_INLINE JsonlWriter::JsonlWriter(JsonlWriter&& o) noexcept
    : path_(std::move(o.path_)), clock_(std::move(o.clock_)), fd_(o.fd_), start_(o.start_) {
  o.fd_ = -1;
}

EMBER_IO_INLINE JsonlWriter& JsonlWriter::operator=(JsonlWriter&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    clock_ = std::move(o.clock_);
    fd_ = std::exchange(o.fd_, -1);
    start_ = o.start_;
  }
  return *this;
}

EMBER_IO_INLINE void JsonlWriter::write(const LogFields& record) {
  detail::ordered_json object = detail::ordered_json::object();
  detail::add_log_fields(object, record);
  detail::append_json_line(fd_, path_, object);
}

EMBER_IO_INLINE void JsonlWriter::log(std::int64_t step, const LogFields& fields) {
  detail::ordered_json record = detail::ordered_json::object();
  record["step"] = step;
  detail::add_log_fields(record, fields);  // the caller's "step" takes the writer's place
  if (!record.contains("time_s")) record["time_s"] = std::round(elapsed() * 1000.0) / 1000.0;
  detail::append_json_line(fd_, path_, record);
}

// ---- MlLogger -----------------------------------------------------------------------------------

EMBER_IO_INLINE MlLogger::MlLogger(std::ostream& os, const MlLoggerOptions& options)
    : os_(&os), opt_(options) {
  if (!opt_.clock_ms) {
    opt_.clock_ms = [] {
      return static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count());
    };
  }
}

EMBER_IO_INLINE std::string MlLogger::format(std::string_view event_type, std::string_view key,
                                             const LogValue& value, const LogFields& metadata,
                                             std::int64_t time_ms, std::string_view file,
                                             std::int64_t line) const {
  using detail::ordered_json;
  std::string_view f = file;
  if (!opt_.root_dir.empty() && f.size() > opt_.root_dir.size() &&
      f.substr(0, opt_.root_dir.size()) == opt_.root_dir && f[opt_.root_dir.size()] == '/') {
    f.remove_prefix(opt_.root_dir.size() + 1);
  }
  ordered_json meta = ordered_json::object();
  meta["file"] = std::string(f);
  meta["lineno"] = line;
  detail::add_log_fields(meta, metadata);
  ordered_json record = ordered_json::object();
  record["namespace"] = opt_.name_space;
  record["time_ms"] = time_ms;
  record["event_type"] = std::string(event_type);
  record["key"] = std::string(key);
  record["value"] = detail::log_json(value);
  record["metadata"] = std::move(meta);
  std::string out = ":::MLLOG ";
  try {
    detail::dump_python_style(record, out);
  } catch (const nlohmann::json::exception& e) {
    fail("ember: MlLogger: cannot write the event '", key, "': ", e.what());
  }
  return out;
}

EMBER_IO_INLINE void MlLogger::log(std::string_view event_type, std::string_view key,
                                   const LogValue& value, const LogFields& metadata,
                                   const char* file, int line) {
  const std::string text = format(event_type, key, value, metadata, opt_.clock_ms(), file, line);
  const std::lock_guard<std::mutex> lock(mutex_);
  *os_ << text << '\n' << std::flush;
}

}  // namespace ember::io
