// The bf16 products in pairs (ops/matmul/bf16_pairs.hpp, amx.hpp): C (+)= A B with B packed by
// pack_pairs and by pack_transposed, against a double reference, on AVX512-BF16 and on AMX where
// this CPU has them (each skips with a message where it does not). Shapes with rows past the last
// whole block (zero padding) and more than one chunk of the contraction.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <ember/ember.hpp>

namespace {
namespace test_ops_bf16_pairs {

using ember::bf16;

#if EMBER_HAVE_BF16_PAIRS
using Product = void (*)(float*, std::int64_t, const std::uint16_t*, std::int64_t,
                         const std::uint32_t*, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t, bool);

/// Random bf16 bit patterns of values in [-1, 1).
std::vector<std::uint16_t> random_bf16(std::int64_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<std::uint16_t> out(static_cast<std::size_t>(n));
  for (auto& x : out) x = ember::bf16(d(gen)).bits;
  return out;
}

double value(std::uint16_t bits) { return static_cast<double>(ember::bf16::from_bits(bits)); }

/// Checks product(C, A, B) against the double reference for C [M x N] = A [M x K] B [K x N], with
/// B given as x, packed by pack_pairs (x is B, K x N) and by pack_transposed (x is B^T, N x K).
void check(Product product, std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t rows) {
  namespace pairs = ember::ops::pairs;
  const auto a = random_bf16(M * K, 1);
  const auto b = random_bf16(K * N, 2);  // B [K][N]; only the first `rows` rows are nonzero
  std::vector<std::uint16_t> bt(static_cast<std::size_t>(N * K));  // B^T [N][K]
  for (std::int64_t k = 0; k < K; ++k) {
    for (std::int64_t n = 0; n < N; ++n) bt[n * K + k] = b[k * N + n];
  }
  // Over the contraction: B's rows [0, rows) packed, the rest zero padding.
  std::vector<std::uint32_t> over(static_cast<std::size_t>((K + 31) / 32 * 32 * N / 2), 7u);
  pairs::pack_pairs(b.data(), rows, N, N, over.data());
  std::vector<double> want(static_cast<std::size_t>(M * N), 0.0), size(want.size(), 0.0);
  for (std::int64_t m = 0; m < M; ++m) {
    for (std::int64_t n = 0; n < N; ++n) {
      for (std::int64_t k = 0; k < rows; ++k) {
        const double t = value(a[m * K + k]) * value(b[k * N + n]);
        want[m * N + n] += t;
        size[m * N + n] += std::abs(t);
      }
    }
  }
  // bf16 products are exact in float; a float sum of K terms (and of C's start) is within
  // (K + 1) u of the sum of their magnitudes, u = 2^-24; twice that after a second accumulation.
  const auto close = [&](const std::vector<float>& got, double start) {
    for (std::int64_t i = 0; i < M * N; ++i) {
      const double bound = 2 * static_cast<double>(K + 1) * 0x1p-24 * (size[i] + start);
      REQUIRE(std::abs(got[i] - (want[i] + start)) <= bound);
    }
  };
  std::vector<float> c(static_cast<std::size_t>(M * N), 5.0f);
  product(c.data(), N, a.data(), K, over.data(), 256, N / 16 * 256, M, N, K / 32, false);
  close(c, 0.0);
  product(c.data(), N, a.data(), K, over.data(), 256, N / 16 * 256, M, N, K / 32, true);
  for (auto& x : c) x *= 0.5f;
  close(c, 0.0);
  // The transposed packing: blocks of 16 columns n (rows of B^T), chunks of 32 of the contraction.
  if (rows == K) {
    std::vector<std::uint32_t> across(static_cast<std::size_t>((N + 15) / 16 * 16 * K / 2), 7u);
    pairs::pack_transposed(bt.data(), N, K, K, across.data());
    std::fill(c.begin(), c.end(), 1.0f);
    product(c.data(), N, a.data(), K, across.data(), K / 32 * 256, 256, M, N, K / 32, true);
    close(c, 1.0);
  }
}
#endif

TEST_CASE("bf16 products in pairs against a double reference: AVX512-BF16 and AMX") {
#if EMBER_HAVE_BF16_PAIRS
  struct Engine {
    const char* name;
    bool usable;
    Product product;
  };
  const Engine engines[] = {
      {"AVX512-BF16", ember::ops::pairs::avx512_bf16(), ember::ops::pairs::product},
      {"AMX", ember::ops::amx::usable(), ember::ops::amx::product}};
  for (const Engine& e : engines) {
    INFO(e.name);
    if (!e.usable) {
      WARN(e.name << " is not available on this CPU: its products are not checked here");
      continue;
    }
    if (e.product == ember::ops::amx::product) ember::ops::amx::configure_tiles();
    check(e.product, 32, 32, 32, 32);
    check(e.product, 64, 96, 128, 128);
    check(e.product, 32, 64, 96, 70);  // the last chunk of the contraction half padding
    if (e.product == ember::ops::amx::product) ember::ops::amx::release_tiles();
  }
#else
  WARN("no x86-64 bf16 products in this build");
#endif
}

}  // namespace test_ops_bf16_pairs
}  // namespace
