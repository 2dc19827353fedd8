// The CUDA runtime as ember uses it: error checks, device discovery, the current stream.
// Without EMBER_WITH_CUDA every query answers "no device" and every use throws ember::Error.
#pragma once

#include <array>
#include <mutex>
#include <string>

#include "config.hpp"
#include "device.hpp"
#include "error.hpp"

#if defined(EMBER_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace ember::cuda {

#if defined(EMBER_WITH_CUDA)
using stream_t = cudaStream_t;

/// Throws ember::Error naming the call and CUDA's own description unless `status` is success.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    fail("ember: CUDA error in ", what, ": ", cudaGetErrorName(status), " (",
         cudaGetErrorString(status), ")");
  }
}

/// Number of usable CUDA devices; 0 when there is no GPU or no driver (never throws).
inline int device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky "no device" error
      return 0;
    }
    return n;
  }();
  return count;
}

/// Why no device is usable, in a sentence, or "" when one is.
inline std::string unavailable_reason() {
  int n = 0;
  const cudaError_t st = cudaGetDeviceCount(&n);
  if (st != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(st);
  }
  return n == 0 ? "no CUDA device is present" : "";
}
#else
using stream_t = void*;
inline int device_count() { return 0; }
inline std::string unavailable_reason() {
  return "this build of ember has no CUDA support (configure with EMBER_CUDA=ON and the CUDA "
         "toolkit)";
}
#endif

inline bool available() { return device_count() > 0; }

/// Throws ember::Error unless CUDA device `index` exists and can be used.
inline void require_device(int index) {
  const int n = device_count();
  if (n == 0) fail("ember: CUDA device ", index, " was requested but ", unavailable_reason());
  EMBER_CHECK(index >= 0 && index < n, "ember: CUDA device ", index, " was requested but only ", n,
              " device(s) exist");
}

#if defined(EMBER_WITH_CUDA)
/// Makes `index` the current device for the scope, restoring the previous one after.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != index) check(cudaSetDevice(index), "cudaSetDevice");
  }
  ~DeviceGuard() { (void)cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

namespace detail {
inline constexpr int kMaxDevices = 64;
inline thread_local std::array<stream_t, kMaxDevices> stream_override{};

inline stream_t default_stream(int index) {
  static std::array<stream_t, kMaxDevices> streams{};
  static std::array<std::once_flag, kMaxDevices> once;
  std::call_once(once[static_cast<std::size_t>(index)], [index] {
    DeviceGuard guard(index);
    check(
        cudaStreamCreateWithFlags(&streams[static_cast<std::size_t>(index)], cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags");
  });
  return streams[static_cast<std::size_t>(index)];
}
}  // namespace detail

/// The stream ember enqueues work for device `index` on (per thread; see StreamGuard).
inline stream_t current_stream(int index) {
  require_device(index);
  const stream_t s = detail::stream_override[static_cast<std::size_t>(index)];
  return s ? s : detail::default_stream(index);
}

/// Routes ember's work for one device to a stream of the caller's for the scope.
class StreamGuard {
 public:
  StreamGuard(int index, stream_t stream)
      : index_(index), previous_(detail::stream_override[static_cast<std::size_t>(index)]) {
    detail::stream_override[static_cast<std::size_t>(index)] = stream;
  }
  ~StreamGuard() { detail::stream_override[static_cast<std::size_t>(index_)] = previous_; }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int index_;
  stream_t previous_;
};

/// Waits for all work ember queued on device `index`.
inline void synchronize(int index) {
  DeviceGuard guard(index);
  check(cudaStreamSynchronize(current_stream(index)), "cudaStreamSynchronize");
}
#else
inline void synchronize(int index) { require_device(index); }
#endif

}  // namespace ember::cuda
