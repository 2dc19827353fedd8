// Which library runs conv2d on the CPU, and how many passes each has run.
//
// With oneDNN (EMBER_WITH_DNNL, ops/conv/conv_dnnl.hpp) the CPU convolutions of float and bf16 run
// on its JIT kernels; im2col + GEMM (ops/conv/conv.hpp) stays the fallback for double, for half,
// for shapes oneDNN only has a reference implementation of, and for a build without oneDNN. The
// choice can be forced per process (set_cpu_conv_backend, or EMBER_CPU_CONV=im2col in the
// environment), which is how the tests compare the two paths; conv_calls() counts the passes
// (forward, backward-data, backward-weights) each backend ran, so a test can prove which ran.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "../../core/error.hpp"

namespace ember::ops {

enum class ConvBackend { im2col, onednn, cudnn };

/// Whether this build of ember can run convolutions on oneDNN.
inline constexpr bool kHaveOnednn =
#if defined(EMBER_WITH_DNNL)
    true;
#else
    false;
#endif

namespace detail {
inline std::atomic<ConvBackend>& cpu_conv_backend_setting() {
  static std::atomic<ConvBackend> backend{[] {
    const char* env = std::getenv("EMBER_CPU_CONV");
    if (env && std::strcmp(env, "im2col") == 0) return ConvBackend::im2col;
    return kHaveOnednn ? ConvBackend::onednn : ConvBackend::im2col;
  }()};
  return backend;
}
inline std::array<std::atomic<std::uint64_t>, 3>& conv_call_counters() {
  static std::array<std::atomic<std::uint64_t>, 3> counters{};
  return counters;
}
inline void count_conv_call(ConvBackend b) {
  conv_call_counters()[static_cast<std::size_t>(b)].fetch_add(1, std::memory_order_relaxed);
}
}  // namespace detail

/// The backend CPU convolutions try first: oneDNN where this build has it, else im2col.
inline ConvBackend cpu_conv_backend() { return detail::cpu_conv_backend_setting().load(); }

/// Forces the CPU convolutions onto `b` (im2col, or onednn where the build has it); returns the
/// previous choice.
inline ConvBackend set_cpu_conv_backend(ConvBackend b) {
  EMBER_CHECK(b != ConvBackend::cudnn, "ember: set_cpu_conv_backend: cuDNN is not a CPU backend");
  EMBER_CHECK(b != ConvBackend::onednn || kHaveOnednn,
              "ember: set_cpu_conv_backend: this build of ember did not find oneDNN "
              "(install libdnnl-dev and reconfigure; without CMake, define EMBER_WITH_DNNL and "
              "link -ldnnl)");
  return detail::cpu_conv_backend_setting().exchange(b);
}

/// Convolution passes (each forward, backward-data and backward-weights call) run by `b` since
/// the program started.
inline std::uint64_t conv_calls(ConvBackend b) {
  return detail::conv_call_counters()[static_cast<std::size_t>(b)].load();
}

}  // namespace ember::ops
