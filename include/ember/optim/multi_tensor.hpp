// Multi-tensor launches: one pass over the elements of many tensors (every parameter of a model
// with its gradient and optimizer state), as one OpenMP loop or one CUDA launch.
//
// A step describes each tensor by a *slot*, a small trivially-copyable struct of pointers, sizes
// and per-tensor numbers (the optimizer defines it). The slots are cut into chunks of at most
// kChunk elements; the chunk table, not the tensors, decides the work split, so a model of 160
// tensors of any sizes is one balanced launch. On CUDA both tables travel to the device in one
// copy per step.
//
//   MultiTensor<Slot> table(device);            // slots in order, each with its element count
//   table.add(slot, numel);
//   table.for_each_element(f);                  // f(slot, j) for every j < numel of every slot
//                                               // (touching element j of the slot's tensors only)
//   table.sums<K>(f) -> Tensor<double> [slots, K]: per slot, the sums of f(slot, j) (an array of
//                                       K doubles), folded in chunk order: deterministic
//
// f is a host+device functor (EMBER_HD operator()).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#include "../exec/for_each.hpp"
#include "../exec/launch_counter.hpp"
#include "../tensor/factories.hpp"
#include "../tensor/tensor.hpp"
#if defined(EMBER_CUDA_KERNELS)
#include "multi_tensor_cuda.cuh"
#endif

namespace ember::optim {

namespace detail {

/// Elements per chunk: a power of two, so the CUDA side splits a thread index with shifts.
inline constexpr int kChunkLog2 = 14;
inline constexpr std::int64_t kChunk = std::int64_t{1} << kChunkLog2;

/// A run of at most kChunk elements of one slot.
struct Chunk {
  std::int64_t begin;
  std::int64_t end;
  std::int32_t slot;
};

/// f(slots[chunk.slot], j) for one thread index of the chunked iteration space.
template <class Slot, class F>
struct ChunkedElement {
  const Slot* slots;
  const Chunk* chunks;
  F f;
  EMBER_HD void operator()(std::int64_t i) const {
    const Chunk c = chunks[i >> kChunkLog2];
    const std::int64_t j = c.begin + (i & (kChunk - 1));
    if (j < c.end) f(slots[c.slot], j);
  }
};

/// Per slot, the sum of its chunks' partial sums, in chunk order.
template <int K>
struct FoldChunks {
  const double* partial;      // [chunks, K]
  const std::int32_t* first;  // [slots + 1]: each slot's first chunk
  double* out;                // [slots, K]
  EMBER_HD void operator()(std::int64_t s) const {
    for (int k = 0; k < K; ++k) {
      double acc = 0;
      for (std::int32_t c = first[s]; c < first[s + 1]; ++c) acc += partial[c * K + k];
      out[s * K + k] = acc;
    }
  }
};

}  // namespace detail

template <class Slot>
class MultiTensor {
  static_assert(std::is_trivially_copyable_v<Slot>,
                "ember: a multi-tensor slot is copied to the device as bytes: make it a plain "
                "struct of pointers and numbers");

 public:
  explicit MultiTensor(Device device) : device_(device) {}

  /// Appends a tensor of `numel` elements described by `slot`.
  void add(const Slot& slot, std::int64_t numel) {
    const auto index = static_cast<std::int32_t>(slots_.size());
    slots_.push_back(slot);
    for (std::int64_t b = 0; b < numel; b += detail::kChunk) {
      chunks_.push_back({b, b + std::min(detail::kChunk, numel - b), index});
    }
    first_.push_back(static_cast<std::int32_t>(chunks_.size()));  // the next slot's first chunk
    uploaded_ = false;
  }

  std::int64_t size() const { return static_cast<std::int64_t>(slots_.size()); }
  bool empty() const { return slots_.empty(); }
  Device device() const { return device_; }
  const std::vector<Slot>& slots() const { return slots_; }

  /// f(slot, j) for every element j of every slot: one pass.
  template <class F, class Mode = exec::mode>
  void for_each_element(const F& f) {
    if (chunks_.empty()) return;
    exec::launch(ElementPass<F>{*this, f}, device_);
  }

  /// Per slot, the K sums of f(slot, j) over its elements (f returns std::array<double, K>), as
  /// a [slots, K] tensor on the table's device. Two launches: chunk partials, then the fold.
  template <int K, class F, class Mode = exec::mode>
  Tensor<double> sums(const F& f) {
    Tensor<double> out = ember::empty<double>(Shape{size(), K}, device_);
    if (slots_.empty()) return out;
    exec::launch(SumsPass<K, F>{*this, f, out.data()}, device_);
    return out;
  }

 private:
  // for_each_element's work for exec::launch: a chunk per OpenMP iteration on the CPU, a CUDA
  // thread per element.
  template <class F, class Mode = exec::mode>
  struct ElementPass {
    MultiTensor& table;
    const F& f;

    void on_host() const {
      exec::count_launch();
      const auto n = static_cast<std::int64_t>(table.chunks_.size());
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
      for (std::int64_t c = 0; c < n; ++c) {
        const detail::Chunk chunk = table.chunks_[c];
        const Slot slot = table.slots_[chunk.slot];
        // f(slot, j) touches element j alone (the contract above), so the chunk is one vector
        // loop; without the pragma GCC kept SGD's update scalar (docs/benchmarks.md, "The small
        // ResNet's own passes").
#pragma omp simd
        for (std::int64_t j = chunk.begin; j < chunk.end; ++j) f(slot, j);
      }
    }
#if defined(EMBER_CUDA_KERNELS)
    void on_cuda(int device) const {
      table.upload();
      const auto n = static_cast<std::int64_t>(table.chunks_.size()) << detail::kChunkLog2;
      exec::gpu::launch_for_each(
          detail::ChunkedElement<Slot, F>{table.device_slots(), table.device_chunks(), f}, n,
          device);
    }
#endif
  };

  // sums' work for exec::launch: each chunk's partial sums (an OpenMP iteration or a CUDA block
  // per chunk), then per slot their sum in chunk order.
  template <int K, class F, class Mode = exec::mode>
  struct SumsPass {
    MultiTensor& table;
    const F& f;
    double* out;  // [slots, K]

    void on_host() const {
      const auto nchunks = static_cast<std::int64_t>(table.chunks_.size());
      Tensor<double> partial = ember::empty<double>(Shape{nchunks, K}, table.device_);
      double* p = partial.data();
      exec::count_launch();
#pragma omp parallel for schedule(dynamic, 1) if (nchunks > 1)
      for (std::int64_t c = 0; c < nchunks; ++c) {
        const detail::Chunk chunk = table.chunks_[c];
        const Slot& slot = table.slots_[chunk.slot];
        // kLanes independent sums per k: one sum would be a chain of dependent double adds, as
        // slow as the adds' latency; lanes vectorise. Element j
        // always goes to lane (j - begin) % kLanes and the lanes are added in order: the result
        // depends on the chunk alone, not on threads.
        constexpr int kLanes = 8;
        std::array<std::array<double, kLanes>, K> lanes{};
        std::int64_t j = chunk.begin;
        for (; j + kLanes <= chunk.end; j += kLanes) {
          for (int l = 0; l < kLanes; ++l) {
            const std::array<double, K> v = f(slot, j + l);
            for (int k = 0; k < K; ++k) lanes[k][l] += v[k];
          }
        }
        for (int l = 0; j < chunk.end; ++j, ++l) {
          const std::array<double, K> v = f(slot, j);
          for (int k = 0; k < K; ++k) lanes[k][l] += v[k];
        }
        for (int k = 0; k < K; ++k) {
          double acc = 0;
          for (int l = 0; l < kLanes; ++l) acc += lanes[k][l];
          p[c * K + k] = acc;
        }
      }
      exec::for_each_index<detail::FoldChunks<K>>({p, table.first_.data(), out}, table.size(),
                                                  nchunks / table.size() + 1, table.device_);
    }
#if defined(EMBER_CUDA_KERNELS)
    void on_cuda(int device) const {
      table.upload();
      const auto nchunks = static_cast<std::int64_t>(table.chunks_.size());
      Tensor<double> partial = ember::empty<double>(Shape{nchunks, K}, table.device_);
      gpu::launch_chunk_sums<K>(table.device_slots(), table.device_chunks(), nchunks, f,
                                partial.data(), device);
      exec::for_each_index<detail::FoldChunks<K>>({partial.data(), table.device_first(), out},
                                                  table.size(), 1, table.device_);
    }
#endif
  };

  // Device copies of the tables, one upload per change: [slots | chunks | first], each part
  // aligned to 16 bytes.
  static std::size_t align16(std::size_t n) { return (n + 15) / 16 * 16; }
  std::size_t chunks_at() const { return align16(slots_.size() * sizeof(Slot)); }
  std::size_t first_at() const {
    return chunks_at() + align16(chunks_.size() * sizeof(detail::Chunk));
  }
  void upload() {
    if (uploaded_) return;
    std::vector<std::uint8_t> bytes(first_at() + first_.size() * sizeof(std::int32_t));
    std::memcpy(bytes.data(), slots_.data(), slots_.size() * sizeof(Slot));
    std::memcpy(bytes.data() + chunks_at(), chunks_.data(), chunks_.size() * sizeof(detail::Chunk));
    std::memcpy(bytes.data() + first_at(), first_.data(), first_.size() * sizeof(std::int32_t));
    table_ =
        from_vector<std::uint8_t>(bytes, Shape{static_cast<std::int64_t>(bytes.size())}, device_);
    uploaded_ = true;
  }
  const Slot* device_slots() const { return reinterpret_cast<const Slot*>(table_.data()); }
  const detail::Chunk* device_chunks() const {
    return reinterpret_cast<const detail::Chunk*>(table_.data() + chunks_at());
  }
  const std::int32_t* device_first() const {
    return reinterpret_cast<const std::int32_t*>(table_.data() + first_at());
  }

  Device device_;
  std::vector<Slot> slots_;
  std::vector<detail::Chunk> chunks_;
  // [slots + 1]: slot s's chunks are [first_[s], first_[s + 1]).
  std::vector<std::int32_t> first_{0};
  Tensor<std::uint8_t> table_;  // the device copy
  bool uploaded_ = false;
};

}  // namespace ember::optim
