// The CUDA side of ops/indexing/embedding.hpp: the stable sort of positions
// by id behind the deterministic backward: CUB's radix sort of (id, position) pairs, whose
// stability keeps each id's positions in increasing order, over only the bits ids can use;
// then a binary search per id for where its run starts. CUB's scratch memory comes from ember's
// pool on ember's stream. Included only in translation units compiled by nvcc.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "../../core/cuda.hpp"
#include "../../exec/cuda_executor.cuh"
#include "../../exec/for_each.hpp"
#include "../../exec/launch_counter.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"

namespace ember::ops::gpu {
inline namespace EMBER_UNIT_KIND {

/// The sort's input: key p = ids[p] (checked to fit int32), value p = p.
struct SortInput {
  const std::int64_t* ids;
  std::int32_t* keys;
  std::int32_t* positions;
  __device__ void operator()(std::int64_t p) const {
    keys[p] = static_cast<std::int32_t>(ids[p]);
    positions[p] = static_cast<std::int32_t>(p);
  }
};

/// start[v] = the number of sorted keys below v (a binary search), for v in [0, V].
struct RunStarts {
  const std::int32_t* sorted;
  std::int64_t M;
  std::int32_t* start;
  __device__ void operator()(std::int64_t v) const {
    std::int64_t lo = 0, hi = M;
    while (lo < hi) {
      const std::int64_t mid = (lo + hi) / 2;
      if (sorted[mid] < v) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    start[v] = static_cast<std::int32_t>(lo);
  }
};

/// The positions 0..M-1 of the dense ids (each in [0, V)) ordered stably by id, and where each
/// id's run starts ([V + 1]), on CUDA device `device`. A template (of nothing) so that CUB's
/// radix sort is compiled only where embeddings are used.
template <class = void>
void sort_runs(const std::int64_t* ids, std::int64_t M, std::int64_t V, int device,
               Tensor<std::int32_t>& order, Tensor<std::int32_t>& start) {
  const Device dev = Device::cuda(device);
  order = empty<std::int32_t>(Shape{M}, dev);
  start = empty<std::int32_t>(Shape{V + 1}, dev);
  const Tensor<std::int32_t> keys = empty<std::int32_t>(Shape{M}, dev);
  const Tensor<std::int32_t> sorted = empty<std::int32_t>(Shape{M}, dev);
  const Tensor<std::int32_t> positions = empty<std::int32_t>(Shape{M}, dev);
  if (M > 0) {
    exec::gpu::launch_for_each(SortInput{ids, keys.data(), positions.data()}, M, device);
    int bits = 1;  // ids are non-negative and below V: sort only the bits they can set
    while (bits < 31 && (std::int64_t{1} << bits) < V) ++bits;
    ember::cuda::DeviceGuard guard(device);
    cudaStream_t stream = ember::cuda::current_stream(device);
    std::size_t bytes = 0;
    ember::cuda::check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), sorted.data(),
                                                       positions.data(), order.data(),
                                                       static_cast<int>(M), 0, bits, stream),
                       "cub::DeviceRadixSort::SortPairs (size query)");
    const Tensor<std::uint8_t> scratch =
        empty<std::uint8_t>(Shape{static_cast<std::int64_t>(bytes > 0 ? bytes : 1)}, dev);
    ember::cuda::check(cub::DeviceRadixSort::SortPairs(
                           scratch.data(), bytes, keys.data(), sorted.data(), positions.data(),
                           order.data(), static_cast<int>(M), 0, bits, stream),
                       "cub::DeviceRadixSort::SortPairs");
    exec::count_launch();  // CUB's sort: counted as one (it runs a few kernels)
  }
  exec::gpu::launch_for_each(RunStarts{sorted.data(), M, start.data()}, V + 1, device);
}

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::ops::gpu
