// The CUDA reduction executor: the same reducers and plans as the CPU. Two kernels:
//   rows     one block (or several, for long rows) per output; threads stride the reduced
//            range and a tree in shared memory combines them; split rows finish in the last
//            block to arrive, so a reduction is always one launch and the combine order is fixed;
//   columns  one thread per output when the outputs are adjacent in memory and the reduced
//            dimensions are outer (sum over the batch), so neighbouring threads read
//            neighbouring elements.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../memory/storage.hpp"
#include "cuda_executor.cuh"
#include "fastdiv.hpp"
#include "reduce_layout.hpp"

namespace ember::exec::gpu {

struct ReduceGeometry {
  std::int64_t sizes[kMaxRank] = {};
  int kept = 0;
  int ndim = 0;
  std::int64_t reduced = 1;
  std::int64_t outputs = 1;
  std::int64_t chunk = 0;   // reduced elements per block
  int splits = 1;           // blocks per output
  bool dense_rows = false;  // element (o, r) at linear index o * reduced + r for every leaf

  // Coordinates of output o in the kept dimensions (once per output).
  EMBER_HD EMBER_FORCEINLINE void output_coords(std::int64_t o, expr::CoordIndex& ix) const {
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < kept) {
        ix.c[d] = o % sizes[d];
        o /= sizes[d];
      }
    }
  }
  // Coordinates of reduced element r; a single reduced dimension needs no division.
  EMBER_HD EMBER_FORCEINLINE void reduced_coords(std::int64_t r, expr::CoordIndex& ix) const {
    if (ndim - kept == 1) {
      ix.c[kept] = r;
      return;
    }
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= kept && d < ndim) {
        ix.c[d] = r % sizes[d];
        r /= sizes[d];
      }
    }
  }
  template <class Plan>
  EMBER_HD EMBER_FORCEINLINE auto value(const Plan& plan, std::int64_t o, std::int64_t r,
                                        expr::CoordIndex& ix) const {
    if (dense_rows) return plan.at(expr::LinearIndex{o * reduced + r});
    reduced_coords(r, ix);
    return plan.at(ix);
  }
};

/// The block's states combined into slots[0] by a tree (pairs at distance 128, 64, ..., 1: the
/// same order every time), for any state type; kBlockThreads is a power of 2. `slots` is shared
/// memory of kBlockThreads states; it may be reused after the next __syncthreads.
template <class Red>
__device__ EMBER_FORCEINLINE typename Red::state block_combine(const Red& red,
                                                               typename Red::state s,
                                                               typename Red::state* slots) {
  const unsigned t = threadIdx.x;
  slots[t] = s;
  __syncthreads();
  for (unsigned width = kBlockThreads / 2; width > 0; width /= 2) {
    if (t < width) slots[t] = red.combine(slots[t], slots[t + width]);
    __syncthreads();
  }
  return slots[0];
}

/// A split row's partial state, kept in device memory as 4-byte words and read past the caches
/// (another block wrote it, before a __threadfence). Only words ever touch that memory, written
/// and read through `volatile unsigned`: a State stored as itself and read back as words would
/// break C++'s aliasing rule, and a compiler may then drop the store (g++ -O3 did, under the
/// emulated device).
template <class S>
struct PartialWords {
  static_assert(sizeof(S) % sizeof(unsigned) == 0, "a reduction state is whole 4-byte words");
  static constexpr std::size_t kWords = sizeof(S) / sizeof(unsigned);
  unsigned* words;  // kWords per state

  __device__ EMBER_FORCEINLINE void store(std::int64_t i, const S& s) const {
    unsigned w[kWords];
    std::memcpy(w, &s, sizeof(S));
    volatile unsigned* to = words + i * kWords;
    for (std::size_t k = 0; k < kWords; ++k) to[k] = w[k];
  }
  __device__ EMBER_FORCEINLINE S load(std::int64_t i) const {
    unsigned w[kWords];
    const volatile unsigned* from = words + i * kWords;
    for (std::size_t k = 0; k < kWords; ++k) w[k] = from[k];
    S s{};
    std::memcpy(&s, w, sizeof(S));
    return s;
  }
};

template <class R, class Red, class Plan>
__global__ void __launch_bounds__(kBlockThreads)
    reduce_rows_kernel(Red red, Plan plan, ReduceGeometry g, R* out,
                       PartialWords<typename Red::state> partial, unsigned* arrivals) {
  using State = typename Red::state;
  using A = typename Plan::acc_type;
  // Raw bytes: shared memory cannot hold a type with a constructor.
  struct alignas(State) SlotBytes {
    unsigned char bytes[sizeof(State) * kBlockThreads];
  };
  __shared__ SlotBytes slot_bytes;
  State* slots = reinterpret_cast<State*>(slot_bytes.bytes);
  __shared__ bool last;

  for (std::int64_t b = blockIdx.x; b < g.outputs * g.splits; b += gridDim.x) {
    const std::int64_t o = b / g.splits;
    const int split = static_cast<int>(b % g.splits);
    const std::int64_t begin = split * g.chunk;
    const std::int64_t end = begin + g.chunk < g.reduced ? begin + g.chunk : g.reduced;
    State s = red.init();
    expr::CoordIndex ix;
    g.output_coords(o, ix);
    for (std::int64_t r = begin + threadIdx.x; r < end; r += blockDim.x) {
      s = red.step(s, static_cast<A>(g.value(plan, o, r, ix)), r);
    }
    s = block_combine(red, s, slots);
    if (g.splits == 1) {
      if (threadIdx.x == 0) out[o] = to_storage<R>(red.finish(s, g.reduced));
      __syncthreads();  // the slots are reused by the next output
      continue;
    }
    if (threadIdx.x == 0) {
      partial.store(o * g.splits + split, s);
      __threadfence();
      last = atomicAdd(&arrivals[o], 1u) == static_cast<unsigned>(g.splits - 1);
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
      __threadfence();
      // Combine the partials in split order: the answer does not depend on arrival order.
      State t = red.init();
      for (int k = 0; k < g.splits; ++k) {
        t = red.combine(t, partial.load(o * g.splits + k));
      }
      out[o] = to_storage<R>(red.finish(t, g.reduced));
      arrivals[o] = 0;
    }
    __syncthreads();
  }
}

template <class R, class Red, class Plan>
__global__ void __launch_bounds__(kBlockThreads)
    reduce_columns_kernel(Red red, Plan plan, ReduceGeometry g, R* out) {
  using A = typename Plan::acc_type;
  const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
  for (std::int64_t o = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; o < g.outputs;
       o += stride) {
    typename Red::state s = red.init();
    expr::CoordIndex ix;
    g.output_coords(o, ix);
    for (std::int64_t r = 0; r < g.reduced; ++r) {
      s = red.step(s, static_cast<A>(g.value(plan, o, r, ix)), r);
    }
    out[o] = to_storage<R>(red.finish(s, g.reduced));
  }
}

template <class R, class Red, class Plan>
void run_reduce(const Red& red, const Plan& plan, const ReduceLayout& L, R* out, int device) {
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  ReduceGeometry g;
  g.kept = L.kept;
  g.ndim = L.ndim();
  for (int d = 0; d < L.ndim(); ++d) g.sizes[d] = L.sizes[d];
  g.reduced = L.reduced;
  g.outputs = L.outputs;
  g.dense_rows = L.dense_rows;

  const std::int64_t threads_available = std::int64_t{sm_count(device)} * 2048;
  const bool outputs_adjacent = L.kept > 0 && !L.arrays.empty() && L.arrays[0][L.kept - 1] == 1;
  if (outputs_adjacent && L.reduced > 1 && L.outputs >= threads_available / 4) {
    const unsigned grid = grid_for(L.outputs, device);
    launch_kernel("a column reduction kernel", reduce_columns_kernel<R, Red, Plan>, grid,
                  kBlockThreads, 0, stream, red, plan, g, out);
    return;
  }

  // Split long rows so the device has at least ~4 blocks per SM to work on.
  const std::int64_t want_blocks = std::int64_t{sm_count(device)} * 4;
  std::int64_t splits = 1;
  if (L.outputs < want_blocks) {
    splits = std::min<std::int64_t>((want_blocks + L.outputs - 1) / L.outputs,
                                    (L.reduced + 4 * kBlockThreads - 1) / (4 * kBlockThreads));
    splits = std::max<std::int64_t>(splits, 1);
  }
  g.splits = static_cast<int>(splits);
  g.chunk = (L.reduced + splits - 1) / splits;

  std::shared_ptr<Storage> scratch;
  PartialWords<typename Red::state> partial{nullptr};
  unsigned* arrivals = nullptr;
  if (splits > 1) {
    const std::size_t partial_bytes =
        static_cast<std::size_t>(L.outputs * splits) * sizeof(typename Red::state);
    const std::size_t arrival_offset = (partial_bytes + 15) / 16 * 16;
    const std::size_t bytes =
        arrival_offset + static_cast<std::size_t>(L.outputs) * sizeof(unsigned);
    scratch = Storage::allocate(Device::cuda(device), bytes);
    partial.words = static_cast<unsigned*>(scratch->data());
    arrivals = reinterpret_cast<unsigned*>(static_cast<char*>(scratch->data()) + arrival_offset);
    cuda::check(cudaMemsetAsync(arrivals, 0, static_cast<std::size_t>(L.outputs) * sizeof(unsigned),
                                stream),
                "cudaMemsetAsync");
  }
  const std::int64_t blocks =
      std::min<std::int64_t>(L.outputs * splits, std::int64_t{sm_count(device)} * 32);
  launch_kernel("a row reduction kernel", reduce_rows_kernel<R, Red, Plan>,
                static_cast<unsigned>(blocks), kBlockThreads, 0, stream, red, plan, g, out, partial,
                arrivals);
  // `scratch` is released on the same stream, after the kernel, by the stream-ordered pool.
}

}  // namespace ember::exec::gpu
