// Atomic file writes: write a temporary file next to the target, then fsync it, rename it over
// the target and fsync the directory. A crash or an error at any point leaves the old target
// whole (the temporary file is removed unless committed).
//
//   io::TempFile tmp(path, "ember: save_safetensors");   // the name errors are reported under
//   tmp.write(bytes, n);                                   // appends
//   tmp.write_at(bytes, n, offset);                        // or at an offset (a header last)
//   tmp.commit(path);
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include "../core/error.hpp"
#include "../core/fault_injection.hpp"

namespace ember::io {

class TempFile {
 public:
  TempFile(const std::filesystem::path& target, std::string op) : op_(std::move(op)) {
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0;; ++attempt) {
      path_ = target;
      path_ += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
      do {
        fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      } while (fd_ < 0 && errno == EINTR);
      if (fd_ >= 0) return;
      if (errno != EEXIST || attempt >= 100) fail_io("cannot create");
    }
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::filesystem::path& path() const { return path_; }

  /// Appends `bytes` bytes.
  void write(const void* src, std::uint64_t bytes) { write_loop(src, bytes, -1); }
  /// Writes `bytes` bytes at `offset` (the append position is unchanged).
  void write_at(const void* src, std::uint64_t bytes, off_t offset) {
    write_loop(src, bytes, offset);
  }

  /// fsync, close, rename over `target`, fsync of the directory: the target now holds the new
  /// contents, durably.
  void commit(const std::filesystem::path& target) {
    if (::fsync(fd_) != 0) fail_io("cannot fsync");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail_io("cannot close");
    if (::rename(path_.c_str(), target.c_str()) != 0) {
      const int err = errno;
      fail(op_, ": cannot rename '", path_.string(), "' to '", target.string(),
           "': ", std::system_category().message(err));
    }
    committed_ = true;
    const std::filesystem::path dir =
        target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {  // makes the rename durable; some file systems cannot fsync directories
      ::fsync(dfd);
      ::close(dfd);
    }
  }

 private:
  void write_loop(const void* src, std::uint64_t bytes, off_t offset) {
    const auto* p = static_cast<const unsigned char*>(src);
    while (bytes > 0) {
      const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, 1u << 30));
      const ssize_t put = offset < 0 ? ::write(fd_, p, chunk) : ::pwrite(fd_, p, chunk, offset);
      if (put < 0 && errno == EINTR) continue;
      if (put < 0) fail_io("cannot write");
      p += put;
      bytes -= static_cast<std::uint64_t>(put);
      if (offset >= 0) offset += put;
    }
    fault_point("file-write");  // a test may kill the process here: the file half written
  }
  [[noreturn]] void fail_io(const char* what) {
    const int err = errno;
    fail(op_, ": ", what, " '", path_.string(), "': ", std::system_category().message(err));
  }

  std::string op_;
  std::filesystem::path path_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Removes what TempFile left next to `target` in processes that were killed mid-write
/// (`<target>.tmp.<pid>.<n>` of a process no longer running); files of running processes stay.
/// Returns how many were removed. The trainers call it before they resume.
inline int remove_stale_temp_files(const std::filesystem::path& target) {
  namespace fs = std::filesystem;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = target.filename().string() + ".tmp.";
  std::error_code ec;
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const char* digits = name.c_str() + prefix.size();
    char* end = nullptr;
    const long pid = std::strtol(digits, &end, 10);
    if (end == digits || *end != '.' || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive
    if (fs::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

}  // namespace ember::io
