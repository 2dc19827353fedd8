// The CPU matrix product's choice of library (ops/matmul/gemm_cpu.hpp): with oneMKL and oneDNN
// both in the build, a wide float product runs on oneMKL and a tall, narrow one on oneDNN, each
// against a float64 product; a double product runs on the BLAS. Which path ran is counted.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <ember/ember.hpp>

#include "support/random_tensors.hpp"

namespace {
namespace test_ops_gemm_cpu {

using ember::ops::MatrixView;
using ember::testing::uniform_values;

/// C = A B (row-major, dense) and its largest error against float64 relative to the sum of the
/// terms' magnitudes, so the bound does not depend on K.
template <class T>
double product_error(std::int64_t M, std::int64_t N, std::int64_t K, std::uint32_t seed) {
  const auto a = uniform_values<T>(static_cast<std::size_t>(M * K), seed);
  const auto b = uniform_values<T>(static_cast<std::size_t>(K * N), seed + 1);
  std::vector<T> c(static_cast<std::size_t>(M * N));
  ember::ops::cpu::gemm<T>(MatrixView<const T>{a.data(), M, K, K, 1},
                           MatrixView<const T>{b.data(), K, N, N, 1},
                           MatrixView<T>{c.data(), M, N, N, 1}, T(1), T(0));
  double worst = 0;
  for (std::int64_t i = 0; i < M; i += 7) {
    for (std::int64_t j = 0; j < N; j += 5) {
      double sum = 0, magnitude = 0;
      for (std::int64_t k = 0; k < K; ++k) {
        const double term = double(a[static_cast<std::size_t>(i * K + k)]) *
                            double(b[static_cast<std::size_t>(k * N + j)]);
        sum += term;
        magnitude += std::fabs(term);
      }
      worst = std::max(worst,
                       std::fabs(double(c[static_cast<std::size_t>(i * N + j)]) - sum) / magnitude);
    }
  }
  return worst;
}

/// Which library ran one product: oneDNN's calls and the BLAS's counted around it.
struct Ran {
  std::uint64_t onednn = 0, blas = 0;
};
template <class F>
Ran count_libraries(F&& product) {
  std::uint64_t onednn_before = 0;
#if defined(EMBER_WITH_DNNL)
  onednn_before = ember::ops::onednn::gemm_calls();
#endif
  const std::uint64_t blas_before = ember::ops::cpu::blas_gemm_calls();
  product();
  Ran ran;
#if defined(EMBER_WITH_DNNL)
  ran.onednn = ember::ops::onednn::gemm_calls() - onednn_before;
#endif
  ran.blas = ember::ops::cpu::blas_gemm_calls() - blas_before;
  return ran;
}

// A sum of K products rounded at each step errs by at most K unit roundoffs of the terms'
// magnitudes (Higham's gamma_K), whatever order the library sums in.
constexpr double sum_bound(std::int64_t K, double unit_roundoff) { return K * unit_roundoff; }

TEST_CASE("gemm: a wide float product on oneMKL, a tall and narrow one on oneDNN", "[ops][gemm]") {
  using ember::ops::cpu::mkl_takes;
  const bool mkl = mkl_takes(256, 512, 384, false);
#if defined(EMBER_WITH_MKL)
  const char* env = std::getenv("EMBER_CPU_GEMM");
  const bool mkl_allowed = !(env && std::strcmp(env, "onednn") == 0);
  if (env == nullptr) REQUIRE(mkl == ember::cpu_is_intel());  // on Intel's CPUs only
#else
  const bool mkl_allowed = false;
#endif
  REQUIRE(mkl_takes(128, 128, 128, false) == mkl);            // small and square
  REQUIRE_FALSE(mkl_takes(1024, 128, 384, false));            // tall and narrow: oneDNN's
  REQUIRE_FALSE(mkl_takes(256, 50304, 768, true));            // GPT-2's LM head: oneDNN's
  REQUIRE(mkl_takes(256, 768, 50304, false) == mkl_allowed);  // its input gradient: MKL's

  double error = 0;
  const Ran wide = count_libraries([&] { error = product_error<float>(256, 512, 384, 1); });
  CHECK(error <= sum_bound(384, 0x1p-24));
  const Ran narrow = count_libraries([&] { error = product_error<float>(1024, 128, 384, 3); });
  CHECK(error <= sum_bound(384, 0x1p-24));
#if defined(EMBER_WITH_DNNL)
  const bool onednn = ember::ops::onednn::gemm_enabled();
  REQUIRE(wide.onednn == (onednn && !mkl ? 1u : 0u));
  REQUIRE(narrow.onednn == (onednn ? 1u : 0u));
#else
  const bool onednn = false;
#endif
#if defined(EMBER_WITH_BLAS)
  REQUIRE(wide.blas == (onednn && !mkl ? 0u : 1u));
  REQUIRE(narrow.blas == (onednn ? 0u : 1u));
#endif
}

TEST_CASE("gemm: a double product on the BLAS", "[ops][gemm]") {
  double error = 0;
  const Ran ran = count_libraries([&] { error = product_error<double>(200, 600, 300, 5); });
  CHECK(error <= sum_bound(300, 0x1p-53));
  REQUIRE(ran.onednn == 0);
#if defined(EMBER_WITH_BLAS)
  REQUIRE(ran.blas == 1);
#else
  REQUIRE(ran.blas == 0);
#endif
}

}  // namespace test_ops_gemm_cpu
}  // namespace
