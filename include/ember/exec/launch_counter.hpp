// launch_count(): kernels launched (CUDA) plus parallel passes run (CPU) since the program
// started, so tests can prove that an expression ran as one fused pass.
#pragma once

#include <atomic>
#include <cstdint>

namespace ember {

namespace detail {
inline std::atomic<std::uint64_t>& launch_counter() {
  static std::atomic<std::uint64_t> counter{0};
  return counter;
}
}  // namespace detail

inline std::uint64_t launch_count() { return detail::launch_counter().load(); }

namespace exec {
inline void count_launch() { detail::launch_counter().fetch_add(1, std::memory_order_relaxed); }
}  // namespace exec

}  // namespace ember
