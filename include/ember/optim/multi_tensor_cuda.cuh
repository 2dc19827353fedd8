// The CUDA side of optim/multi_tensor.hpp's per-slot sums: one block per chunk, its threads
// striding through the chunk (coalesced), a shared-memory tree to one partial per chunk.
// (nvcc only; included by multi_tensor.hpp.)
#pragma once

#include <array>
#include <cstdint>

#include <cuda_runtime.h>

#include "../core/cuda.hpp"
#include "../exec/cuda_executor.cuh"
#include "../exec/launch_counter.hpp"

namespace ember::optim::gpu {
inline namespace EMBER_UNIT_KIND {

inline constexpr int kSumThreads = 256;

// Chunk is optim::detail::Chunk ({begin, end, slot}), a parameter here so this file needs
// nothing from multi_tensor.hpp.
template <int K, class Slot, class Chunk, class F>
__global__ void __launch_bounds__(kSumThreads)
    chunk_sums_kernel(const Slot* slots, const Chunk* chunks, F f, double* partial) {
  __shared__ double shared[K][kSumThreads];
  const Chunk c = chunks[blockIdx.x];
  const Slot& slot = slots[c.slot];
  std::array<double, K> acc{};
  for (std::int64_t j = c.begin + threadIdx.x; j < c.end; j += kSumThreads) {
    const std::array<double, K> v = f(slot, j);
    for (int k = 0; k < K; ++k) acc[k] += v[k];
  }
  for (int k = 0; k < K; ++k) shared[k][threadIdx.x] = acc[k];
  __syncthreads();
  for (int width = kSumThreads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) {
      for (int k = 0; k < K; ++k) shared[k][threadIdx.x] += shared[k][threadIdx.x + width];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    for (int k = 0; k < K; ++k) partial[blockIdx.x * K + k] = shared[k][0];
  }
}

/// partial[c, k] = sum over chunk c of f(slot, j)[k]: one launch, one block per chunk.
template <int K, class Slot, class Chunk, class F>
void launch_chunk_sums(const Slot* slots, const Chunk* chunks, std::int64_t nchunks, const F& f,
                       double* partial, int device) {
  ember::cuda::DeviceGuard guard(device);
  EMBER_CHECK(nchunks < (std::int64_t{1} << 31), "ember: multi-tensor sums: too many chunks (",
              nchunks, ")");
  exec::gpu::launch_kernel("the multi-tensor sums kernel", chunk_sums_kernel<K, Slot, Chunk, F>,
                           static_cast<unsigned>(nchunks), kSumThreads, 0,
                           ember::cuda::current_stream(device), slots, chunks, f, partial);
}

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::optim::gpu
