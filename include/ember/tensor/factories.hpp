// Factories that only allocate or copy: empty, from_vector, from_blob. Factories that compute
// values (zeros, full, arange, rand, ...) run through the executor: exec/generate.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "../core/compiled_once.hpp"
#include "../core/dtype.hpp"
#include "../core/shape.hpp"
#include "copy.hpp"
#include "tensor.hpp"

namespace ember {

/// An uninitialised dense tensor.
template <Storable T>
Tensor<T> empty(const Shape& shape, Device device = Device::cpu(),
                MemoryFormat format = MemoryFormat::contiguous) {
  for (int i = 0; i < shape.rank(); ++i) {
    EMBER_CHECK(shape[i] >= 0, "ember: empty: negative extent in shape ", shape.str());
  }
  auto storage = Storage::allocate(device, static_cast<std::size_t>(shape.numel()) * sizeof(T));
  const Strides strides =
      format == MemoryFormat::contiguous ? contiguous_strides(shape) : channels_last_strides(shape);
  return Tensor<T>(std::move(storage), 0, shape, strides);
}

/// An uninitialised dense host tensor in page-locked memory (Tensor::pin_memory). Needs a CUDA
/// device.
template <Storable T>
Tensor<T> empty_pinned(const Shape& shape, MemoryFormat format = MemoryFormat::contiguous) {
  for (int i = 0; i < shape.rank(); ++i) {
    EMBER_CHECK(shape[i] >= 0, "ember: empty_pinned: negative extent in shape ", shape.str());
  }
  auto storage = Storage::allocate_pinned(static_cast<std::size_t>(shape.numel()) * sizeof(T));
  const Strides strides =
      format == MemoryFormat::contiguous ? contiguous_strides(shape) : channels_last_strides(shape);
  return Tensor<T>(std::move(storage), 0, shape, strides);
}

/// An uninitialised tensor with the shape and device of `like`.
template <Storable T, Storable U>
Tensor<T> empty_like(const Tensor<U>& like) {
  return empty<T>(like.shape(), like.device());
}

/// A tensor holding `values` (row-major) with `shape`, copied to `device`.
template <Storable T>
Tensor<T> from_vector(const std::vector<T>& values, const Shape& shape,
                      Device device = Device::cpu()) {
  EMBER_CHECK(static_cast<std::int64_t>(values.size()) == shape.numel(),
              "ember: from_vector: ", values.size(), " values cannot fill shape ", shape.str(),
              " (", shape.numel(), " elements)");
  Tensor<T> t = empty<T>(shape, device);
  if constexpr (std::is_same_v<T, bool>) {
    const std::vector<std::uint8_t> bytes(values.begin(), values.end());  // vector<bool> is packed
    detail::copy_bytes(t.data(), device, bytes.data(), Device::cpu(), bytes.size());
  } else {
    detail::copy_bytes(t.data(), device, values.data(), Device::cpu(), values.size() * sizeof(T));
  }
  return t;
}

/// A rank-1 tensor holding `values`.
template <Storable T>
Tensor<T> from_vector(const std::vector<T>& values, Device device = Device::cpu()) {
  return from_vector<T>(values, Shape{static_cast<std::int64_t>(values.size())}, device);
}

/// A view of memory the caller owns (host or device). Dense row-major unless `strides` are
/// given; `release` runs when the last tensor using the memory is gone.
template <Storable T>
Tensor<T> from_blob(T* data, const Shape& shape, Device device = Device::cpu(),
                    std::function<void(void*)> release = {}) {
  auto storage = Storage::wrap(data, static_cast<std::size_t>(shape.numel()) * sizeof(T), device,
                               std::move(release));
  return Tensor<T>(std::move(storage), 0, shape, contiguous_strides(shape));
}
template <Storable T>
Tensor<T> from_blob(T* data, const Shape& shape, const Strides& strides, Device device,
                    std::function<void(void*)> release = {}) {
  std::int64_t span = 1;
  for (int i = 0; i < shape.rank(); ++i) span += (shape[i] - 1) * strides[i];
  auto storage = Storage::wrap(data, static_cast<std::size_t>(shape.numel() ? span : 0) * sizeof(T),
                               device, std::move(release));
  return Tensor<T>(std::move(storage), 0, shape, strides);
}

}  // namespace ember

/// `empty<T>` does not evaluate (it is outside the kinds' namespaces, core/config.hpp): compiled
/// once in ember::kernels by its host units for every element type, declared extern in every
/// unit that links it.
#define EMBER_EMPTY_INSTANCE(EXPLICIT, T)                          \
  namespace ember {                                                \
  EXPLICIT Tensor<T> empty<T>(const Shape&, Device, MemoryFormat); \
  }
#if defined(EMBER_KERNELS)
EMBER_FLOATING_TYPES(EMBER_EMPTY_INSTANCE, extern template)
EMBER_INTEGER_TYPES(EMBER_EMPTY_INSTANCE, extern template)
#endif
