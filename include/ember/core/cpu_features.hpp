// What the host CPU's instruction set offers, asked once (GCC's and clang's cpuid builtins).
#pragma once

namespace ember {

/// AVX512-BF16: native bf16 dot products, which oneDNN's bf16 convolutions need to run at
/// bf16 speed (elsewhere bf16 on the CPU is widened to float).
inline bool cpu_has_avx512_bf16() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

/// Whether the CPU is Intel's: oneMKL runs its fastest kernels there only
/// (ops/matmul/gemm_cpu.hpp).
inline bool cpu_is_intel() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool intel = __builtin_cpu_is("intel");
  return intel;
#else
  return false;
#endif
}

}  // namespace ember
