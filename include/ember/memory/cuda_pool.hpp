// Device memory from CUDA's stream-ordered allocator, one caching pool per device: freed blocks
// stay in the pool (release threshold: unlimited) and are reused by later allocations on the
// same stream without synchronising.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "../core/cuda.hpp"
#include "../core/error.hpp"
#include "stats.hpp"

namespace ember {

#if defined(EMBER_WITH_CUDA)
namespace memory::detail {
inline cudaMemPool_t pool_of(int device) {
  static std::array<cudaMemPool_t, ember::detail::kMaxCudaDevices> pools{};
  static std::array<std::once_flag, ember::detail::kMaxCudaDevices> once;
  std::call_once(once[static_cast<std::size_t>(device)], [device] {
    cuda::check(cudaDeviceGetDefaultMemPool(&pools[static_cast<std::size_t>(device)], device),
                "cudaDeviceGetDefaultMemPool");
    std::uint64_t keep_everything = UINT64_MAX;
    cuda::check(cudaMemPoolSetAttribute(pools[static_cast<std::size_t>(device)],
                                        cudaMemPoolAttrReleaseThreshold, &keep_everything),
                "cudaMemPoolSetAttribute");
  });
  return pools[static_cast<std::size_t>(device)];
}
}  // namespace memory::detail

inline std::int64_t cuda_reserved_bytes(int device) {
  if (device >= cuda::device_count()) return 0;
  std::uint64_t reserved = 0;
  cuda::check(cudaMemPoolGetAttribute(memory::detail::pool_of(device),
                                      cudaMemPoolAttrReservedMemCurrent, &reserved),
              "cudaMemPoolGetAttribute");
  return static_cast<std::int64_t>(reserved);
}

namespace memory {
/// Allocates `bytes` on `device`, ordered on `stream`. When the pool cannot grow it returns its
/// cached blocks to the driver and tries once more before throwing ember::Error.
inline void* cuda_allocate(int device, std::size_t bytes, cudaStream_t stream) {
  cuda::require_device(device);
  cuda::DeviceGuard guard(device);
  cudaMemPool_t pool = detail::pool_of(device);
  void* p = nullptr;
  const std::size_t ask = bytes == 0 ? 1 : bytes;
  cudaError_t st = cudaMallocFromPoolAsync(&p, ask, pool, stream);
  if (st == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    cuda::check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
    st = cudaMallocFromPoolAsync(&p, ask, pool, stream);
  }
  if (st == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    fail("ember: out of memory on cuda:", device, " allocating ", bytes, " bytes (",
         memory_stats(Device::cuda(device)), "; the driver reports ", free_b, " of ", total_b,
         " bytes free)");
  }
  cuda::check(st, "cudaMallocFromPoolAsync");
  ember::detail::counters(Device::cuda(device)).on_alloc(static_cast<std::int64_t>(bytes));
  return p;
}

inline void cuda_free(int device, void* p, std::size_t bytes, cudaStream_t stream) noexcept {
  (void)cudaFreeAsync(p, stream);
  ember::detail::counters(Device::cuda(device)).on_free(static_cast<std::int64_t>(bytes));
}
}  // namespace memory
#else
inline std::int64_t cuda_reserved_bytes(int) { return 0; }
#endif

}  // namespace ember
