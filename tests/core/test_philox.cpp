// Tests for ember's Philox4x32-10 generator: Random123 known-answer vectors, the stream layout,
// uniform and normal statistics, and the accuracy of the portable log and sincos used by
// Box-Muller against double-precision libm.
#include <catch2/catch.hpp>

#include "support/bits.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>

#include <ember/core/philox.hpp>

namespace {

using ember::testing::bits_of;
using ember::testing::float_from_bits;

bool same_block(const ember::PhiloxBlock& a, const ember::PhiloxBlock& b) {
  return std::equal(a.v, a.v + 4, b.v);
}

// Error of `got` in units of the float ulp at the exact value `ref`: ulp(y) = 2^(floor(log2|y|)
// - 23), the spacing of floats in y's binade (2^-149 below the normals).
double ulp_error(float got, double ref) {
  const double err = std::fabs(static_cast<double>(got) - ref);
  if (ref == 0.0) return err == 0.0 ? 0.0 : INFINITY;
  const int e = std::max(std::ilogb(ref), -126);
  return err / std::ldexp(1.0, e - 23);
}

// sin(2 pi u) and cos(2 pi u) in double, independently of the implementation's reduction:
// u - nearbyint(4u)/4 is exact, then libm on a double angle in [-pi/4, pi/4].
void reference_sincos2pi(float u, double* s, double* c) {
  const double n = std::nearbyint(4.0 * static_cast<double>(u));
  const double r = static_cast<double>(u) - n / 4.0;
  const double theta = 6.283185307179586477 * r;  // 2 pi
  const double s0 = std::sin(theta), c0 = std::cos(theta);
  switch (static_cast<int64_t>(std::fmod(n, 4.0) + 4.0) % 4) {
    case 0:
      *s = s0, *c = c0;
      break;
    case 1:
      *s = c0, *c = -s0;
      break;
    case 2:
      *s = -s0, *c = -c0;
      break;
    default:
      *s = -c0, *c = s0;
      break;
  }
}

}  // namespace

TEST_CASE("philox: Random123 known-answer vectors", "[philox]") {
  // Random123 tests/kat_vectors: philox4x32 R ctr[4] key[2] -> out[4].
  struct Kat {
    int rounds;
    ember::PhiloxBlock ctr;
    uint32_t k0, k1;
    ember::PhiloxBlock expect;
  };
  const Kat kats[] = {
      {7, {{0, 0, 0, 0}}, 0, 0, {{0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}}},
      {7,
       {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}}},
      {7,
       {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}}},
      {10, {{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {10,
       {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {10,
       {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Kat& k : kats) {
    const ember::PhiloxBlock out = k.rounds == 7 ? ember::philox4x32_rounds<7>(k.ctr, k.k0, k.k1)
                                                 : ember::philox4x32_rounds<10>(k.ctr, k.k0, k.k1);
    INFO("rounds " << k.rounds << ", ctr[0] " << std::hex << k.ctr.v[0]);
    CHECK(out.v[0] == k.expect.v[0]);
    CHECK(out.v[1] == k.expect.v[1]);
    CHECK(out.v[2] == k.expect.v[2]);
    CHECK(out.v[3] == k.expect.v[3]);
  }
  // The 64-bit interface packs the words little-end first.
  CHECK(same_block(ember::philox4x32(0, 0), kats[3].expect));
  CHECK(same_block(ember::philox4x32(~0ull, ~0ull, ~0ull), kats[4].expect));
  CHECK(same_block(
      ember::philox4x32(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull),
      kats[5].expect));
  static_assert(ember::philox4x32(0, 0).v[0] == 0x6627e8d5u, "the core is constexpr");
}

TEST_CASE("philox: stream layout does not depend on how elements are grouped", "[philox]") {
  const uint64_t seed = 0x0123456789ABCDEFull, offset = 77;
  for (uint64_t i = 0; i < 4096; ++i) {
    const ember::PhiloxBlock block = ember::philox4x32(seed, offset + i / 4);
    REQUIRE(ember::philox_bits(seed, offset, i) == block.v[i % 4]);
    REQUIRE(bits_of(ember::philox_uniform(seed, offset, i)) ==
            bits_of(ember::uniform_from_bits(block.v[i % 4])));
    // Shifting the offset by one block is the same stream four elements later.
    if (i >= 4) {
      REQUIRE(bits_of(ember::philox_uniform(seed, offset + 1, i - 4)) ==
              bits_of(ember::philox_uniform(seed, offset, i)));
      REQUIRE(bits_of(ember::philox_normal(seed, offset + 1, i - 4)) ==
              bits_of(ember::philox_normal(seed, offset, i)));
    }
    // Normals: words (0, 1) give elements 0 and 1, words (2, 3) elements 2 and 3.
    float z0, z1;
    const unsigned pair = (i % 4) & 2u;
    ember::box_muller(block.v[pair], block.v[pair + 1], &z0, &z1);
    REQUIRE(bits_of(ember::philox_normal(seed, offset, i)) == bits_of(i % 2 ? z1 : z0));
  }
}

TEST_CASE("philox: deterministic, and different indices, offsets and seeds differ", "[philox]") {
  for (uint64_t i = 0; i < 1000; ++i) {
    REQUIRE(bits_of(ember::philox_normal(42, 7, i)) == bits_of(ember::philox_normal(42, 7, i)));
    REQUIRE(bits_of(ember::philox_uniform(42, 7, i)) == bits_of(ember::philox_uniform(42, 7, i)));
  }
  // Among 10^5 consecutive elements, 32-bit words collide with probability ~ n^2 / 2^33 ~ 1;
  // more than a handful of repeats would mean overlapping streams.
  std::set<uint32_t> words;
  for (uint64_t i = 0; i < 100000; ++i) words.insert(ember::philox_bits(1, 0, i));
  CHECK(words.size() >= 100000 - 8);
  // Other seeds and offsets give other streams: equal elements at the same index happen with
  // probability 2^-32 each.
  int same_seed = 0, same_offset = 0;
  for (uint64_t i = 0; i < 100000; ++i) {
    same_seed += ember::philox_bits(1, 0, i) == ember::philox_bits(2, 0, i);
    same_offset += ember::philox_bits(1, 0, i) == ember::philox_bits(1, 1 << 20, i);
  }
  CHECK(same_seed <= 2);
  CHECK(same_offset <= 2);
  CHECK(ember::philox_normal(1, 0, 0) != ember::philox_normal(1, 0, 1));
  CHECK(ember::philox_normal(1, 0, 0) != ember::philox_normal(1, 0, 2));
}

TEST_CASE("philox: uniforms lie in [0, 1) with the right moments", "[philox]") {
  CHECK(ember::uniform_from_bits(0) == 0.0f);
  CHECK(ember::uniform_from_bits(0xFFFFFFFFu) == 1.0f - 0x1p-24f);
  CHECK(ember::uniform_from_bits(0x80000000u) == 0.5f);
  CHECK(ember::uniform_open0_from_bits(0) == 0x1p-24f);
  CHECK(ember::uniform_open0_from_bits(0xFFFFFFFFu) == 1.0f);
  static_assert(ember::uniform_from_bits(0xFFFFFFFFu) < 1.0f);

  const int64_t n = 1000000;
  double sum = 0, sum2 = 0;
  float lo = 1, hi = 0;
  int64_t below_tenth = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float u = ember::philox_uniform(2024, 3, static_cast<uint64_t>(i));
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
    sum2 += static_cast<double>(u) * u;
    below_tenth += u < 0.1f;
  }
  CHECK(lo >= 0.0f);
  CHECK(hi < 1.0f);
  const double mean = sum / n, var = sum2 / n - mean * mean;
  // 6 sigma: sd(mean) = sqrt(1/12 / n); sd(variance) = sqrt((mu4 - sigma^4) / n) with
  // mu4 = 1/80, sigma^4 = 1/144; sd(fraction below 0.1) = sqrt(0.09 / n).
  CHECK(std::fabs(mean - 0.5) < 6 * std::sqrt(1.0 / 12 / n));
  CHECK(std::fabs(var - 1.0 / 12) < 6 * std::sqrt((1.0 / 80 - 1.0 / 144) / n));
  CHECK(std::fabs(static_cast<double>(below_tenth) / n - 0.1) < 6 * std::sqrt(0.09 / n));
}

TEST_CASE("philox: normals have the right moments and distribution", "[philox]") {
  const int64_t n = 1000000;
  double sum = 0, sum2 = 0, sum3 = 0, sum4 = 0;
  float max_abs = 0;
  const double edges[] = {-2.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.5};
  int64_t below[9] = {};
  for (int64_t i = 0; i < n; ++i) {
    const double z = ember::philox_normal(99, 12345, static_cast<uint64_t>(i));
    sum += z;
    sum2 += z * z;
    sum3 += z * z * z;
    sum4 += z * z * z * z;
    max_abs = std::max(max_abs, static_cast<float>(std::fabs(z)));
    for (int k = 0; k < 9; ++k) below[k] += z < edges[k];
  }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  // 6 sigma bounds for N(0, 1): sd(mean) = 1/sqrt(n); sd(sample variance) = sqrt(2/n);
  // sd(third moment) = sqrt(15/n); sd(fourth moment) = sqrt(96/n).
  CHECK(std::fabs(mean) < 6 / std::sqrt(double(n)));
  CHECK(std::fabs(var - 1) < 6 * std::sqrt(2.0 / n));
  CHECK(std::fabs(sum3 / n) < 6 * std::sqrt(15.0 / n));
  CHECK(std::fabs(sum4 / n - 3) < 6 * std::sqrt(96.0 / n));
  // Box-Muller with u0 >= 2^-24 bounds |z| by sqrt(-2 log 2^-24) = 5.77.
  CHECK(max_abs <= 5.7686f);
  // Empirical CDF against Phi at fixed points, 6 binomial sigmas.
  for (int k = 0; k < 9; ++k) {
    const double p = 0.5 * std::erfc(-edges[k] / std::sqrt(2.0));
    INFO("P(z < " << edges[k] << ")");
    CHECK(std::fabs(static_cast<double>(below[k]) / n - p) < 6 * std::sqrt(p * (1 - p) / n));
  }
  // u0 = 1 (the largest word) gives radius 0.
  float z0, z1;
  ember::box_muller(0xFFFFFF00u, 0x12345678u, &z0, &z1);
  CHECK(z0 == 0.0f);
  CHECK(z1 == 0.0f);
}

TEST_CASE("philox: portable log and sincos are accurate on a sample", "[philox]") {
  // A quick version of the sweeps below (tagged [exhaustive]): 2^16 random floats in (0, 1] for
  // log and 2^16 random angles for sincos.
  double worst_log = 0, worst_sincos = 0;
  for (uint64_t i = 0; i < (1u << 16); ++i) {
    const uint32_t w = ember::philox_bits(5, 0, i);
    // Random exponent in [2^-32, 1) and random mantissa, plus the Box-Muller grid.
    const float x = float_from_bits(((95 + (w >> 27)) << 23) | (w & 0x7FFFFF));
    const float g = ember::uniform_open0_from_bits(w);
    worst_log = std::max(worst_log, ulp_error(ember::portable_logf(x), std::log(double(x))));
    worst_log = std::max(worst_log, ulp_error(ember::portable_logf(g), std::log(double(g))));
    float s, c;
    double rs, rc;
    const float u = ember::uniform_from_bits(w);
    ember::portable_sincos2pi(u, &s, &c);
    reference_sincos2pi(u, &rs, &rc);
    worst_sincos = std::max({worst_sincos, ulp_error(s, rs), ulp_error(c, rc)});
  }
  INFO("worst log error " << worst_log << " ulp, sincos " << worst_sincos << " ulp");
  CHECK(worst_log <= 1.0);
  CHECK(worst_sincos <= 1.0);
}

TEST_CASE("philox: portable_logf is within 1 ulp of double log", "[philox][exhaustive]") {
  // Every float in [2^-24, 1] (the Box-Muller domain, all 2^-24-multiples included), then a
  // strided sweep over all positive finite floats, subnormals included.
  double worst_dense = 0, worst_sparse = 0;
  const int64_t lo = bits_of(0x1p-24f), hi = bits_of(1.0f);
#pragma omp parallel for schedule(static) reduction(max : worst_dense)
  for (int64_t i = lo; i <= hi; ++i) {
    const float x = float_from_bits(static_cast<uint32_t>(i));
    worst_dense = std::max(worst_dense, ulp_error(ember::portable_logf(x), std::log(double(x))));
  }
#pragma omp parallel for schedule(static) reduction(max : worst_sparse)
  for (int64_t i = 1; i < 0x7F800000; i += 61) {
    const float x = float_from_bits(static_cast<uint32_t>(i));
    worst_sparse = std::max(worst_sparse, ulp_error(ember::portable_logf(x), std::log(double(x))));
  }
  INFO("worst error on [2^-24, 1]: " << worst_dense << " ulp; elsewhere: " << worst_sparse);
  CHECK(worst_dense <= 1.0);
  CHECK(worst_sparse <= 1.0);
  CHECK(ember::portable_logf(1.0f) == 0.0f);
  CHECK(ember::portable_logf(0.0f) == -INFINITY);
  CHECK(ember::portable_logf(-0.0f) == -INFINITY);
  CHECK(ember::portable_logf(INFINITY) == INFINITY);
  CHECK(bits_of(ember::portable_logf(-1.0f)) == 0x7FFFFFFFu);
  CHECK(bits_of(ember::portable_logf(-INFINITY)) == 0x7FFFFFFFu);
  CHECK(bits_of(ember::portable_logf(float_from_bits(0x7FC01234))) == 0x7FC01234u);
  CHECK(ulp_error(ember::portable_logf(float_from_bits(1)), std::log(0x1p-149)) <= 1.0);
}

TEST_CASE("philox: portable_sincos2pi is within 1 ulp of double sin and cos",
          "[philox][exhaustive]") {
  // Every multiple of 2^-24 in [0, 1) (all Box-Muller angles), then every float in [2^-12, 1)
  // and a strided sweep of floats up to 2^24 and of negative floats.
  double worst_grid = 0, worst_dense = 0, worst_sparse = 0;
  auto err = [](float u) {
    float s, c;
    double rs, rc;
    ember::portable_sincos2pi(u, &s, &c);
    reference_sincos2pi(u, &rs, &rc);
    return std::max(ulp_error(s, rs), ulp_error(c, rc));
  };
#pragma omp parallel for schedule(static) reduction(max : worst_grid)
  for (int64_t k = 0; k < (int64_t{1} << 24); ++k) {
    worst_grid = std::max(worst_grid, err(static_cast<float>(k) * 0x1p-24f));
  }
  const int64_t lo = bits_of(0x1p-12f), hi = bits_of(1.0f);
#pragma omp parallel for schedule(static) reduction(max : worst_dense)
  for (int64_t i = lo; i < hi; ++i) {
    worst_dense = std::max(worst_dense, err(float_from_bits(static_cast<uint32_t>(i))));
  }
#pragma omp parallel for schedule(static) reduction(max : worst_sparse)
  for (int64_t i = 1; i < bits_of(0x1p24f); i += 37) {
    const float u = float_from_bits(static_cast<uint32_t>(i));
    worst_sparse = std::max(worst_sparse, std::max(err(u), err(-u)));
  }
  INFO("worst error: grid " << worst_grid << ", dense " << worst_dense << ", sparse "
                            << worst_sparse << " ulp");
  CHECK(worst_grid <= 1.0);
  CHECK(worst_dense <= 1.0);
  CHECK(worst_sparse <= 1.0);
  float s, c;
  ember::portable_sincos2pi(0.0f, &s, &c);
  CHECK((s == 0.0f && c == 1.0f));
  ember::portable_sincos2pi(0.25f, &s, &c);
  CHECK((s == 1.0f && c == 0.0f));
  ember::portable_sincos2pi(0.5f, &s, &c);
  CHECK((s == 0.0f && c == -1.0f));
  ember::portable_sincos2pi(-0.75f, &s, &c);
  CHECK((s == 1.0f && c == 0.0f));
  ember::portable_sincos2pi(0x1p30f, &s, &c);
  CHECK((s == 0.0f && c == 1.0f));
  ember::portable_sincos2pi(INFINITY, &s, &c);
  CHECK((std::isnan(s) && std::isnan(c)));
  ember::portable_sincos2pi(NAN, &s, &c);
  CHECK((std::isnan(s) && std::isnan(c)));
}
