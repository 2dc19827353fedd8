// The one place ember launches a CUDA kernel: kernel<<<grid, block, shared, stream>>>(args...)
// under nvcc, the emulated device's launch under EMBER_CUDA_EMULATION (emulated_cuda/, which
// checks the sizes against sm_90 and runs the grid on the CPU). Either way the launch's error is
// checked at once and the launch is counted. Included only where EMBER_CUDA_KERNELS is set.
#pragma once

#include <cstddef>
#include <utility>

#include "../core/cuda.hpp"
#include "launch_counter.hpp"

namespace ember::exec::gpu {

/// Launches `kernel` with `args` on `stream`; `name` (a phrase: "an elementwise kernel") names it
/// in an error.
template <class... P, class... A>
void launch_kernel(const char* name, void (*kernel)(P...), unsigned grid, unsigned block,
                   std::size_t shared, cudaStream_t stream, A&&... args) {
#if defined(EMBER_CUDA_EMULATION)
  (void)emulated::launch(name, kernel, dim3(grid), dim3(block), shared, stream,
                         std::forward<A>(args)...);
#else
  // clang-format off
  kernel<<<grid, block, shared, stream>>>(std::forward<A>(args)...);
  // clang-format on
#endif
  cuda::check(cudaGetLastError(), name);
  count_launch();
}

}  // namespace ember::exec::gpu
