// The CPU matrix product C = alpha A B + beta C on strided float/double matrices: for float,
// oneMKL or oneDNN's matmul (ops/matmul/gemm_dnnl.hpp), whichever measured faster for the shape
// (mkl_takes), where the build has them and the call is not inside an OpenMP region; else the
// BLAS (ops/matmul/cblas.hpp: oneMKL or OpenBLAS) when ember was configured with one, else a
// blocked OpenMP kernel. bf16: oneDNN's bf16 matmul (float accumulation, C rounded once) where the
// CPU has AVX512-BF16, else the float product of widened copies.
//
// EMBER_CPU_GEMM overrides the choice, for tests and measurements: `blas` runs every product on
// the BLAS (oneDNN none), `onednn` every product oneDNN takes on oneDNN (oneMKL none).
//
// Matrices are row-major views with arbitrary strides: element (i, j) of M is
// M.data[i * M.rs + j * M.cs]. CBLAS takes a matrix with a unit stride along either axis (a
// transposed view is a "T" operand, no copy); anything else is packed first.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../core/bf16.hpp"
#include "../../core/cpu_features.hpp"
#include "../../core/error.hpp"
#include "../../exec/launch_counter.hpp"
#include "cblas.hpp"
#include "matrix_view.hpp"
#if defined(EMBER_WITH_DNNL)
#include "gemm_dnnl.hpp"
#endif
#if defined(EMBER_OPENMP)
#include <omp.h>
#endif

namespace ember::ops {

namespace cpu {

/// How CBLAS can read a matrix without a copy: transposed or not, and its leading dimension.
struct BlasOperand {
  bool ok = false;
  bool trans = false;
  std::int64_t ld = 0;
};
template <class T>
BlasOperand blas_operand(const MatrixView<T>& m) {
  // Strides along extents of 1 are irrelevant: pick the ones CBLAS accepts.
  const std::int64_t rs = m.rows == 1 ? std::max<std::int64_t>(m.cols, 1) : m.rs;
  const std::int64_t cs = m.cols == 1 ? 1 : m.cs;
  if (cs == 1 && rs >= std::max<std::int64_t>(m.cols, 1)) return {true, false, rs};
  const std::int64_t cs_t = m.cols == 1 ? std::max<std::int64_t>(m.rows, 1) : m.cs;
  const std::int64_t rs_t = m.rows == 1 ? 1 : m.rs;
  if (rs_t == 1 && cs_t >= std::max<std::int64_t>(m.rows, 1)) return {true, true, cs_t};
  return {};
}

/// A dense row-major copy of m (for operands CBLAS cannot read in place), converted to Out (a
/// bf16 matrix widened to float, say).
template <class T, class Out = T>
std::vector<Out> pack(const MatrixView<const T>& m) {
  std::vector<Out> out(static_cast<std::size_t>(m.rows * m.cols));
  for (std::int64_t i = 0; i < m.rows; ++i) {
    for (std::int64_t j = 0; j < m.cols; ++j)
      out[static_cast<std::size_t>(i * m.cols + j)] = static_cast<Out>(m(i, j));
  }
  return out;
}

/// ember's own kernel: C = alpha A B + beta C, parallel over blocks of rows of C, blocked over
/// K and N so a panel of B stays in cache; the innermost loop runs along a row of C and B.
template <class T>
void gemm_blocked(MatrixView<const T> A, MatrixView<const T> B, MatrixView<T> C, T alpha, T beta) {
  const std::int64_t M = C.rows, N = C.cols, K = A.cols;
  // B densely packed, so the inner loop reads it with unit stride.
  std::vector<T> bp;
  const T* b = B.data;
  std::int64_t ldb = B.rs;
  if (B.cs != 1 && N > 1) {
    bp = pack(B);
    b = bp.data();
    ldb = N;
  }
  constexpr std::int64_t kRows = 16, kK = 256, kN = 512;
#pragma omp parallel for schedule(dynamic) if (M * N * K >= (1 << 16))
  for (std::int64_t i0 = 0; i0 < M; i0 += kRows) {
    const std::int64_t i1 = std::min(M, i0 + kRows);
    std::vector<T> acc(static_cast<std::size_t>(kRows * std::min(N, kN)));
    for (std::int64_t j0 = 0; j0 < N; j0 += kN) {
      const std::int64_t j1 = std::min(N, j0 + kN), nj = j1 - j0;
      std::fill(acc.begin(), acc.end(), T(0));
      for (std::int64_t k0 = 0; k0 < K; k0 += kK) {
        const std::int64_t k1 = std::min(K, k0 + kK);
        for (std::int64_t i = i0; i < i1; ++i) {
          T* row = acc.data() + (i - i0) * nj;
          for (std::int64_t k = k0; k < k1; ++k) {
            const T a = A(i, k);
            const T* brow = b + k * ldb + j0;
            for (std::int64_t j = 0; j < nj; ++j) row[j] += a * brow[j];
          }
        }
      }
      for (std::int64_t i = i0; i < i1; ++i) {
        const T* row = acc.data() + (i - i0) * nj;
        for (std::int64_t j = 0; j < nj; ++j) {
          T& c = C(i, j0 + j);
          c = beta == T(0) ? alpha * row[j] : alpha * row[j] + beta * c;  // beta 0: C may be junk
        }
      }
    }
  }
}

/// Whether gemm<bf16> multiplies bf16 natively here (oneDNN on a CPU with AVX512-BF16); where it
/// does not, its callers do better to widen whole tensors to float once.
inline bool native_bf16_gemm() {
#if defined(EMBER_WITH_DNNL)
  return cpu_has_avx512_bf16() && onednn::gemm_enabled();
#else
  return false;
#endif
}

template <class T>
void gemm(MatrixView<const T> A, MatrixView<const T> B, MatrixView<T> C, T alpha, T beta);

/// bf16 C = alpha A B + beta C through float copies, rounded once: where oneDNN has no bf16
/// kernel for these strides.
inline void gemm_widened(const MatrixView<const bf16>& A, const MatrixView<const bf16>& B,
                         const MatrixView<bf16>& C, float alpha, float beta) {
  const std::int64_t M = C.rows, N = C.cols, K = A.cols;
  std::vector<float> a = pack<bf16, float>(A), b = pack<bf16, float>(B), c;
  if (beta != 0.0f)
    c = pack<bf16, float>(MatrixView<const bf16>{C.data, M, N, C.rs, C.cs});
  else
    c.resize(static_cast<std::size_t>(M * N));
  gemm<float>({a.data(), M, K, K, 1}, {b.data(), K, N, N, 1}, {c.data(), M, N, N, 1}, alpha, beta);
  for (std::int64_t i = 0; i < M; ++i) {
    for (std::int64_t j = 0; j < N; ++j) C(i, j) = bf16(c[static_cast<std::size_t>(i * N + j)]);
  }
}

/// bf16 C = alpha A B + beta C (non-empty): oneDNN's bf16 matmul where the CPU has it, else
/// through float copies.
inline void gemm_bf16(const MatrixView<const bf16>& A, const MatrixView<const bf16>& B,
                      const MatrixView<bf16>& C, float alpha, float beta) {
#if defined(EMBER_WITH_DNNL)
  if (native_bf16_gemm() && onednn::gemm<bf16>(A, B, C, alpha, beta)) return;
#endif
  gemm_widened(A, B, C, alpha, beta);
}

/// Whether oneMKL rather than oneDNN runs a float product C[M, N] = A[M, K] B[K, N] (both in the
/// build; B read transposed or not), by the two measured side by side (bench/bench_gemm_cpu.cpp;
/// the shapes and ratios in docs/benchmarks.md, "The CPU matrix product"). On Intel's CPUs MKL
/// is the faster on every shape class but two, which oneDNN keeps: tall, narrow outputs, and a
/// transposed B wider than 8,192 columns (GPT-2's LM head). On other vendors' CPUs oneDNN is the
/// faster but for a very long K (the LM head's input gradient), so MKL takes only K > 16,384.
/// False without MKL or with EMBER_CPU_GEMM=onednn.
inline bool mkl_takes([[maybe_unused]] std::int64_t M, [[maybe_unused]] std::int64_t N,
                      [[maybe_unused]] std::int64_t K, [[maybe_unused]] bool b_transposed) {
#if defined(EMBER_WITH_MKL)
  static const bool allowed = [] {
    const char* env = std::getenv("EMBER_CPU_GEMM");
    return !(env && std::strcmp(env, "onednn") == 0);
  }();
  if (!allowed) return false;
  if (!cpu_is_intel()) return K > 16384;
  const bool tall_and_narrow = M >= 512 && N < 384;
  return !tall_and_narrow && !(b_transposed && N > 8192);
#else
  return false;
#endif
}

namespace detail {
inline std::atomic<std::uint64_t>& blas_gemm_call_counter() {
  static std::atomic<std::uint64_t> counter{0};
  return counter;
}
}  // namespace detail

/// Matrix products run on the BLAS since the program started (tests prove which path ran).
inline std::uint64_t blas_gemm_calls() { return detail::blas_gemm_call_counter().load(); }

/// Float or double C = alpha A B + beta C (non-empty): oneMKL, oneDNN, another BLAS or ember's
/// kernel (see the top of this header).
template <class T>
void gemm_float_or_double(MatrixView<const T> A, MatrixView<const T> B, MatrixView<T> C, T alpha,
                          T beta) {
  [[maybe_unused]] const std::int64_t M = C.rows, N = C.cols, K = A.cols;
  [[maybe_unused]] BlasOperand a = blas_operand(A), b = blas_operand(B);
#if defined(EMBER_WITH_DNNL)
  if constexpr (std::is_same_v<T, float>) {
    // Inside an OpenMP region (a product per image of a batch) the BLAS runs in the calling
    // thread; oneDNN would run serially there too, with a primitive per call site's shape.
    bool in_parallel = false;
#if defined(EMBER_OPENMP)
    in_parallel = omp_in_parallel() != 0;
#endif
    if (!in_parallel && onednn::gemm_enabled() && M * N * K >= (1 << 15) &&
        !mkl_takes(M, N, K, b.ok && b.trans) && onednn::gemm(A, B, C, alpha, beta)) {
      return;
    }
  }
#endif
#if defined(EMBER_WITH_BLAS)
  detail::blas_gemm_call_counter().fetch_add(1, std::memory_order_relaxed);
  std::vector<T> ap, bp;
  if (!a.ok) {
    ap = pack(A);
    A = {ap.data(), M, K, K, 1};
    a = {true, false, std::max<std::int64_t>(K, 1)};
  }
  if (!b.ok) {
    bp = pack(B);
    B = {bp.data(), K, N, N, 1};
    b = {true, false, std::max<std::int64_t>(N, 1)};
  }
  EMBER_CHECK(C.cs == 1 || N == 1, "ember: internal: gemm output needs unit column stride");
  const std::int64_t ldc = M == 1 ? std::max<std::int64_t>(N, 1) : C.rs;
  const auto ta = a.trans ? CblasTrans : CblasNoTrans;
  const auto tb = b.trans ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(M), static_cast<int>(N),
                static_cast<int>(K), alpha, A.data, static_cast<int>(a.ld), B.data,
                static_cast<int>(b.ld), beta, C.data, static_cast<int>(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, static_cast<int>(M), static_cast<int>(N),
                static_cast<int>(K), alpha, A.data, static_cast<int>(a.ld), B.data,
                static_cast<int>(b.ld), beta, C.data, static_cast<int>(ldc));
  }
#else
  gemm_blocked(A, B, C, alpha, beta);
#endif
}

/// Every product of a batch (A's and B's batch extents broadcast to C's) as one oneDNN matmul,
/// for float, and bf16 where the CPU multiplies it natively: one primitive runs the batch on all
/// threads, where a product at a time would be too small to share. False, with nothing done,
/// where oneDNN is not there, not enabled, called inside an OpenMP region, or has only its
/// reference kernel for these strides: the caller then runs the products one by one.
template <class T>
bool gemm_batch([[maybe_unused]] const MatrixBatch<const T>& A,
                [[maybe_unused]] const MatrixBatch<const T>& B,
                [[maybe_unused]] const MatrixBatch<T>& C, [[maybe_unused]] T alpha,
                [[maybe_unused]] T beta) {
#if defined(EMBER_WITH_DNNL)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16>) {
    if (std::is_same_v<T, bf16> && !native_bf16_gemm()) return false;
#if defined(EMBER_OPENMP)
    if (omp_in_parallel()) return false;
#endif
    if (!onednn::gemm_enabled() || C.first.rows == 0 || C.first.cols == 0 || A.first.cols == 0) {
      return false;
    }
    for (int d = 0; d < C.batch_rank; ++d) {
      if (C.batch_sizes[d] == 0) return false;
    }
    if (!onednn::gemm<T>(A, B, C, static_cast<float>(alpha), static_cast<float>(beta))) {
      return false;
    }
    exec::count_launch();
    return true;
  }
#endif
  return false;
}

/// C = alpha A B + beta C for float, double or bf16. C must have a unit column stride.
template <class T>
void gemm(MatrixView<const T> A, MatrixView<const T> B, MatrixView<T> C, T alpha, T beta) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, bf16>,
                "ember: the CPU GEMM computes in float, double or bf16 (half goes through float)");
  EMBER_CHECK(A.rows == C.rows && B.cols == C.cols && A.cols == B.rows,
              "ember: internal: gemm shapes [", A.rows, ", ", A.cols, "] x [", B.rows, ", ", B.cols,
              "] -> [", C.rows, ", ", C.cols, "]");
  exec::count_launch();
  const std::int64_t M = C.rows, N = C.cols, K = A.cols;
  if (M == 0 || N == 0) return;
  if (K == 0) {  // an empty sum: C = beta C
    for (std::int64_t i = 0; i < M; ++i) {
      for (std::int64_t j = 0; j < N; ++j) C(i, j) = beta == T(0) ? T(0) : T(beta * C(i, j));
    }
    return;
  }
  if constexpr (std::is_same_v<T, bf16>) {
    gemm_bf16(A, B, C, alpha, beta);
  } else {
    gemm_float_or_double(A, B, C, alpha, beta);
  }
}

}  // namespace cpu
}  // namespace ember::ops
