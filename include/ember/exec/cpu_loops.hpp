// The CPU executor's loops (cpu_executor.hpp declares their entry point, run): the dense path in
// blocks of V elements, the strided path by rows. Included by cpu_executor.hpp.
#pragma once

#include "cpu_executor.hpp"

namespace ember::exec::cpu {

/// An empty statement the loop vectorizer cannot cross. Each block is already SIMD code (its
/// fixed-length loops, straight-line after unrolling); without this GCC 12 may also vectorize
/// the loop over blocks, shuffling lanes between blocks, which is much slower than the blocks'
/// own SIMD code (docs/benchmarks.md, "Elementwise and autodiff chains against PyTorch").
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

}  // namespace ember::exec::cpu
