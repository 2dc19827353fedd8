// The CUDA executor: grid-stride kernels over the same plans the CPU runs. The dense path
// moves 16 bytes per operand per access; the strided path turns the linear index into
// coordinates with precomputed fast division. Every launch is checked and counted.
// Included only in translation units compiled by nvcc.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>

#include "../core/cuda.hpp"
#include "../expr/plan.hpp"
#include "fastdiv.hpp"
#include "launch_counter.hpp"
#include "layout.hpp"

namespace ember::exec::gpu {

inline constexpr int kBlockThreads = 256;

/// Streaming multiprocessors of device `index` (cached).
inline int sm_count(int index) {
  static std::array<int, 64> counts{};
  static std::array<std::once_flag, 64> once;
  std::call_once(once[static_cast<std::size_t>(index)], [index] {
    cuda::check(cudaDeviceGetAttribute(&counts[static_cast<std::size_t>(index)],
                                       cudaDevAttrMultiProcessorCount, index),
                "cudaDeviceGetAttribute");
  });
  return counts[static_cast<std::size_t>(index)];
}

/// Enough blocks to fill the device several times over, no more: threads loop (grid-stride).
inline unsigned grid_for(std::int64_t work_items, int device) {
  const std::int64_t want = (work_items + kBlockThreads - 1) / kBlockThreads;
  const std::int64_t cap = std::int64_t{sm_count(device)} * 32;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(want, cap)));
}

inline void check_launch(const char* what) { cuda::check(cudaGetLastError(), what); }

/// Coordinates of a linear index in the iteration space, by fast division (index < 2^31).
struct CoordMap32 {
  FastDivmod div[kMaxRank];
  int ndim = 0;
  EMBER_HD EMBER_FORCEINLINE void coords(std::uint32_t i, expr::CoordIndex& ix) const {
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < ndim) {
        std::uint32_t q, r;
        div[d].divmod(i, q, r);
        ix.c[d] = r;
        i = q;
      }
    }
  }
};

/// The same with 64-bit division, for iteration spaces of 2^31 elements or more.
struct CoordMap64 {
  std::int64_t size[kMaxRank] = {};
  int ndim = 0;
  EMBER_HD EMBER_FORCEINLINE void coords(std::int64_t i, expr::CoordIndex& ix) const {
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < ndim) {
        ix.c[d] = i % size[d];
        i /= size[d];
      }
    }
  }
};

template <int V, class Plan>
__global__ void __launch_bounds__(kBlockThreads) dense_kernel(Plan plan, std::int64_t n) {
  const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
  const std::int64_t tid = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::int64_t nvec = n / V;
  for (std::int64_t v = tid; v < nvec; v += stride) plan.template at_vec<V>(v * V);
  for (std::int64_t i = nvec * V + tid; i < n; i += stride) plan.at(expr::LinearIndex{i});
}

template <class Map, class Index, class Plan>
__global__ void __launch_bounds__(kBlockThreads) strided_kernel(Plan plan, Map map, Index n) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    expr::CoordIndex ix;
    map.coords(i, ix);
    plan.at(ix);
  }
}

/// Runs an AssignPlan over layout L on CUDA device `device`, on ember's current stream. A dense
/// layout whose pointers are not aligned for V-element packs takes the strided kernel (one
/// dimension, unit strides) rather than a scalar copy of the dense one: each plan then compiles
/// to three kernels, not four (train.cu: 117 fewer kernels; docs/benchmarks.md, build time).
template <int V, class Plan>
void run(const Plan& plan, const IterLayout& L, bool vectorize, int device) {
  if (L.numel == 0) return;
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  if (L.dense && (vectorize || V == 1)) {
    dense_kernel<V>
        <<<grid_for((L.numel + V - 1) / V, device), kBlockThreads, 0, stream>>>(plan, L.numel);
  } else if (L.numel < (std::int64_t{1} << 31)) {
    CoordMap32 map;
    map.ndim = L.ndim();
    for (int d = 0; d < L.ndim(); ++d)
      map.div[d] = FastDivmod(static_cast<std::uint32_t>(L.sizes[d]));
    strided_kernel<<<grid_for(L.numel, device), kBlockThreads, 0, stream>>>(
        plan, map, static_cast<std::uint32_t>(L.numel));
  } else {
    CoordMap64 map;
    map.ndim = L.ndim();
    for (int d = 0; d < L.ndim(); ++d) map.size[d] = L.sizes[d];
    strided_kernel<<<grid_for(L.numel, device), kBlockThreads, 0, stream>>>(plan, map, L.numel);
  }
  check_launch("an elementwise kernel launch");
  count_launch();
}

}  // namespace ember::exec::gpu
