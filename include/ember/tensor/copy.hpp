// Moving bytes between devices, on ember's current stream. Copies that land on the host wait
// for the stream, so the caller can read the bytes on return.
#pragma once

#include <cstddef>
#include <cstring>

#include "../core/cuda.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#include "../memory/pinned_allocator.hpp"

namespace ember::detail {

inline void copy_bytes(void* dst, Device dst_dev, const void* src, Device src_dev,
                       std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_dev.is_cpu() && src_dev.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if defined(EMBER_WITH_CUDA)
  const int index = dst_dev.is_cuda() ? dst_dev.index() : src_dev.index();
  cuda::require_device(index);
  cuda::DeviceGuard guard(index);
  cudaStream_t stream = cuda::current_stream(index);
  if (dst_dev.is_cuda() && src_dev.is_cuda() && dst_dev.index() != src_dev.index()) {
    // The source device's stream must have finished writing before the peer copy reads.
    cuda::synchronize(src_dev.index());
    cuda::check(cudaMemcpyPeerAsync(dst, dst_dev.index(), src, src_dev.index(), bytes, stream),
                "cudaMemcpyPeerAsync");
  } else {
    if (src_dev.is_cuda() && dst_dev.is_cpu()) {
      cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream),
                  "cudaMemcpyAsync (device to host)");
    } else {
      cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
    }
  }
  // Host memory may be pageable and reused by the caller right away: finish the copy.
  cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
#else
  (void)dst;
  (void)src;
  cuda::require_device(dst_dev.is_cuda() ? dst_dev.index() : src_dev.index());
#endif
}

/// Queues a copy of `bytes` from pinned host memory to CUDA device `dst_dev` on ember's current
/// stream and returns without waiting for it. `block` is the start of the pinned block `src` lies
/// in: the allocator keeps the block from reuse until the copy is done.
inline void copy_pinned_to_device_async(void* dst, Device dst_dev, const void* src, void* block,
                                        std::size_t bytes) {
#if defined(EMBER_WITH_CUDA)
  if (bytes == 0) return;
  cuda::require_device(dst_dev.index());
  cuda::DeviceGuard guard(dst_dev.index());
  cudaStream_t stream = cuda::current_stream(dst_dev.index());
  cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream),
              "cudaMemcpyAsync (pinned host to device)");
  memory::pinned_record_use(block, dst_dev.index(), stream);
#else
  (void)dst;
  (void)src;
  (void)block;
  (void)bytes;
  cuda::require_device(dst_dev.index());
#endif
}

}  // namespace ember::detail
