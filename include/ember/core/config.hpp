// Build configuration: which CUDA pieces this translation unit can use.
//
//   EMBER_WITH_CUDA     the CUDA runtime is linked (set by CMake when EMBER_CUDA is on):
//                       device memory, copies and streams work from any translation unit.
//   EMBER_CUDA_KERNELS  this translation unit is compiled by nvcc (or for the emulated
//                       device): expressions can be evaluated on a CUDA device. A .cpp file
//                       compiled by the host compiler gets a clear ember::Error instead.
//   EMBER_CUDA_EMULATION  set by CMake's option of that name: the CUDA runtime is ember's
//                       emulated device, which runs CUDA code on the CPU with CUDA's semantics
//                       (emulated_cuda/, docs/emulated-cuda.md). Its .cu files, compiled by the
//                       host compiler, also get EMBER_CUDA_UNIT (nvcc's __CUDACC__ there), and
//                       with it EMBER_CUDA_KERNELS.
//   EMBER_CPU_LOOPS_ELSEWHERE  defined only by ember::kernels' nvcc units (src/kernels/*.cu):
//                       the CPU loops (exec::cpu::run and run_reduce) are declared, and
//                       their definitions (exec/cpu_loops.hpp, exec/reduce_loops.hpp) not
//                       included; the library's host units, which instantiate the same
//                       operators, emit every one of them (exec/cpu_executor.hpp says why).
//   EMBER_IO_COMPILED   defined by CMake for targets that link ember::kernels built with
//                       nlohmann/json: the safetensors reader and writer and the metrics
//                       logs' writers are compiled in it (src/kernels/io.cpp), and
//                       io/safetensors.hpp and io/metrics_log.hpp only declare them.
#pragma once

#if defined(__CUDACC__)
#define EMBER_HD __host__ __device__
#define EMBER_DEVICE __device__
#define EMBER_CUDA_KERNELS 1
#ifndef EMBER_WITH_CUDA
#define EMBER_WITH_CUDA 1
#endif
#else
#define EMBER_HD
#define EMBER_DEVICE
// A .cu file compiled by the host compiler for the emulated device (emulated_cuda/): its kernels
// are host functions, run by the emulation.
#if defined(EMBER_CUDA_EMULATION) && defined(EMBER_CUDA_UNIT)
#define EMBER_CUDA_KERNELS 1
#endif
#endif

#if defined(__CUDA_ARCH__)
#define EMBER_DEVICE_CODE 1
#endif

#if defined(_MSC_VER)
#define EMBER_FORCEINLINE __forceinline
#define EMBER_NOINLINE __declspec(noinline)
#else
#define EMBER_FORCEINLINE inline __attribute__((always_inline))
#define EMBER_NOINLINE __attribute__((noinline))
#endif

#if defined(_OPENMP)
#define EMBER_OPENMP 1
#endif

// How ember's compiled-once io functions are declared and defined: inline in header-only use,
// as ordinary functions where ember::kernels holds them (EMBER_IO_COMPILED).
#if defined(EMBER_IO_COMPILED)
#define EMBER_IO_INLINE
#else
#define EMBER_IO_INLINE inline
#endif

// The CPU loops' blocks are 64 bytes (exec/cpu_executor.hpp). Where AVX-512 is enabled, GCC's
// tuning for Intel's server cores (-march=icelake-server, sapphirerapids...) still prefers 256-bit
// vectors, and its cost model then left bf16 conversions scalar: the fused bf16 backward ran 3x
// slower than with 512-bit vectors (docs/benchmarks.md). Loops marked EMBER_WIDE_VECTORS ask for
// the full width; elsewhere the mark is empty.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && defined(__AVX512F__) && \
    defined(__x86_64__)
#define EMBER_WIDE_VECTORS __attribute__((target("prefer-vector-width=512")))
#else
#define EMBER_WIDE_VECTORS
#endif

// The two kinds of translation unit. One program may hold both: nvcc's units, which can launch
// CUDA kernels, and the host compiler's, which cannot. A function that evaluates expressions is
// compiled differently in each, so it must never be one symbol to the linker. The rule, stated
// once (docs/design.md, "One source, two kinds of translation unit"):
//   - every function of ember's that evaluates lives in an inline namespace named after the kind,
//     innermost: `namespace ember::ops::inline EMBER_UNIT_KIND { ... }`. Callers never name it;
//     `ember::ops::conv2d` is, in each unit, its own kind's copy;
//   - the types a user's code shares between kinds (Tensor, Var, modules, optimizers, options)
//     live outside it; their member templates that evaluate take `class Mode = exec::mode`
//     (below), which puts the kind into the member's symbol instead.
// tests/two_kinds checks both, and scripts/check_unit_kinds.py (ctest check_unit_kinds) fails
// where a function outside the namespace calls into it (a forgotten rule the linker would merge).
#if defined(EMBER_CUDA_KERNELS)
#define EMBER_UNIT_KIND cuda_units
#else
#define EMBER_UNIT_KIND host_units
#endif

namespace ember {
/// Highest tensor rank ember supports.
inline constexpr int kMaxRank = 8;
}  // namespace ember

namespace ember::exec {
inline namespace EMBER_UNIT_KIND {
/// The kind of translation unit as a type, for the member templates of shared types that
/// evaluate (`template <class Mode = exec::mode>`): an nvcc and a host-compiler instantiation of
/// such a member get different symbols and never replace each other at link time.
struct mode {};
}  // namespace EMBER_UNIT_KIND
}  // namespace ember::exec
