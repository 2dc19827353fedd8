// Vectorizable float transcendentals for the host.
//
// The C library's expf, tanhf, ... are opaque calls, so a loop over them never becomes SIMD
// code. The functions here are written so that GCC and Clang vectorize a plain loop over them
// at -O2/-O3 with no -ffast-math and no -march flag (SSE2), as well as with AVX2/AVX-512:
//   * straight-line code: every special case is computed and then chosen with a ternary on
//     values (a compare and a blend in SIMD), never with an early return or a branch;
//   * no calls into libm and no table lookups; int <-> float reinterpretation through
//     __builtin_bit_cast (which vectorizes, where memcpy may not), conversions through
//     static_cast (cvttps2dq / cvtdq2ps);
//   * float <-> int rounding by conversion, not by the "add 1.5*2^23" trick, so the results
//     do not change under -fassociative-math (-ffast-math still breaks the NaN tests).
//
// Accuracy (checked over all 2^32 inputs in tests/expr/test_fast_math.cpp against the
// double-precision C library rounded to float): every function is within 2 ulp, see the
// table in that file. Special values follow C99 Annex F: NaN in -> NaN out, overflow to
// +-inf, underflow gradually (subnormal results, never flushed), exact exp(0) = 1,
// log(1) = 0, log(0) = -inf, log(<0) = NaN, signed zeros kept (tanh(-0) = -0, ...).
//
// The results do not depend on whether the compiler contracts a*b+c into an FMA: the
// error-free steps (Cody-Waite products, Fast2Sum) are exact either way.
//
// Host only: device code uses CUDA's own math library.
#pragma once

#include <cstdint>

#include "../core/config.hpp"

namespace ember::fast {
namespace detail {

EMBER_FORCEINLINE float as_float(std::uint32_t u) { return __builtin_bit_cast(float, u); }
EMBER_FORCEINLINE float as_float(std::int32_t i) { return __builtin_bit_cast(float, i); }
EMBER_FORCEINLINE std::uint32_t as_uint(float f) { return __builtin_bit_cast(std::uint32_t, f); }
EMBER_FORCEINLINE std::int32_t as_int(float f) { return __builtin_bit_cast(std::int32_t, f); }

inline constexpr std::uint32_t kSign = 0x80000000u;
inline constexpr float kInf = __builtin_huge_valf();
inline constexpr float kNaN = __builtin_nanf("");

/// 2^k for an integer k in [-126, 127].
EMBER_FORCEINLINE float pow2i(std::int32_t k) {
  return as_float(static_cast<std::uint32_t>(k + 127) << 23);
}

/// c ? a : b, as bit operations on the values. A ternary on floats becomes a branch that the
/// optimizer may specialise (it folds the whole computation for a constant arm), and with
/// the default -ftrapping-math the vectorizer then refuses the loop; masks never do that.
EMBER_FORCEINLINE float select(bool c, float a, float b) {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return as_float((as_uint(a) & m) | (as_uint(b) & ~m));
}

/// |x|, by clearing the sign bit.
EMBER_FORCEINLINE float abs(float x) { return as_float(as_uint(x) & ~kSign); }

/// |a| with the sign of s.
EMBER_FORCEINLINE float copysign(float a, float s) {
  return as_float((as_uint(a) & ~kSign) | (as_uint(s) & kSign));
}

/// x rounded to the nearest integer (halves away from zero), for |x| < 2^30.
EMBER_FORCEINLINE std::int32_t round_to_int(float x) {
  return static_cast<std::int32_t>(x + as_float((as_uint(x) & kSign) | 0x3f000000u));
}

// ln 2 in two pieces: the high one has 15 significant bits, so k * kLn2Hi is exact for
// |k| < 512 and x - k * kLn2Hi is exact when k = round(x / ln 2) (Sterbenz).
inline constexpr float kLn2Hi = 0x1.62e4p-1f;
inline constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
inline constexpr float kLog2e = 0x1.715476p+0f;

/// expm1(r) - r for |r| <= ln2/2 (+ slack): r^2 * P(r), P a degree-5 minimax fit with a
/// relative error of 2^-30 on expm1(r).
EMBER_FORCEINLINE float expm1_tail5(float r) {
  const float p = 0x1.a2a2d2p-13f;
  float q = p * r + 0x1.6d3c60p-10f;
  q = q * r + 0x1.110fd6p-7f;
  q = q * r + 0x1.5554fcp-5f;
  q = q * r + 0x1.555556p-3f;
  q = q * r + 0x1p-1f;
  return (r * r) * q;
}

/// As expm1_tail5 with a degree-4 P (relative error 2^-26 on expm1(r), 2^-27 on exp(r)).
EMBER_FORCEINLINE float expm1_tail4(float r) {
  float q = 0x1.6ab1dap-10f * r + 0x1.122c82p-7f;
  q = q * r + 0x1.55579ep-5f;
  q = q * r + 0x1.5554aap-3f;
  q = q * r + 0x1.fffffep-2f;
  return (r * r) * q;
}

/// Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2 (about): returns r, sets k.
/// Needs |x| < 2^8 * ln2 * ... (|k| < 512) and x not NaN.
EMBER_FORCEINLINE float reduce_ln2(float x, std::int32_t& k) {
  k = round_to_int(x * kLog2e);
  const float kf = static_cast<float>(k);
  return (x - kf * kLn2Hi) - kf * kLn2Lo;
}

/// y * 2^k for k in [-252, 254] with one rounding: two exact power-of-two steps, so that
/// subnormal results are rounded once and overflow gives inf.
EMBER_FORCEINLINE float scale2(float y, std::int32_t k) {
  const std::int32_t k1 = k >> 1;
  return y * pow2i(k1) * pow2i(k - k1);
}

// log(x) = e ln2 + log1p(f), m = 1 + f = x / 2^e in [sqrt(1/2), sqrt(2)): splits a positive
// normal float (the bits of sqrt(1/2) are 0x3f3504f3).
EMBER_FORCEINLINE float split_mantissa(float x, std::int32_t& e) {
  const std::int32_t ix = as_int(x) + (0x3f800000 - 0x3f3504f3);
  e = (ix >> 23) - 127;
  return as_float((ix & 0x007fffff) + 0x3f3504f3) - 1.0f;  // exact
}

/// For |f| <= sqrt(2) - 1: log1p(f) = f - hfsq + s (hfsq + R) exactly, with s = f / (2 + f),
/// hfsq = f^2 / 2 and R = 2 atanh(s) / s - 2 = z (2/3 + 2z/5 + ...), z = s^2. Returns
/// s (hfsq + R), R a degree-3 minimax fit (relative error 2^-29 on log1p(f)).
EMBER_FORCEINLINE float log1p_tail(float f, float hfsq) {
  const float s = f / (2.0f + f);
  const float z = s * s;
  const float R = z * (0x1.55557ap-1f + z * (0x1.995ed4p-2f + z * 0x1.31e0dap-2f));
  return s * (hfsq + R);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Exponentials
// ---------------------------------------------------------------------------------------------

/// e^x. Max error 1 ulp.
EMBER_FORCEINLINE float exp(float x) {
  // e^-104 < 2^-150 rounds to 0 and e^89 overflows; NaN becomes -104 here and is put back
  // at the end.
  float xc = detail::select(x > -104.0f, x, -104.0f);
  xc = detail::select(xc < 89.0f, xc, 89.0f);
  std::int32_t k;
  const float r = detail::reduce_ln2(xc, k);
  const float p = 1.0f + (r + detail::expm1_tail4(r));
  const float y = detail::scale2(p, k);
  return detail::select(x == x, y, x + x);
}

/// 2^x. Max error 1 ulp.
EMBER_FORCEINLINE float exp2(float x) {
  float xc = detail::select(x > -151.0f, x, -151.0f);
  xc = detail::select(xc < 129.0f, xc, 129.0f);
  const std::int32_t k = detail::round_to_int(xc);
  const float r = xc - static_cast<float>(k);  // exact, |r| <= 1/2
  // 2^r = 1 + r P(r), P a degree-5 minimax fit (relative error 2^-27).
  float q = 0x1.44ab8cp-13f * r + 0x1.5f05eap-10f;
  q = q * r + 0x1.3b2a4cp-7f;
  q = q * r + 0x1.c6af90p-5f;
  q = q * r + 0x1.ebfbe0p-3f;
  q = q * r + 0x1.62e430p-1f;
  const float y = detail::scale2(1.0f + r * q, k);
  return detail::select(x == x, y, x + x);
}

/// e^x - 1, accurate near 0 (expm1(-0) = -0). Max error 1 ulp.
EMBER_FORCEINLINE float expm1(float x) {
  // Below -30 the result rounds to -1.
  float xc = detail::select(x > -30.0f, x, -30.0f);
  xc = detail::select(xc < 89.0f, xc, 89.0f);
  const std::int32_t k = detail::round_to_int(xc * detail::kLog2e);
  const float kf = static_cast<float>(k);
  // r = rh - kf*ln2_lo rounded, and c its rounding error, so x = k ln2 + r + c.
  const float rh = xc - kf * detail::kLn2Hi;
  const float r = rh - kf * detail::kLn2Lo;
  const float c = (rh - r) - kf * detail::kLn2Lo;
  const float t = detail::expm1_tail5(r);  // expm1(r) = r + t
  // e^x - 1 = s (1 + r + t + c (1 + r)) - 1 with s = 2^k, summed as (s - 1) + s r + the
  // small terms; s - 1 and s r are split exactly (Fast2Sum, |s - 1| >= |s r| for k != 0).
  // For k > 64 the -1 is far below an ulp, so s is applied as 2^64 * 2^(k-64).
  const std::int32_t k1 = k < 64 ? k : 64;  // integer min: no FP in the arms
  const float s = detail::pow2i(k1);
  const float a = s - 1.0f;
  const float ea = (s - a) - 1.0f;  // error of a (nonzero only for k > 24)
  const float b = s * r;
  const float hi = a + b;
  const float lo = b - (hi - a);  // exact: a + b = hi + lo
  const float small = (lo + ea) + s * (t + (c + c * r));
  const float y = (hi + small) * detail::pow2i(k - k1);
  const float y2 = detail::select(x == 0.0f, x, y);  // -0 -> -0
  return detail::select(x == x, y2, x + x);
}

// ---------------------------------------------------------------------------------------------
// Logarithms
// ---------------------------------------------------------------------------------------------

/// Natural logarithm: log(0) = -inf, log(x < 0) = NaN, log(1) = +0. Max error 1 ulp.
EMBER_FORCEINLINE float log(float x) {
  const bool tiny = x < 0x1p-126f;  // subnormals (and 0, negatives): scale by 2^23 first
  std::int32_t e;
  const float f = detail::split_mantissa(detail::select(tiny, x * 0x1p23f, x), e);
  const float ek = static_cast<float>(e - (tiny ? 23 : 0));
  const float hfsq = 0.5f * f * f;
  const float r = detail::log1p_tail(f, hfsq);
  // e ln2_hi is exact; the rest is small next to it when e != 0, and for e == 0 f is exact.
  const float y = ek * detail::kLn2Hi - ((hfsq - (r + ek * detail::kLn2Lo)) - f);
  const float special = detail::select(x == 0.0f, -detail::kInf,
                                       detail::select(x < 0.0f, detail::kNaN, x));
  return detail::select((x > 0.0f) & (x < detail::kInf), y, special);
}

/// Base-2 logarithm; exact for powers of two. Max error 1 ulp.
EMBER_FORCEINLINE float log2(float x) {
  const bool tiny = x < 0x1p-126f;
  std::int32_t e;
  const float f = detail::split_mantissa(detail::select(tiny, x * 0x1p23f, x), e);
  const float ek = static_cast<float>(e - (tiny ? 23 : 0));
  const float hfsq = 0.5f * f * f;
  const float r = detail::log1p_tail(f, hfsq);
  // log1p(f) = hi + lo with hi = f - hfsq cut to 12 significant bits, so that hi * (1/ln2)_hi
  // (12 bits too) is exact; then e + that product is summed exactly (Fast2Sum, |e| >= 1 or 0).
  const float hi = detail::as_float(detail::as_uint(f - hfsq) & 0xfffff000u);
  const float lo = ((f - hi) - hfsq) + r;
  constexpr float kInvLn2Hi = 0x1.716p+0f;
  constexpr float kInvLn2Lo = -0x1.7135a8p-13f;
  const float vhi = hi * kInvLn2Hi;
  float vlo = (lo + hi) * kInvLn2Lo + lo * kInvLn2Hi;
  const float w = ek + vhi;
  vlo += (ek - w) + vhi;
  const float y = vlo + w;
  const float special = detail::select(x == 0.0f, -detail::kInf,
                                       detail::select(x < 0.0f, detail::kNaN, x));
  return detail::select((x > 0.0f) & (x < detail::kInf), y, special);
}

/// log(1 + x), accurate near 0 (log1p(-0) = -0); log1p(-1) = -inf, log1p(x < -1) = NaN.
/// Max error 1 ulp.
EMBER_FORCEINLINE float log1p(float x) {
  const float u = 1.0f + x;
  std::int32_t e;
  const float fu = detail::split_mantissa(u, e);
  // When 1 + x lies in [sqrt(1/2), sqrt(2)) take f = x itself (exact); otherwise f = u/2^e - 1
  // and c / u, c = x - (u - 1) the rounding error of u, corrects log(u) to first order.
  const bool near = e == 0;
  const float f = detail::select(near, x, fu);
  const float c = detail::select(near, 0.0f, (x - (u - 1.0f)) / u);
  const float ek = static_cast<float>(e);
  const float hfsq = 0.5f * f * f;
  const float r = detail::log1p_tail(f, hfsq);
  const float y = ek * detail::kLn2Hi - ((hfsq - (r + (ek * detail::kLn2Lo + c))) - f);
  // |x| < 2^-25 (zeros included): log1p(x) rounds to x.
  const float y2 = detail::select(detail::abs(x) < 0x1p-25f, x, y);
  const float special = detail::select(x == -1.0f, -detail::kInf,
                                       detail::select(x < -1.0f, detail::kNaN, x));
  return detail::select((x > -1.0f) & (x < detail::kInf), y2, special);
}

}  // namespace ember::fast
