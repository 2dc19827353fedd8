// exec::for_each_row: f.row(r, lane, lanes, across) for every row r in [0, rows) of a row-wise
// operator (softmax, layer norm, cross-entropy), as one OpenMP pass or one CUDA launch.
//
// A row functor walks the elements its lane owns (for_lane_elements), and combines per-lane
// partial results with `across.sum(v)` and `across.max(v)`, which return the sum (maximum) over
// the row's lanes to every lane. On the CPU a row is one thread's (lane 0 of 1; nothing to
// combine); on CUDA it is one warp's (32 lanes, each owning runs of four neighbours; butterflies
// of shuffles). Each lane touches only its own elements in every sweep over the row, so a value
// a lane wrote is read back by that lane alone: no barrier is needed between sweeps. The same
// functor, written once as host+device code, runs on both devices.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../expr/math.hpp"
#include "assign.hpp"
#include "cpu_executor.hpp"
#include "emulated_lanes.hpp"
#include "launch_counter.hpp"
#if defined(EMBER_CUDA_KERNELS)
#include <cuda_runtime.h>

#include "../core/cuda.hpp"
#include "cuda_executor.cuh"
#endif

namespace ember::exec {

/// Consecutive elements a lane owns in each stretch of a row (see for_lane_elements).
inline constexpr int kRowRun = 4;

/// Calls f(j) for the elements of a row of `cols` that lane `lane` of `lanes` owns: runs of
/// kRowRun neighbours, interleaved across the lanes, so a warp's loads cover 32 * kRowRun
/// neighbouring elements and a lane's own elements come in order (a Philox block of four serves
/// a run). One lane owns the whole row, in order.
template <class F>
EMBER_HD EMBER_FORCEINLINE void for_lane_elements(std::int64_t cols, int lane, int lanes, F&& f) {
  if (lanes == 1) {
    for (std::int64_t j = 0; j < cols; ++j) f(j);
    return;
  }
  const std::int64_t step = std::int64_t{lanes} * kRowRun;
  for (std::int64_t j0 = std::int64_t{lane} * kRowRun; j0 < cols; j0 += step) {
    const std::int64_t end = j0 + kRowRun < cols ? j0 + kRowRun : cols;
    for (std::int64_t j = j0; j < end; ++j) f(j);
  }
}

/// Calls f(j) for the elements from `begin` to `cols` that lane `lane` of `lanes` owns (the
/// layout of for_lane_elements over the whole row).
template <class F>
EMBER_HD EMBER_FORCEINLINE void for_lane_elements_from(std::int64_t begin, std::int64_t cols,
                                                       int lane, int lanes, F&& f) {
  if (lanes == 1) {
    for (std::int64_t j = begin; j < cols; ++j) f(j);
    return;
  }
  const std::int64_t step = std::int64_t{lanes} * kRowRun;
  for (std::int64_t j0 = std::int64_t{lane} * kRowRun; j0 < cols; j0 += step) {
    if (j0 + kRowRun <= begin) continue;
    const std::int64_t end = j0 + kRowRun < cols ? j0 + kRowRun : cols;
    for (std::int64_t j = j0 > begin ? j0 : begin; j < end; ++j) f(j);
  }
}

/// Whether lane `lane` of `lanes` owns element j of a row (for_lane_elements' layout).
EMBER_HD EMBER_FORCEINLINE bool lane_owns(std::int64_t j, int lane, int lanes) {
  return lanes == 1 || (j / kRowRun) % lanes == lane;
}

/// f(std::true_type{}) when `flag`, else f(std::false_type{}): a loop-invariant choice made once,
/// outside the loop, so that each loop body is straight-line code the host compiler vectorises
/// (GCC leaves a loop with a branch inside scalar).
template <class F>
EMBER_HD EMBER_FORCEINLINE void with_flag(bool flag, F&& f) {
  if (flag) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}

/// Two partial sums of one sweep over a row (lane_sums).
template <class A>
struct RowSums {
  A a, b;
};

/// The sums over the elements lane `lane` of `lanes` owns of f(j) (a RowSums {a, b} of the
/// compute type), before `across.sum` combines the lanes. A single lane (the CPU) sums its row as
/// OpenMP SIMD reductions, with the fixed order of one build's vector code.
template <class A, class F>
EMBER_HD EMBER_FORCEINLINE void lane_sums(std::int64_t cols, int lane, int lanes, A& a, A& b,
                                          F&& f) {
  A sa = 0, sb = 0;
#if !defined(__CUDA_ARCH__)
  if (lanes == 1) {
#pragma omp simd reduction(+ : sa, sb)
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto v = f(j);
      sa += v.a;
      sb += v.b;
    }
    a = sa;
    b = sb;
    return;
  }
#endif
  for_lane_elements(cols, lane, lanes, [&](std::int64_t j) {
    const auto v = f(j);
    sa += v.a;
    sb += v.b;
  });
  a = sa;
  b = sb;
}

/// The largest f(j) over the elements lane `lane` of `lanes` owns (-inf when none; NaNs are
/// skipped: callers that must propagate NaN see it through a sum). A single lane takes it as an
/// OpenMP SIMD reduction.
template <class A, class F>
EMBER_HD EMBER_FORCEINLINE A lane_max(std::int64_t cols, int lane, int lanes, F&& f) {
  A m = -math::infinity<A>();
#if !defined(__CUDA_ARCH__)
  if (lanes == 1) {
#pragma omp simd reduction(max : m)
    for (std::int64_t j = 0; j < cols; ++j) {
      const A v = f(j);
      m = v > m ? v : m;
    }
    return m;
  }
#endif
  for_lane_elements(cols, lane, lanes, [&](std::int64_t j) {
    const A v = f(j);
    m = v > m ? v : m;
  });
  return m;
}

/// How a row's lanes combine their partial results, for one lane per row: nothing to combine.
struct SingleLane {
  template <class A>
  EMBER_HD EMBER_FORCEINLINE A sum(A v) const {
    return v;
  }
  template <class A>
  EMBER_HD EMBER_FORCEINLINE A max(A v) const {
    return v;
  }
};

#if defined(EMBER_CUDA_KERNELS)
namespace gpu {
inline namespace EMBER_UNIT_KIND {
inline constexpr int kWarpLanes = 32;

/// How a warp's lanes combine: butterflies of shuffles, so every lane gets the same result
/// (added in the same order on every lane).
struct WarpLanes {
  template <class A>
  __device__ EMBER_FORCEINLINE A sum(A v) const {
#pragma unroll
    for (int step = kWarpLanes / 2; step > 0; step /= 2) v += __shfl_xor_sync(0xffffffffu, v, step);
    return v;
  }
  template <class A>
  __device__ EMBER_FORCEINLINE A max(A v) const {
#pragma unroll
    for (int step = kWarpLanes / 2; step > 0; step /= 2) {
      const A other = __shfl_xor_sync(0xffffffffu, v, step);
      v = other > v ? other : v;
    }
    return v;
  }
};

template <class F>
__global__ void __launch_bounds__(kBlockThreads) for_each_row_kernel(F f, std::int64_t rows) {
  constexpr int warps_per_block = kBlockThreads / kWarpLanes;
  const int lane = static_cast<int>(threadIdx.x) % kWarpLanes;
  const std::int64_t warps = std::int64_t{gridDim.x} * warps_per_block;
  // r is the same on all lanes of a warp, so the shuffles inside f.row see the whole warp.
  for (std::int64_t r = std::int64_t{blockIdx.x} * warps_per_block + threadIdx.x / kWarpLanes;
       r < rows; r += warps) {
    f.row(r, lane, kWarpLanes, WarpLanes{});
  }
}

}  // namespace EMBER_UNIT_KIND
}  // namespace gpu
#endif

inline namespace EMBER_UNIT_KIND {

/// for_each_row's work for launch(): f.row for every row in [0, rows) of `cols` elements, a
/// thread per row on the CPU, a warp per row on CUDA. One pass or one launch, counted.
template <class F>
struct RowPass {
  const F& f;
  std::int64_t rows;
  std::int64_t cols;

  void on_host() const {
    count_launch();
#if !defined(EMBER_CUDA_KERNELS)
    // Tests of the CUDA lanes' code on the CPU (exec/emulated_lanes.hpp).
    if (const int lanes = detail::emulated_row_lanes(); lanes > 1) {
      run_rows_emulated(f, rows, lanes);
      return;
    }
#endif
#pragma omp parallel for schedule(static) if (rows * cols >= cpu::kParallelThreshold)
    for (std::int64_t r = 0; r < rows; ++r) f.row(r, 0, 1, SingleLane{});
  }
#if defined(EMBER_CUDA_KERNELS)
  void on_cuda(int device) const {
    ember::cuda::DeviceGuard guard(device);
    gpu::launch_kernel("a for_each_row kernel", gpu::for_each_row_kernel<F>,
                       gpu::grid_for(rows * gpu::kWarpLanes, device), gpu::kBlockThreads, 0,
                       ember::cuda::current_stream(device), f, rows);
  }
#endif
};

/// Runs f.row(r, ...) for r in [0, rows) on `device` (see the top of this header); `cols` is the
/// row length, for the CPU's choice between one thread and the team.
template <class F>
void for_each_row(const F& f, std::int64_t rows, std::int64_t cols, Device device) {
  if (rows == 0) return;
  launch(RowPass<F>{f, rows, cols}, device);
}

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::exec
