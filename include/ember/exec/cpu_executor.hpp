// The CPU executor: one OpenMP parallel pass over the iteration space. The dense path hands
// blocks of V elements to the plan (fixed-size loops the compiler turns into SIMD); the
// strided path walks rows: a row's coordinates by one division each, then along the row without
// dividing.
#pragma once

#include <cstdint>

#include "../expr/plan.hpp"
#include "launch_counter.hpp"
#include "layout.hpp"

namespace ember::exec::cpu {

/// Below this many elements a pass runs on one thread: waking the team costs more.
inline constexpr std::int64_t kParallelThreshold = 1 << 15;

/// Bytes of the widest operand one dense block covers (V = kBlockBytes / element size): a cache
/// line, one 512-bit or two 256-bit registers per value. Measured on the 8-op float chain of
/// bench_autograd_cpu: 32-byte blocks ran its forward at half the speed of the same loop under
/// `omp simd` (which took 512-bit registers); 64-byte blocks match it.
inline constexpr int kBlockBytes = 64;

// The CPU loops' entry points, run() here and run_reduce() (reduce.hpp), are never inlined, so a
// unit that instantiates one emits it. A loop does not depend on the kind of unit (it lives
// outside the kind's namespace, core/config.hpp): its symbol is the same from g++ and nvcc, and the
// linker keeps one copy. ember::kernels compiles every operator twice, in its host units and its
// nvcc units; the nvcc units define EMBER_CPU_LOOPS_ELSEWHERE and link to the host units' loops
// instead of compiling them again (a quarter of each nvcc unit's compile time; the host units'
// loops have 512-bit vectors).
template <int V, class Plan>
EMBER_NOINLINE void run(const Plan& plan, const IterLayout& L);

#if !defined(EMBER_CPU_LOOPS_ELSEWHERE)
/// An empty statement the loop vectorizer cannot cross. Each block is already SIMD code (its
/// fixed-length loops, straight-line after unrolling); without this GCC 12 may also vectorize
/// the loop over blocks, shuffling lanes between blocks (measured: a float
/// relu(a*b + c) * 0.5 + a*c pass over 2^20 elements in 368 us against 124 us).
EMBER_FORCEINLINE void block_boundary() {
#if defined(__GNUC__)
  asm volatile("");
#endif
}

// Every CPU caller hands blocks (V > 1): with no scalar variant, each plan compiles to one
// dense loop, not two.
template <int V, class Plan>
EMBER_WIDE_VECTORS void run_dense(const Plan& plan, std::int64_t n) {
  static_assert(V > 1, "ember: the CPU's dense path hands the plan blocks of V > 1 elements");
  const std::int64_t blocks = n / V;
#pragma omp parallel for schedule(static) if (n >= kParallelThreshold)
  for (std::int64_t b = 0; b < blocks; ++b) {
    plan.template at_vec<V>(b * V);
    block_boundary();
  }
  for (std::int64_t i = blocks * V; i < n; ++i) plan.at(expr::LinearIndex{i});
}

template <int V, class Plan>
EMBER_WIDE_VECTORS void run_strided(const Plan& plan, const IterLayout& L) {
  const int nd = L.ndim();
  const std::int64_t inner = L.sizes[nd - 1];
  const std::int64_t rows = L.numel / inner;
#pragma omp parallel for schedule(static) if (L.numel >= kParallelThreshold)
  for (std::int64_t r = 0; r < rows; ++r) {
    expr::CoordIndex ix{};
    std::int64_t rem = r;
    for (int d = nd - 2; d >= 0; --d) {
      ix.c[d] = rem % L.sizes[d];
      rem /= L.sizes[d];
    }
    std::int64_t j = 0;
    if constexpr (V > 1 && requires { plan.template at_vec<V>(expr::RowBlock{}); }) {
      for (; j + V <= inner; j += V) {
        ix.c[nd - 1] = j;
        plan.template at_vec<V>(expr::RowBlock{ix});
        block_boundary();
      }
    }
    for (; j < inner; ++j) {
      ix.c[nd - 1] = j;
      plan.at(ix);
    }
  }
}

/// Runs an AssignPlan over layout L: one pass, counted as one launch.
template <int V, class Plan>
EMBER_NOINLINE void run(const Plan& plan, const IterLayout& L) {
  if (L.numel == 0) return;
  count_launch();
  if (L.dense) {
    run_dense<V>(plan, L.numel);
  } else {
    run_strided<V>(plan, L);
  }
}

#endif  // !EMBER_CPU_LOOPS_ELSEWHERE

}  // namespace ember::exec::cpu
