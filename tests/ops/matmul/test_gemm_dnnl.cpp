// The CPU's float and bf16 matrix products on oneDNN (ops/matmul/gemm_dnnl.hpp, through
// ops/matmul/gemm_cpu.hpp's gemm): against a float64 product over plain, transposed and strided
// operands, alpha and beta, a float product too small for oneDNN, and one inside an OpenMP region
// (the BLAS's); which path ran is counted (bf16 runs on oneDNN where the CPU has AVX512-BF16, and
// widened to float elsewhere). Without oneDNN in the build there is nothing to check here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <ember/ember.hpp>

#include "support/random_tensors.hpp"

#if defined(EMBER_WITH_DNNL)
namespace {
namespace test_ops_gemm_dnnl {

using ember::bf16;
using ember::ops::MatrixView;
using ember::testing::uniform_values;

/// C = alpha A B + beta C0 in float64.
template <class T>
std::vector<double> reference(const MatrixView<const T>& A, const MatrixView<const T>& B,
                              const std::vector<T>& c0, std::int64_t ldc, float alpha, float beta) {
  std::vector<double> c(static_cast<std::size_t>(A.rows * ldc));
  for (std::int64_t i = 0; i < A.rows; ++i) {
    for (std::int64_t j = 0; j < B.cols; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < A.cols; ++k) s += double(A(i, k)) * double(B(k, j));
      const auto at = static_cast<std::size_t>(i * ldc + j);
      c[at] = alpha * s + (beta == 0 ? 0.0 : beta * double(c0[at]));
    }
  }
  return c;
}

struct Case {
  std::int64_t M, N, K;
  bool ta, tb;
  std::int64_t pad;  // extra elements per row of every operand (a strided view)
  float alpha, beta;
};

TEMPLATE_TEST_CASE("gemm on oneDNN: against float64 over layouts, alpha and beta",
                   "[ops][gemm][onednn]", float, bf16) {
  using T = TestType;
  // The product accumulates in float; a bf16 C is rounded once (half a bf16 ulp, 2^-9 relative).
  const double rel = std::is_same_v<T, float> ? 1e-5 : 1.0 / 256;
  // Every product here runs on oneDNN (unless EMBER_CPU_GEMM=blas), but for the float ones that
  // oneMKL takes where the build has it (ops::cpu::mkl_takes): a bf16 one
  // natively where the CPU has AVX512-BF16, else through dense float copies.
  const bool native_bf16 = std::is_same_v<T, bf16> && ember::ops::cpu::native_bf16_gemm();
  const std::vector<Case> cases = {
      {64, 48, 40, false, false, 0, 1, 0},       {64, 48, 40, true, false, 0, 1, 0},
      {64, 48, 40, false, true, 3, 1, 1},        {64, 48, 40, true, true, 5, 0.5f, 0},
      {33, 65, 129, false, false, 1, -2, 0.25f}, {1, 512, 64, false, true, 0, 1, 1},
      {256, 1, 256, true, false, 0, 1, 0},
  };
  std::uint32_t seed = 1;
  for (const Case& c : cases) {
    INFO("M " << c.M << " N " << c.N << " K " << c.K << " ta " << c.ta << " tb " << c.tb << " pad "
              << c.pad << " alpha " << c.alpha << " beta " << c.beta);
    // A [M, K] stored row-major, or transposed ([K, M] storage read as its transpose).
    const std::int64_t lda = (c.ta ? c.M : c.K) + c.pad, ldb = (c.tb ? c.K : c.N) + c.pad;
    const std::int64_t ldc = c.N + c.pad;
    const auto a = uniform_values<T>(static_cast<std::size_t>((c.ta ? c.K : c.M) * lda), seed++);
    const auto b = uniform_values<T>(static_cast<std::size_t>((c.tb ? c.N : c.K) * ldb), seed++);
    auto out = uniform_values<T>(static_cast<std::size_t>(c.M * ldc), seed++);
    const std::vector<T> c0 = out;
    const MatrixView<const T> A{a.data(), c.M, c.K, c.ta ? 1 : lda, c.ta ? lda : 1};
    const MatrixView<const T> B{b.data(), c.K, c.N, c.tb ? 1 : ldb, c.tb ? ldb : 1};
    const bool b_transposed = std::is_same_v<T, float> && c.tb;
    const std::uint64_t on_onednn =
        ember::ops::onednn::gemm_enabled() &&
        (native_bf16 || !ember::ops::cpu::mkl_takes(c.M, c.N, c.K, b_transposed));
    const auto before = ember::ops::onednn::gemm_calls();
    const auto before_bf16 = ember::ops::onednn::bf16_gemm_calls();
    ember::ops::cpu::gemm<T>(A, B, MatrixView<T>{out.data(), c.M, c.N, ldc, 1}, T(c.alpha),
                             T(c.beta));
    REQUIRE(ember::ops::onednn::gemm_calls() == before + on_onednn);
    REQUIRE(ember::ops::onednn::bf16_gemm_calls() == before_bf16 + (native_bf16 ? 1 : 0));
    const std::vector<double> want = reference(A, B, c0, ldc, c.alpha, c.beta);
    for (std::int64_t i = 0; i < c.M; ++i) {
      for (std::int64_t j = 0; j < ldc; ++j) {
        const auto at = static_cast<std::size_t>(i * ldc + j);
        if (j >= c.N) {
          REQUIRE(float(out[at]) == float(c0[at]));  // the padding is not written
          continue;
        }
        INFO("C(" << i << ", " << j << ")");
        REQUIRE(std::fabs(double(out[at]) - want[at]) <=
                1e-5 * std::sqrt(double(c.K)) + rel * std::fabs(want[at]));
      }
    }
  }
}

TEST_CASE("gemm: small products and products inside OpenMP regions stay on the BLAS",
          "[ops][gemm][onednn]") {
  const auto a = uniform_values(16 * 16, 7), b = uniform_values(16 * 16, 8);
  std::vector<float> out(16 * 16);
  const MatrixView<const float> A{a.data(), 16, 16, 16, 1}, B{b.data(), 16, 16, 16, 1};
  const auto before = ember::ops::onednn::gemm_calls();
  ember::ops::cpu::gemm<float>(A, B, MatrixView<float>{out.data(), 16, 16, 16, 1}, 1, 0);
  REQUIRE(ember::ops::onednn::gemm_calls() == before);
  const auto big_a = uniform_values(128 * 128, 9), big_b = uniform_values(128 * 128, 10);
  std::vector<float> big_out(2 * 128 * 128);
#pragma omp parallel for num_threads(2)
  for (int t = 0; t < 2; ++t) {
    ember::ops::cpu::gemm<float>(
        MatrixView<const float>{big_a.data(), 128, 128, 128, 1},
        MatrixView<const float>{big_b.data(), 128, 128, 128, 1},
        MatrixView<float>{big_out.data() + t * 128 * 128, 128, 128, 128, 1}, 1, 0);
  }
  REQUIRE(ember::ops::onednn::gemm_calls() == before);
  REQUIRE(std::equal(big_out.begin(), big_out.begin() + 128 * 128, big_out.begin() + 128 * 128));
}
#else
TEST_CASE("gemm on oneDNN: not in this build", "[ops][gemm][onednn]") {
  WARN("this build has no oneDNN: CPU matrix products run on the BLAS");
}
#endif

}  // namespace test_ops_gemm_dnnl
}  // namespace
