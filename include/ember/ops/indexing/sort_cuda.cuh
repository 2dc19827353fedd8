// The CUDA side of ops/indexing/sort.hpp: every line of n int64 keys sorted stably by CUB's
// segmented sort, carrying each key's position in its line. CUB's scratch memory comes from ember's
// pool on ember's stream. Included only in translation units compiled by nvcc.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cub/device/device_segmented_sort.cuh>

#include "../../core/cuda.hpp"
#include "../../exec/cuda_executor.cuh"
#include "../../exec/for_each.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"

namespace ember::ops::gpu {
inline namespace EMBER_UNIT_KIND {

/// positions[i] = i's position in its line of n; offsets[l] = l * n (for l in [0, lines]).
struct LinePositions {
  std::int64_t* positions;
  std::int64_t n;
  __device__ void operator()(std::int64_t i) const { positions[i] = i % n; }
};
struct LineOffsets {
  std::int64_t* offsets;
  std::int64_t n;
  __device__ void operator()(std::int64_t l) const { offsets[l] = l * n; }
};

/// idx[l, j]: the position in line l of its j-th smallest key, equal keys in position order.
/// A template (of nothing) so that CUB's sort kernels are compiled only in the translation units
/// that sort, not in every one that includes ember.
template <class = void>
void sort_lines(const std::int64_t* keys, std::int64_t* idx, std::int64_t lines, std::int64_t n,
                int device) {
  const Device dev = Device::cuda(device);
  const std::int64_t total = lines * n;
  const Tensor<std::int64_t> positions = empty<std::int64_t>(Shape{total}, dev);
  const Tensor<std::int64_t> sorted_keys = empty<std::int64_t>(Shape{total}, dev);
  const Tensor<std::int64_t> offsets = empty<std::int64_t>(Shape{lines + 1}, dev);
  exec::gpu::launch_for_each(LinePositions{positions.data(), n}, total, device);
  exec::gpu::launch_for_each(LineOffsets{offsets.data(), n}, lines + 1, device);
  ember::cuda::DeviceGuard guard(device);
  cudaStream_t stream = ember::cuda::current_stream(device);
  std::size_t bytes = 0;
  ember::cuda::check(cub::DeviceSegmentedSort::StableSortPairs(
                         nullptr, bytes, keys, sorted_keys.data(), positions.data(), idx, total,
                         lines, offsets.data(), offsets.data() + 1, stream),
                     "cub::DeviceSegmentedSort::StableSortPairs (size query)");
  const Tensor<std::uint8_t> scratch =
      empty<std::uint8_t>(Shape{static_cast<std::int64_t>(bytes > 0 ? bytes : 1)}, dev);
  ember::cuda::check(cub::DeviceSegmentedSort::StableSortPairs(
                         scratch.data(), bytes, keys, sorted_keys.data(), positions.data(), idx,
                         total, lines, offsets.data(), offsets.data() + 1, stream),
                     "cub::DeviceSegmentedSort::StableSortPairs");
  exec::count_launch();
}

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::ops::gpu
