// Parameter initialisers, seeded through Philox: a process-wide stream (seed, offset) that every
// initialiser advances by the number of values it draws, so a model built after
// nn::manual_seed(s) gets the same weights on every run and on either device.
//
//   uniform(shape, lo, hi), normal(shape, mean, std), zeros, ones
//   kaiming_uniform / kaiming_normal (He et al.; gain sqrt(2 / (1 + a^2)), fan_in)
//   xavier_uniform / xavier_normal (Glorot; fan_in + fan_out)
// PyTorch's Linear and Conv2d default: kaiming_uniform with a = sqrt(5), i.e. U(+-1/sqrt(fan_in)).
#pragma once

#include <cmath>
#include <cstdint>
#include <mutex>

#include "../exec/generate.hpp"
#include "../tensor/tensor.hpp"

namespace ember::nn {

namespace detail {
struct InitStream {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  std::mutex mutex;
};
inline InitStream& init_stream() {
  static InitStream s;
  return s;
}
/// The (seed, offset) for the next `n` values, and the stream advanced past them.
inline std::pair<std::uint64_t, std::uint64_t> draw(std::int64_t n) {
  InitStream& s = init_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto at = std::pair{s.seed, s.offset};
  // A draw of n values uses fewer than n + 1 Philox blocks (4 uniforms, or 2 normals, each).
  s.offset += static_cast<std::uint64_t>(n) + 1;
  return at;
}
}  // namespace detail

/// Restarts the initialisers' stream at `seed`.
inline void manual_seed(std::uint64_t seed) {
  auto& s = detail::init_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.seed = seed;
  s.offset = 0;
}

/// The initialisers' stream position, for a training checkpoint: set_rng_state(rng_state())
/// makes the next draws (initialisers, nn::Dropout masks) those of the saved run.
struct RngState {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
};
inline RngState rng_state() {
  auto& s = detail::init_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  return {s.seed, s.offset};
}
inline void set_rng_state(RngState state) {
  auto& s = detail::init_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.seed = state.seed;
  s.offset = state.offset;
}
/// Reserves `n` values of the stream (for a dropout mask of n elements, say): the (seed, offset)
/// to draw them with.
inline std::pair<std::uint64_t, std::uint64_t> reserve_random(std::int64_t n) {
  return detail::draw(n);
}

namespace init {

template <FloatingElement T, class Mode = exec::mode>
Tensor<T> uniform(const Shape& shape, double lo, double hi, Device device = Device::cpu()) {
  const auto [seed, offset] = detail::draw(shape.numel());
  return rand<T, Mode>(shape, seed, device, lo, hi, offset);
}
template <FloatingElement T, class Mode = exec::mode>
Tensor<T> normal(const Shape& shape, double mean, double stddev, Device device = Device::cpu()) {
  const auto [seed, offset] = detail::draw(shape.numel());
  return randn<T, Mode>(shape, seed, device, mean, stddev, offset);
}

/// fan_in and fan_out of a weight: [out, in] or [out, in, kh, kw] (PyTorch's convention).
inline std::pair<double, double> fans(const Shape& shape) {
  EMBER_CHECK(shape.rank() >= 2,
              "ember: init: fan_in and fan_out need a weight of rank 2 or "
              "more, got ",
              shape.str());
  double receptive = 1;
  for (int d = 2; d < shape.rank(); ++d) receptive *= static_cast<double>(shape[d]);
  return {static_cast<double>(shape[1]) * receptive, static_cast<double>(shape[0]) * receptive};
}

template <FloatingElement T, class Mode = exec::mode>
Tensor<T> kaiming_uniform(const Shape& shape, double a = 0.0, Device device = Device::cpu()) {
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = gain * std::sqrt(3.0 / fans(shape).first);
  return uniform<T, Mode>(shape, -bound, bound, device);
}
template <FloatingElement T, class Mode = exec::mode>
Tensor<T> kaiming_normal(const Shape& shape, double a = 0.0, Device device = Device::cpu()) {
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  return normal<T, Mode>(shape, 0.0, gain / std::sqrt(fans(shape).first), device);
}
template <FloatingElement T, class Mode = exec::mode>
Tensor<T> xavier_uniform(const Shape& shape, double gain = 1.0, Device device = Device::cpu()) {
  const auto [in, out] = fans(shape);
  const double bound = gain * std::sqrt(6.0 / (in + out));
  return uniform<T, Mode>(shape, -bound, bound, device);
}
template <FloatingElement T, class Mode = exec::mode>
Tensor<T> xavier_normal(const Shape& shape, double gain = 1.0, Device device = Device::cpu()) {
  const auto [in, out] = fans(shape);
  return normal<T, Mode>(shape, 0.0, gain * std::sqrt(2.0 / (in + out)), device);
}

}  // namespace init
}  // namespace ember::nn
