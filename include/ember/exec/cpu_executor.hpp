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

}  // namespace ember::exec::cpu

// The definitions of the loops declared above: in every unit but ember::kernels' nvcc units,
// which link to the host units' copies (EMBER_CPU_LOOPS_ELSEWHERE: the comment on run() says why).
#if !defined(EMBER_CPU_LOOPS_ELSEWHERE)
#include "cpu_loops.hpp"
#endif
