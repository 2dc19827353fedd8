// exec::for_each_index: f(i) for every i in [0, n) on a device, as one OpenMP pass or one CUDA
// launch (grid-stride, on ember's stream, checked and counted). The executor for operators whose
// elements are not an expression: pooling windows, embedding gathers and sums. f is a host+device
// functor; the same struct runs on both devices.
#pragma once

#include <cstdint>

#include "../core/config.hpp"
#include "../core/device.hpp"
#include "assign.hpp"
#include "cpu_executor.hpp"
#include "launch_counter.hpp"
#if defined(EMBER_CUDA_KERNELS)
#include <cuda_runtime.h>

#include "../core/cuda.hpp"
#include "cuda_executor.cuh"
#endif

namespace ember::exec {

#if defined(EMBER_CUDA_KERNELS)
namespace gpu {
inline namespace EMBER_UNIT_KIND {
template <class F>
__global__ void __launch_bounds__(kBlockThreads) for_each_kernel(F f, std::int64_t n) {
  const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    f(i);
  }
}

/// Runs f(i) for i in [0, n) on CUDA device `device`: one launch, counted.
template <class F>
void launch_for_each(const F& f, std::int64_t n, int device) {
  if (n == 0) return;
  ember::cuda::DeviceGuard guard(device);
  launch_kernel("a for_each kernel", for_each_kernel<F>, grid_for(n, device), kBlockThreads, 0,
                ember::cuda::current_stream(device), f, n);
}
}  // namespace EMBER_UNIT_KIND
}  // namespace gpu
#endif

inline namespace EMBER_UNIT_KIND {

/// for_each_index's work for launch(): f(i) for i in [0, n), `cost` a rough cost per element
/// (the CPU's choice between one thread and the team). One pass or one launch, counted.
template <class F>
struct IndexPass {
  const F& f;
  std::int64_t n;
  std::int64_t cost;

  void on_host() const {
    count_launch();
#pragma omp parallel for schedule(static) if (n * cost >= cpu::kParallelThreshold)
    for (std::int64_t i = 0; i < n; ++i) f(i);
  }
#if defined(EMBER_CUDA_KERNELS)
  void on_cuda(int device) const { gpu::launch_for_each(f, n, device); }
#endif
};

/// Runs f(i) for i in [0, n) on `device`. `work` is a rough cost per element, for the CPU's
/// choice between one thread and the team.
template <class F>
void for_each_index(const F& f, std::int64_t n, std::int64_t work, Device device) {
  if (n == 0) return;
  launch(IndexPass<F>{f, n, work}, device);
}

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::exec
