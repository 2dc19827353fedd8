// Factories that compute their values: zeros, ones, full, arange, linspace, rand, randn (and
// the *_like forms). Each is a generator expression evaluated by the executor, so the values
// are the same on every device: Philox noise depends only on (seed, offset, element index).
#pragma once

#include <cmath>
#include <cstdint>

#include "../core/compiled_once.hpp"
#include "../expr/generator.hpp"
#include "assign.hpp"

namespace ember::inline EMBER_UNIT_KIND {

template <Storable T>
Tensor<T> full(const Shape& shape, double value, Device device = Device::cpu()) {
  Tensor<T> t = empty<T>(shape, device);
  t = value;
  return t;
}
template <Storable T>
Tensor<T> zeros(const Shape& shape, Device device = Device::cpu()) {
  return full<T>(shape, 0.0, device);
}
template <Storable T>
Tensor<T> ones(const Shape& shape, Device device = Device::cpu()) {
  return full<T>(shape, 1.0, device);
}
template <Storable T, Storable U>
Tensor<T> zeros_like(const Tensor<U>& like) {
  return zeros<T>(like.shape(), like.device());
}
template <Storable T, Storable U>
Tensor<T> ones_like(const Tensor<U>& like) {
  return ones<T>(like.shape(), like.device());
}
template <Storable T, Storable U>
Tensor<T> full_like(const Tensor<U>& like, double value) {
  return full<T>(like.shape(), value, like.device());
}

/// start, start+step, ... below end (rank 1), as numpy.arange.
template <Storable T>
Tensor<T> arange(double start, double end, double step = 1.0, Device device = Device::cpu()) {
  EMBER_CHECK(step != 0 && std::isfinite(step) && std::isfinite(start) && std::isfinite(end),
              "ember: arange: start, end and step must be finite and step nonzero (got ", start,
              ", ", end, ", ", step, ")");
  const double count = std::ceil((end - start) / step);
  const auto n = static_cast<std::int64_t>(count > 0 ? count : 0);
  return Tensor<T>(expr::Generated<T, expr::ArangeGen>(Shape{n}, device, {start, step}));
}
/// 0, 1, ..., end-1.
template <Storable T>
Tensor<T> arange(double end, Device device = Device::cpu()) {
  return arange<T>(0.0, end, 1.0, device);
}

/// `steps` evenly spaced values from start to end inclusive.
template <Storable T>
Tensor<T> linspace(double start, double end, std::int64_t steps, Device device = Device::cpu()) {
  EMBER_CHECK(steps >= 0, "ember: linspace: steps must be non-negative, got ", steps);
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  return Tensor<T>(
      expr::Generated<T, expr::LinspaceGen>(Shape{steps}, device, {start, end, step, steps}));
}

/// Uniform values in [low, high): element i comes from Philox(seed, offset + i / 4).
template <FloatingElement T>
Tensor<T> rand(const Shape& shape, std::uint64_t seed, Device device = Device::cpu(),
               double low = 0.0, double high = 1.0, std::uint64_t offset = 0) {
  return Tensor<T>(expr::Generated<T, expr::UniformGen>(
      shape, device, {seed, offset, static_cast<float>(low), static_cast<float>(high)}));
}

/// Normal values (Box-Muller on Philox words): the same on CPU and GPU for the same seed.
template <FloatingElement T>
Tensor<T> randn(const Shape& shape, std::uint64_t seed, Device device = Device::cpu(),
                double mean = 0.0, double stddev = 1.0, std::uint64_t offset = 0) {
  return Tensor<T>(expr::Generated<T, expr::NormalGen>(
      shape, device, {seed, offset, static_cast<float>(mean), static_cast<float>(stddev)}));
}
}  // namespace ember::inline EMBER_UNIT_KIND

/// Compiled once in ember::kernels (core/compiled_once.hpp): rand and randn.
#define EMBER_RANDOM_INSTANCES(EXPLICIT, T)                                                        \
  namespace ember {                                                                                \
  EXPLICIT Tensor<T> rand<T>(const Shape&, std::uint64_t, Device, double, double, std::uint64_t);  \
  EXPLICIT Tensor<T> randn<T>(const Shape&, std::uint64_t, Device, double, double, std::uint64_t); \
  }
EMBER_EXTERN_INSTANCES(EMBER_RANDOM_INSTANCES)
