// Aligned host memory, with a cache of freed large blocks.
//
// Every block is 64-byte aligned so every vector width and cache line is served. Blocks of
// 128 KiB or more are kept when freed and handed out again for the same rounded size: a training
// step frees and allocates the same large tensors (gradients, activations) every iteration, and
// from 128 KiB on (glibc's mmap threshold) a fresh block is a fresh mapping, or heap that glibc
// trimmed and grows again, whose every page faults on first touch (a 64 MiB gradient costs more
// to fault in than to compute; a small GPT's step at a 1 MiB threshold took 1,200 faults). The
// cache holds at most EMBER_HOST_CACHE_BYTES (default 4 GiB) and is emptied, and the allocation
// retried, before running out of memory is reported. memory_stats(cpu).reserved_bytes counts what
// it holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "../core/error.hpp"
#include "stats.hpp"

namespace ember::memory {

inline constexpr std::size_t kHostAlignment = 64;
inline constexpr std::size_t kHostCacheMinBytes = std::size_t{1} << 17;

namespace detail {
class HostCache {
 public:
  static HostCache& instance() {
    static HostCache* cache = new HostCache();  // never destroyed: storages may outlive statics
    return *cache;
  }
  /// A cached block of exactly `size` bytes, or null.
  void* take(std::size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(size);
    if (it == free_.end()) return nullptr;
    void* p = it->second;
    free_.erase(it);
    cached_ -= size;
    ember::detail::host_cached_counter().store(static_cast<std::int64_t>(cached_));
    return p;
  }
  /// Keeps `p` (of `size` bytes) for reuse, or frees it when the cache is full.
  void give(void* p, std::size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_ + size <= limit_) {
        free_.emplace(size, p);
        cached_ += size;
        ember::detail::host_cached_counter().store(static_cast<std::int64_t>(cached_));
        return;
      }
    }
    std::free(p);
  }
  /// Frees every cached block.
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, p] : free_) std::free(p);
    free_.clear();
    cached_ = 0;
    ember::detail::host_cached_counter().store(0);
  }
  std::int64_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<std::int64_t>(cached_);
  }

 private:
  HostCache() {
    if (const char* env = std::getenv("EMBER_HOST_CACHE_BYTES")) {
      limit_ = static_cast<std::size_t>(std::strtoull(env, nullptr, 10));
    }
  }
  std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;
  std::size_t cached_ = 0;
  std::size_t limit_ = std::size_t{4} << 30;
};

inline std::size_t rounded_size(std::size_t bytes) {
  const std::size_t r = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  return r == 0 ? kHostAlignment : r;
}
}  // namespace detail

/// Bytes the host cache holds for reuse (not in use by any tensor).
inline std::int64_t host_cached_bytes() { return detail::HostCache::instance().cached_bytes(); }

/// Returns every cached host block to the system.
inline void host_empty_cache() { detail::HostCache::instance().clear(); }

/// Allocates `bytes` (may be 0) aligned to kHostAlignment; throws ember::Error when out of memory.
inline void* host_allocate(std::size_t bytes) {
  const std::size_t size = detail::rounded_size(bytes);
  void* p = size >= kHostCacheMinBytes ? detail::HostCache::instance().take(size) : nullptr;
  if (!p) p = std::aligned_alloc(kHostAlignment, size);
  if (!p) {
    host_empty_cache();
    p = std::aligned_alloc(kHostAlignment, size);
  }
  if (!p) {
    fail("ember: out of host memory allocating ", bytes, " bytes (", memory_stats(Device::cpu()),
         ")");
  }
  ember::detail::counters(Device::cpu()).on_alloc(static_cast<std::int64_t>(bytes));
  return p;
}

inline void host_free(void* p, std::size_t bytes) {
  const std::size_t size = detail::rounded_size(bytes);
  if (size >= kHostCacheMinBytes) {
    detail::HostCache::instance().give(p, size);
  } else {
    std::free(p);
  }
  ember::detail::counters(Device::cpu()).on_free(static_cast<std::int64_t>(bytes));
}

}  // namespace ember::memory
