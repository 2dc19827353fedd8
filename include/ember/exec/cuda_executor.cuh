// The CUDA executor: grid-stride kernels over the same plans the CPU runs. The dense path
// moves 16 bytes per operand per access; the strided path turns the linear index into
// coordinates with precomputed fast division. Every launch is checked and counted.
// Included only in translation units compiled by nvcc.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>

#include "../core/cuda.hpp"
#include "../expr/plan.hpp"
#include "fastdiv.hpp"
#include "kernel_launch.cuh"
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

/// Coordinates of a linear index in the iteration space: by fast 32-bit division when the
/// space has fewer than 2^31 elements, by 64-bit division otherwise. Both in one map (a
/// warp-uniform branch) so that each plan compiles to one strided kernel, not one per width.
struct CoordMap {
  FastDivmod div[kMaxRank];
  std::int64_t size[kMaxRank] = {};
  int ndim = 0;
  bool wide = false;

  explicit CoordMap(const IterLayout& L)
      : ndim(L.ndim()), wide(L.numel >= (std::int64_t{1} << 31)) {
    for (int d = 0; d < ndim; ++d) {
      size[d] = L.sizes[d];
      if (!wide) div[d] = FastDivmod(static_cast<std::uint32_t>(L.sizes[d]));
    }
  }

  EMBER_HD EMBER_FORCEINLINE void coords(std::int64_t index, expr::CoordIndex& ix) const {
    if (!wide) {
      auto i = static_cast<std::uint32_t>(index);
#pragma unroll
      for (int d = kMaxRank - 1; d >= 0; --d) {
        if (d < ndim) {
          std::uint32_t q, r;
          div[d].divmod(i, q, r);
          ix.c[d] = r;
          i = q;
        }
      }
    } else {
#pragma unroll
      for (int d = kMaxRank - 1; d >= 0; --d) {
        if (d < ndim) {
          ix.c[d] = index % size[d];
          index /= size[d];
        }
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

template <class Plan>
__global__ void __launch_bounds__(kBlockThreads)
    strided_kernel(Plan plan, CoordMap map, std::int64_t n) {
  const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    expr::CoordIndex ix;
    map.coords(i, ix);
    plan.at(ix);
  }
}

/// Runs an AssignPlan over layout L on CUDA device `device`, on ember's current stream. A dense
/// layout whose pointers are not aligned for V-element packs takes the strided kernel (one
/// dimension, unit strides) rather than a scalar copy of the dense one: each plan compiles to
/// two kernels (docs/benchmarks.md, build time).
template <int V, class Plan>
void run(const Plan& plan, const IterLayout& L, bool vectorize, int device) {
  if (L.numel == 0) return;
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  if (L.dense && (vectorize || V == 1)) {
    launch_kernel("an elementwise kernel (dense)", dense_kernel<V, Plan>,
                  grid_for((L.numel + V - 1) / V, device), kBlockThreads, 0, stream, plan, L.numel);
  } else {
    launch_kernel("an elementwise kernel (strided)", strided_kernel<Plan>,
                  grid_for(L.numel, device), kBlockThreads, 0, stream, plan, CoordMap(L), L.numel);
  }
}

}  // namespace ember::exec::gpu
