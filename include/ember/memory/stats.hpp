// Byte counters kept by ember's allocators, per device.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ostream>

#include "../core/device.hpp"
#include "../core/error.hpp"

namespace ember {

/// A snapshot of one device's allocator counters.
struct MemoryStats {
  std::int64_t bytes_in_use = 0;        ///< bytes held by live storages
  std::int64_t peak_bytes_in_use = 0;   ///< high-water mark of bytes_in_use
  std::int64_t active_allocations = 0;  ///< live storages
  std::int64_t allocations = 0;         ///< allocations made since start (never decreases)
  std::int64_t reserved_bytes = 0;      ///< bytes held from the system: in use or cached

  friend std::ostream& operator<<(std::ostream& os, const MemoryStats& s) {
    return os << "in use " << s.bytes_in_use << " B, peak " << s.peak_bytes_in_use << " B, "
              << s.active_allocations << " live allocations, " << s.allocations
              << " allocations in total, " << s.reserved_bytes << " B reserved";
  }
};

namespace detail {
struct DeviceCounters {
  std::atomic<std::int64_t> in_use{0};
  std::atomic<std::int64_t> peak{0};
  std::atomic<std::int64_t> active{0};
  std::atomic<std::int64_t> total{0};

  void on_alloc(std::int64_t bytes) {
    const std::int64_t now = in_use.fetch_add(bytes) + bytes;
    std::int64_t p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    active.fetch_add(1);
    total.fetch_add(1);
  }
  void on_free(std::int64_t bytes) {
    in_use.fetch_sub(bytes);
    active.fetch_sub(1);
  }
};

inline constexpr int kMaxCudaDevices = 64;

inline DeviceCounters& counters(Device d) {
  static DeviceCounters cpu;
  static std::array<DeviceCounters, kMaxCudaDevices> gpus;
  if (d.is_cpu()) return cpu;
  EMBER_CHECK(d.index() >= 0 && d.index() < kMaxCudaDevices, "ember: CUDA device index ", d.index(),
              " is out of range");
  return gpus[static_cast<std::size_t>(d.index())];
}
}  // namespace detail

std::int64_t cuda_reserved_bytes(int device);  // defined in cuda_pool.hpp

namespace detail {
/// Bytes the host allocator's cache holds (memory/host_allocator.hpp keeps it current).
inline std::atomic<std::int64_t>& host_cached_counter() {
  static std::atomic<std::int64_t> bytes{0};
  return bytes;
}
}  // namespace detail

/// The allocator counters of `device`.
inline MemoryStats memory_stats(Device device) {
  auto& c = detail::counters(device);
  MemoryStats s;
  s.bytes_in_use = c.in_use.load();
  s.peak_bytes_in_use = c.peak.load();
  s.active_allocations = c.active.load();
  s.allocations = c.total.load();
  s.reserved_bytes = device.is_cuda() ? cuda_reserved_bytes(device.index())
                                      : s.bytes_in_use + detail::host_cached_counter().load();
  return s;
}

/// Restarts the peak figure of `device` from the bytes in use now.
inline void reset_peak_memory_stats(Device device) {
  auto& c = detail::counters(device);
  c.peak.store(c.in_use.load());
}

}  // namespace ember
