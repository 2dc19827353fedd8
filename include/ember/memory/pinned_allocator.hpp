// Page-locked (pinned) host memory, so copies to the GPU need not wait for the host.
//
// cudaMemcpyAsync from ordinary (pageable) memory returns only once the driver has staged the
// bytes; from page-locked memory the copy engine reads them while the CPU goes on, so a data
// loader can queue a batch's copy and start on the next batch. Pinning is slow (the kernel maps
// and locks every page) and cudaFreeHost waits for the whole device, so freed blocks are kept
// and handed out again for the same rounded size, as the host cache does.
//
// A block may still be read by a copy that was queued but has not run when its tensor is
// freed. Each such copy records an event on the block (pinned_record_use); a freed block is
// handed out again only once its events have completed, so a new batch never overwrites bytes
// an earlier copy is still reading.
//
// The cache holds at most EMBER_PINNED_CACHE_BYTES (default 2 GiB). Pinned bytes in use are
// counted in memory_stats(Device::cpu()), as host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "../core/cuda.hpp"
#include "../core/error.hpp"
#include "host_allocator.hpp"
#include "stats.hpp"

namespace ember::memory {

/// True when pinned memory can be allocated: the CUDA runtime is linked and a device is present.
inline bool pinned_memory_available() {
#if defined(EMBER_WITH_CUDA)
  return cuda::available();
#else
  return false;
#endif
}

#if defined(EMBER_WITH_CUDA)
namespace detail {
class PinnedCache {
 public:
  static PinnedCache& instance() {
    static PinnedCache* cache = new PinnedCache();  // never destroyed: storages may outlive statics
    return *cache;
  }

  void* allocate(std::size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = free_.lower_bound(size); it != free_.end() && it->first == size; ++it) {
        void* p = it->second;
        if (!copies_done_locked(blocks_.at(p))) continue;
        free_.erase(it);
        cached_ -= size;
        return p;
      }
    }
    void* p = nullptr;
    cudaError_t st = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    if (st == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      empty();
      st = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    }
    if (st == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      fail("ember: out of pinned host memory allocating ", size, " bytes (",
           memory_stats(Device::cpu()), ")");
    }
    cuda::check(st, "cudaHostAlloc");
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_[p] = Block{size, {}};
    return p;
  }

  /// Keeps `p` for reuse once its copies are done, or frees it when the cache is full.
  void release(void* p) {
    std::unique_lock<std::mutex> lock(mutex_);
    Block& b = blocks_.at(p);
    if (cached_ + b.size <= limit_) {
      free_.emplace(b.size, p);
      cached_ += b.size;
      return;
    }
    // Freeing host memory a queued copy still reads would corrupt it: wait for its copies.
    std::vector<cudaEvent_t> events = std::move(b.events);
    blocks_.erase(p);
    lock.unlock();
    for (cudaEvent_t e : events) {
      (void)cudaEventSynchronize(e);
      (void)cudaEventDestroy(e);
    }
    (void)cudaFreeHost(p);
  }

  /// Marks `p` (the start of a pinned block) as read by the work queued on `stream` so far.
  void record_use(void* p, int device, cudaStream_t stream) {
    cuda::DeviceGuard guard(device);
    cudaEvent_t e = nullptr;
    cuda::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    cuda::check(cudaEventRecord(e, stream), "cudaEventRecord");
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.at(p).events.push_back(e);
  }

  /// Frees every cached block (after the copies that read them).
  void empty() {
    std::vector<std::pair<void*, Block>> freed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [size, p] : free_) {
        freed.emplace_back(p, std::move(blocks_.at(p)));
        blocks_.erase(p);
      }
      free_.clear();
      cached_ = 0;
    }
    for (auto& [p, block] : freed) {
      for (cudaEvent_t e : block.events) {
        (void)cudaEventSynchronize(e);
        (void)cudaEventDestroy(e);
      }
      (void)cudaFreeHost(p);
    }
  }

  std::int64_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<std::int64_t>(cached_);
  }

 private:
  struct Block {
    std::size_t size = 0;
    std::vector<cudaEvent_t> events;  // copies queued from this block, not yet seen done
  };

  PinnedCache() {
    if (const char* env = std::getenv("EMBER_PINNED_CACHE_BYTES")) {
      limit_ = static_cast<std::size_t>(std::strtoull(env, nullptr, 10));
    }
  }

  // Drops the events that have completed; true when none is left pending.
  static bool copies_done_locked(Block& b) {
    std::erase_if(b.events, [](cudaEvent_t e) {
      if (cudaEventQuery(e) != cudaSuccess) {
        (void)cudaGetLastError();  // cudaErrorNotReady is not sticky, but keep the slate clean
        return false;
      }
      (void)cudaEventDestroy(e);
      return true;
    });
    return b.events.empty();
  }

  std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;  // every pinned block, in use or cached
  std::multimap<std::size_t, void*> free_;   // cached blocks by size
  std::size_t cached_ = 0;
  std::size_t limit_ = std::size_t{2} << 30;
};
}  // namespace detail

/// Allocates `bytes` (may be 0) of page-locked host memory, 64-byte aligned; throws ember::Error
/// without a CUDA device or when out of memory.
inline void* pinned_allocate(std::size_t bytes) {
  EMBER_CHECK(pinned_memory_available(), "ember: pinned host memory needs a CUDA device, but ",
              cuda::unavailable_reason());
  void* p = detail::PinnedCache::instance().allocate(ember::memory::detail::rounded_size(bytes));
  ember::detail::counters(Device::cpu()).on_alloc(static_cast<std::int64_t>(bytes));
  return p;
}

/// Returns a block from pinned_allocate to the cache.
inline void pinned_free(void* p, std::size_t bytes) {
  detail::PinnedCache::instance().release(p);
  ember::detail::counters(Device::cpu()).on_free(static_cast<std::int64_t>(bytes));
}

/// Records that the work queued on `stream` of `device` so far reads the pinned block `p`: the
/// block is not handed out again until that work is done.
inline void pinned_record_use(void* p, int device, cudaStream_t stream) {
  detail::PinnedCache::instance().record_use(p, device, stream);
}

/// Bytes of pinned memory the cache holds for reuse.
inline std::int64_t pinned_cached_bytes() { return detail::PinnedCache::instance().cached_bytes(); }

/// Returns every cached pinned block to the system (after the copies that read them).
inline void pinned_empty_cache() { detail::PinnedCache::instance().empty(); }
#else
inline void* pinned_allocate(std::size_t) {
  fail("ember: pinned host memory needs a CUDA device, but ", cuda::unavailable_reason());
}
inline void pinned_free(void*, std::size_t) {}
inline std::int64_t pinned_cached_bytes() { return 0; }
inline void pinned_empty_cache() {}
#endif

}  // namespace ember::memory
