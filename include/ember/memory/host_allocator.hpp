// Aligned host memory: 64-byte aligned so every vector width and cache line is served.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

#include "../core/error.hpp"
#include "stats.hpp"

namespace ember::memory {

inline constexpr std::size_t kHostAlignment = 64;

/// Allocates `bytes` (may be 0) aligned to kHostAlignment; throws ember::Error when out of memory.
inline void* host_allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* p = std::aligned_alloc(kHostAlignment, rounded == 0 ? kHostAlignment : rounded);
  if (!p) {
    fail("ember: out of host memory allocating ", bytes, " bytes (", memory_stats(Device::cpu()),
         ")");
  }
  ember::detail::counters(Device::cpu()).on_alloc(static_cast<std::int64_t>(bytes));
  return p;
}

inline void host_free(void* p, std::size_t bytes) {
  std::free(p);
  ember::detail::counters(Device::cpu()).on_free(static_cast<std::int64_t>(bytes));
}

}  // namespace ember::memory
