// Storage: a refcounted block of bytes on one device. Tensors are views onto a Storage.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "../core/cuda.hpp"
#include "../core/device.hpp"
#include "cuda_pool.hpp"
#include "host_allocator.hpp"
#include "pinned_allocator.hpp"

namespace ember {

class Storage {
 public:
  /// Allocates `bytes` on `device` (on the device's current stream for CUDA).
  static std::shared_ptr<Storage> allocate(Device device, std::size_t bytes) {
    auto s = std::shared_ptr<Storage>(new Storage());
    s->device_ = device;
    s->bytes_ = bytes;
    if (device.is_cpu()) {
      s->data_ = memory::host_allocate(bytes);
      s->release_ = [bytes](void* p) { memory::host_free(p, bytes); };
    } else {
#if defined(EMBER_WITH_CUDA)
      const int index = device.index();
      cudaStream_t stream = cuda::current_stream(index);
      s->data_ = memory::cuda_allocate(index, bytes, stream);
      s->release_ = [index, bytes, stream](void* p) { memory::cuda_free(index, p, bytes, stream); };
#else
      cuda::require_device(device.index());
#endif
    }
    return s;
  }

  /// Allocates `bytes` of page-locked host memory (memory/pinned_allocator.hpp): a CPU storage
  /// whose copies to a GPU can run without the host waiting. Throws without a CUDA device.
  static std::shared_ptr<Storage> allocate_pinned(std::size_t bytes) {
    auto s = std::shared_ptr<Storage>(new Storage());
    s->device_ = Device::cpu();
    s->bytes_ = bytes;
    s->data_ = memory::pinned_allocate(bytes);
    s->pinned_ = true;
    s->release_ = [bytes](void* p) { memory::pinned_free(p, bytes); };
    return s;
  }

  /// Wraps memory the caller owns. `release` (may be empty) runs when the last view goes.
  static std::shared_ptr<Storage> wrap(void* data, std::size_t bytes, Device device,
                                       std::function<void(void*)> release = {}) {
    if (device.is_cuda()) cuda::require_device(device.index());
    auto s = std::shared_ptr<Storage>(new Storage());
    s->data_ = data;
    s->bytes_ = bytes;
    s->device_ = device;
    s->release_ = std::move(release);
    return s;
  }

  ~Storage() {
    if (release_ && data_) release_(data_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  /// True for page-locked host memory from allocate_pinned.
  bool pinned() const { return pinned_; }

  /// Bumped by every write through ember; autograd compares it to catch in-place edits of
  /// tensors saved for backward.
  std::uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  Storage() = default;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_;
  bool pinned_ = false;
  std::function<void(void*)> release_;
  std::atomic<std::uint64_t> version_{0};
};

}  // namespace ember
