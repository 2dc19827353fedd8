// The CUDA side of ops/pooling.hpp: one grid-stride kernel that runs a pooling functor (forward
// or backward, one thread per element) on ember's current stream. The functors themselves are
// the host+device structs of pooling.hpp, so the GPU computes exactly what the CPU does.
// Included only in translation units compiled by nvcc.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../core/cuda.hpp"
#include "../exec/cuda_executor.cuh"
#include "../exec/launch_counter.hpp"

namespace ember::ops::gpu {
inline namespace EMBER_EXEC_NS {

template <class F>
__global__ void __launch_bounds__(exec::gpu::kBlockThreads) pool_kernel(F f, std::int64_t n) {
  const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    f(i);
  }
}

/// Runs f(i) for i in [0, n) on CUDA device `device`: one launch, counted.
template <class F>
void launch_pool(const F& f, std::int64_t n, int device) {
  ember::cuda::DeviceGuard guard(device);
  pool_kernel<<<exec::gpu::grid_for(n, device), exec::gpu::kBlockThreads, 0,
                ember::cuda::current_stream(device)>>>(f, n);
  exec::gpu::check_launch("a pooling kernel launch");
  exec::count_launch();
}

}  // namespace EMBER_EXEC_NS
}  // namespace ember::ops::gpu
