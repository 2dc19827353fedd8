// Philox4x32-10 counter-based random numbers, and uniform and normal variates drawn from them.
//
// Why it exists: ember's random numbers (dropout masks, weight initialisation, data shuffles)
// must be the same bits on the CPU and on the GPU, whatever the thread layout. A counter-based
// generator has no state beyond (key, counter): element `index` of a draw keyed by (seed, offset)
// is a pure function of the three numbers. For that to hold for normals too, Box-Muller here uses
// its own log and sincos written with +, -, *, explicit fma and bit manipulation only (libm and
// CUDA's math library differ in the last ulp), and every multiply that feeds an add is an explicit
// fma so no compiler contraction can change a result.
//
// Stream layout: element `index` uses the Philox block at counter (offset + index / 4), key
// `seed`, output word index % 4. A caller that makes several draws with one seed advances `offset`
// by ceil(n / 4) after a draw of n elements, so draws never share a block.
//
// Bit-identity between host and device needs the host compiler not to contract a caller's
// `a * philox_normal(...) + b` into an fma differently from nvcc: build host code in ISO mode
// (-std=c++20, where GCC defaults to -ffp-contract=off) or with -ffp-contract=off, never with
// -ffast-math. Device code uses __fmul_rn/__fmaf_rn/__fsqrt_rn, which no nvcc flag changes.
#pragma once

#include <cmath>
#include <cstdint>

#include "ember/core/config.hpp"

namespace ember {

/// Four 32-bit words: a Philox counter or output block (word 0 is Random123's ctr.v[0]).
struct PhiloxBlock {
  uint32_t v[4];
};

inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1

/// Philox4x32 with `Rounds` rounds on counter `ctr` and key (k0, k1); Random123's
/// philox4x32_R(Rounds, ctr, {k0, k1}). ember uses 10 rounds.
template <int Rounds = 10>
EMBER_HD constexpr PhiloxBlock philox4x32_rounds(PhiloxBlock ctr, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < Rounds; ++round) {
    if (round > 0) {
      k0 += kPhiloxW0;
      k1 += kPhiloxW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * ctr.v[0];
    const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * ctr.v[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = PhiloxBlock{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
  }
  return ctr;
}

/// Philox4x32-10 keyed by `key` at the 128-bit counter (counter_hi:counter_lo). Words: counter
/// {lo32(counter_lo), hi32(counter_lo), lo32(counter_hi), hi32(counter_hi)}, key {lo32(key),
/// hi32(key)}.
EMBER_HD constexpr PhiloxBlock philox4x32(uint64_t key, uint64_t counter_lo,
                                          uint64_t counter_hi = 0) {
  const PhiloxBlock ctr{{static_cast<uint32_t>(counter_lo), static_cast<uint32_t>(counter_lo >> 32),
                         static_cast<uint32_t>(counter_hi),
                         static_cast<uint32_t>(counter_hi >> 32)}};
  return philox4x32_rounds<10>(ctr, static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
}

/// The Philox block holding element `index` of the draw keyed by (seed, offset).
EMBER_HD constexpr PhiloxBlock philox_block(uint64_t seed, uint64_t offset, uint64_t index) {
  return philox4x32(seed, offset + index / 4);
}

/// The 32 random bits of element `index` of the draw keyed by (seed, offset).
EMBER_HD constexpr uint32_t philox_bits(uint64_t seed, uint64_t offset, uint64_t index) {
  return philox_block(seed, offset, index).v[index % 4];
}

/// Top 24 bits of `x` as a float in [0, 1): a multiple of 2^-24, at most 1 - 2^-24. Exact.
EMBER_HD constexpr float uniform_from_bits(uint32_t x) {
  return static_cast<float>(x >> 8) * 0x1p-24f;
}

/// Like uniform_from_bits but in (0, 1]: a multiple of 2^-24, at least 2^-24. Exact.
EMBER_HD constexpr float uniform_open0_from_bits(uint32_t x) {
  return static_cast<float>((x >> 8) + 1u) * 0x1p-24f;
}

namespace detail {

// Correctly rounded primitives that no compiler flag changes on the device (__fmul_rn etc. are
// never contracted or approximated) and that are IEEE operations on the host.
EMBER_HD inline float fma_rn(float a, float b, float c) {
#if defined(EMBER_DEVICE_CODE)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
EMBER_HD inline float mul_rn(float a, float b) {
#if defined(EMBER_DEVICE_CODE)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
EMBER_HD inline float sqrt_rn(float a) {
#if defined(EMBER_DEVICE_CODE)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

}  // namespace detail

/// Natural logarithm, within 1 ulp, with the same bits on every host and device. log(+0) and
/// log(-0) = -inf; log(x < 0), negative NaNs included, = NaN 0x7FFFFFFF; log(+inf) = +inf; a
/// positive NaN is returned as it is. (Device code built with -ftz=true reads subnormals as 0.)
EMBER_HD inline float portable_logf(float x) {
  using detail::fma_rn;
  using detail::mul_rn;
  const uint32_t ix0 = __builtin_bit_cast(uint32_t, x);
  // Subnormals: scale by 2^23 (exact) to make them normal and remember the exponent.
  const bool subnormal = ix0 < 0x00800000u;
  const uint32_t ix = subnormal ? __builtin_bit_cast(uint32_t, mul_rn(x, 0x1p23f)) : ix0;
  // x = 2^k * m with m in [sqrt(1/2), sqrt(2)): subtracting the bits of sqrt(1/2) makes the
  // exponent field of the difference k.
  const int32_t k = static_cast<int32_t>(ix - 0x3F3504F3u) >> 23;
  const float m = __builtin_bit_cast(float, ix - (static_cast<uint32_t>(k) << 23));
  const float f = m - 1.0f;  // exact (Sterbenz)
  // log1p(f) = f - f^2/2 + f^3 P(f) on [sqrt(1/2) - 1, sqrt(2) - 1]; P is a degree-7 minimax fit
  // relative to log1p (approximation error about 0.1 ulp).
  float p = fma_rn(-0x1.38ce9ap-4f, f, 0x1.055fe0p-3f);
  p = fma_rn(p, f, -0x1.0d81e0p-3f);
  p = fma_rn(p, f, 0x1.22d8fep-3f);
  p = fma_rn(p, f, -0x1.54728ep-3f);
  p = fma_rn(p, f, 0x1.99a01ep-3f);
  p = fma_rn(p, f, -0x1.000226p-2f);
  p = fma_rn(p, f, 0x1.555554p-2f);
  const float q = fma_rn(p, f, -0.5f);  // (log1p(f) - f) / f^2
  const float y = fma_rn(mul_rn(f, f), q, f);
  // + k * ln2, with ln2 split in two so the sum is rounded once more only.
  const float kf = static_cast<float>(k - (subnormal ? 23 : 0));
  float r = fma_rn(kf, 0x1.62e430p-1f, fma_rn(kf, -0x1.05c610p-29f, y));
  r = (ix0 & 0x7FFFFFFFu) == 0u ? -__builtin_bit_cast(float, 0x7F800000u) : r;
  r = ix0 > 0x80000000u ? __builtin_bit_cast(float, 0x7FFFFFFFu) : r;
  r = ix0 >= 0x7F800000u && ix0 <= 0x7FFFFFFFu ? x : r;
  return r;
}

/// sin(2 pi u) and cos(2 pi u), within 1 ulp, with the same bits on every host and device.
/// Reduction is exact: u = n/4 + r with |r| <= 1/8, then polynomials in r (no 2 pi rounding).
/// |u| >= 2^23 is an integer (sin 0, cos 1); inf and NaN give NaN.
EMBER_HD inline void portable_sincos2pi(float u, float* sin_out, float* cos_out) {
  using detail::fma_rn;
  using detail::mul_rn;
  const uint32_t au = __builtin_bit_cast(uint32_t, u) & 0x7FFFFFFFu;
  const float t = au < 0x4B000000u ? mul_rn(u, 4.0f) : 0.0f;  // 4u, exact; 0 for |u| >= 2^23
  // n = nearest integer to t (either neighbour on a tie), from the truncation (exact for |t| <
  // 2^25) and the exact fraction.
  int32_t n = static_cast<int32_t>(t);
  const float frac = t - static_cast<float>(n);
  n += frac > 0.5f ? 1 : (frac < -0.5f ? -1 : 0);
  const float r = mul_rn(t - static_cast<float>(n), 0.25f);  // exact, |r| <= 1/8
  const float r2 = mul_rn(r, r);
  // sin(2 pi r) = r (S1 + S3 r^2 + S5 r^4 + S7 r^6), S1 = 2 pi split in hi + lo; minimax fits on
  // [0, 1/8] relative to sin and cos (approximation error below 0.07 ulp).
  float sp = fma_rn(-0x1.2db8f4p+6f, r2, 0x1.465fb6p+6f);
  sp = fma_rn(sp, r2, -0x1.4abbbep+5f);
  sp = fma_rn(sp, r2, -0x1.777a5cp-23f);
  const float s = fma_rn(r, 0x1.921fb6p+2f, mul_rn(r, sp));
  float cp = fma_rn(0x1.d4d84cp+5f, r2, -0x1.55b284p+6f);
  cp = fma_rn(cp, r2, 0x1.03c1b0p+6f);
  cp = fma_rn(cp, r2, -0x1.3bd3ccp+4f);
  const float c = fma_rn(cp, r2, 1.0f);
  // Rotate by the quadrant n mod 4 (sign flips are exact).
  const uint32_t quadrant = static_cast<uint32_t>(n) & 3u;
  float so = (quadrant & 1u) ? c : s;
  float co = (quadrant & 1u) ? s : c;
  so = (quadrant & 2u) ? -so : so;
  co = ((quadrant + 1u) & 2u) ? -co : co;
  const bool finite = au < 0x7F800000u;
  const float nan = __builtin_bit_cast(float, 0x7FFFFFFFu);
  *sin_out = finite ? so : nan;
  *cos_out = finite ? co : nan;
}

/// Box-Muller on two random words: z0 = R cos(2 pi u1), z1 = R sin(2 pi u1), with
/// R = sqrt(-2 log u0), u0 in (0, 1] from word `a`, u1 in [0, 1) from word `b`. |z| < 5.8.
EMBER_HD inline void box_muller(uint32_t a, uint32_t b, float* z0, float* z1) {
  const float radius =
      detail::sqrt_rn(detail::mul_rn(-2.0f, portable_logf(uniform_open0_from_bits(a))));
  float s, c;
  portable_sincos2pi(uniform_from_bits(b), &s, &c);
  *z0 = detail::mul_rn(radius, c);
  *z1 = detail::mul_rn(radius, s);
}

/// Element `index` of a uniform [0, 1) draw keyed by (seed, offset).
EMBER_HD constexpr float philox_uniform(uint64_t seed, uint64_t offset, uint64_t index) {
  return uniform_from_bits(philox_bits(seed, offset, index));
}

/// Uniforms of one draw keyed by (seed, offset) for a caller that walks element indices mostly in
/// order: the block of four is computed once and reused while the index stays in it (calling
/// philox_uniform per element computes each block four times). The values are philox_uniform's.
struct PhiloxUniformCursor {
  uint64_t seed = 0, offset = 0;
  uint64_t block_index = ~uint64_t{0};
  PhiloxBlock block{};
  EMBER_HD float operator()(uint64_t index) {
    if (index / 4 != block_index) {
      block_index = index / 4;
      block = philox4x32(seed, offset + block_index);
    }
    return uniform_from_bits(block.v[index % 4]);
  }
};

/// out[k] = philox_uniform(seed, offset, first + k) for k in [0, count), for host code filling a
/// buffer: the whole blocks in a straight loop that the compiler vectorises, where one element
/// at a time stays scalar.
inline void philox_uniforms(uint64_t seed, uint64_t offset, uint64_t first, int64_t count,
                            float* out) {
  const uint64_t end = first + static_cast<uint64_t>(count);
  uint64_t i = first;
  for (; i < end && i % 4 != 0; ++i) out[i - first] = philox_uniform(seed, offset, i);
  const uint64_t blocks = (end - i) / 4;
  float* whole = out + (i - first);
  for (uint64_t k = 0; k < blocks; ++k) {
    const PhiloxBlock b = philox4x32(seed, offset + i / 4 + k);
    for (int w = 0; w < 4; ++w) whole[4 * k + w] = uniform_from_bits(b.v[w]);
  }
  for (i += 4 * blocks; i < end; ++i) out[i - first] = philox_uniform(seed, offset, i);
}

/// Element `index` of a standard normal draw keyed by (seed, offset). Words 0 and 1 of the block
/// give the normals of indices 0 and 1 (mod 4), words 2 and 3 those of indices 2 and 3.
EMBER_HD inline float philox_normal(uint64_t seed, uint64_t offset, uint64_t index) {
  const PhiloxBlock block = philox_block(seed, offset, index);
  const unsigned pair = static_cast<unsigned>(index % 4) & 2u;
  float z0, z1;
  box_muller(block.v[pair], block.v[pair + 1], &z0, &z1);
  return (index % 2) ? z1 : z0;
}

/// The four uniforms of block `block_index` of the draw keyed by (seed, offset): elements
/// 4 block_index .. 4 block_index + 3, philox_uniform's values from one Philox evaluation.
EMBER_HD inline void philox_uniform_block(uint64_t seed, uint64_t offset, uint64_t block_index,
                                          float (&out)[4]) {
  const PhiloxBlock b = philox4x32(seed, offset + block_index);
  for (int w = 0; w < 4; ++w) out[w] = uniform_from_bits(b.v[w]);
}

/// The four standard normals of block `block_index` (philox_normal's values for elements
/// 4 block_index .. 4 block_index + 3): one Philox evaluation and two Box-Muller pairs, where
/// element by element takes four of each.
EMBER_HD inline void philox_normal_block(uint64_t seed, uint64_t offset, uint64_t block_index,
                                         float (&out)[4]) {
  const PhiloxBlock b = philox4x32(seed, offset + block_index);
  box_muller(b.v[0], b.v[1], &out[0], &out[1]);
  box_muller(b.v[2], b.v[3], &out[2], &out[3]);
}

}  // namespace ember
