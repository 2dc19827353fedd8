// Vectorizable float transcendentals for the host: ember::fast::exp, exp2, expm1, log, log2,
// log1p, tanh, sigmoid, erf, sin, cos, tan, sqrt, rsqrt; and exp_nonpositive, softmax's
// exponential (exp's bits where the result is a normal float, else 0).
//
// The C library's expf, tanhf, ... are opaque calls, so a loop over them never becomes SIMD
// code. These functions are written so that GCC vectorizes a plain loop over them (and the
// executor's fixed-size at_vec loops) at -O2/-O3 with no -ffast-math and no -march flag
// (SSE2), as well as with AVX2/FMA and AVX-512, provided every caller up to the loop is
// inlined (at -O2 GCC may keep a functor's operator() holding erf out of line: make it
// EMBER_FORCEINLINE). How:
//   * straight-line code: every special case is computed and then chosen by a select on
//     values, written as bit operations (see detail::select for why not a ternary); no early
//     return, no branch, no call into libm, no table;
//   * int <-> float reinterpretation through __builtin_bit_cast, which vectorizes;
//   * the arms of a select are plain values: GCC (with the default -ftrapping-math) will not
//     if-convert a ternary whose arm computes something, or an && between FP comparisons.
//
// Accuracy, checked over all 2^32 inputs by tests/expr/test_fast_math.cpp against the double
// C library rounded to float: every function is within 1 ulp (the bound asked is 2), for
// subnormal results too (counted in subnormal spacing; nothing is flushed to zero), with and
// without FMA contraction (-march=x86-64-v3 gives the same bounds; the last bit may differ).
// Special values follow C99 Annex F: NaN in -> NaN out, overflow to +-inf, gradual
// underflow, exp(0) = 1, log(1) = +0, log(0) = -inf, log(x < 0) = NaN, tanh(+-inf) = +-1,
// erf(+-inf) = +-1, and signed zeros where the C library keeps them (expm1, log1p, tanh, erf,
// sin, tan, sqrt of -0 give -0).
//
// Not for -ffast-math: -ffinite-math-only removes the NaN and infinity handling, and
// -fassociative-math folds the 1.5*2^23 rounding trick (detail::round_int) to nothing.
//
// Speed: sin, cos and tan reduce any float exactly, in double, and are no faster than glibc's
// sinf/cosf unless AVX-512 is enabled; sqrt and rsqrt are the hardware instruction, which GCC
// vectorizes only under -fno-math-errno. The rest run 1.5-6x (SSE2) and 5-20x (AVX2+FMA)
// faster than glibc's float functions.
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
  return as_float((static_cast<std::uint32_t>(k) + 127u) << 23);
}

/// c ? a : b, as bit operations on the values. A ternary on floats becomes a branch that the
/// optimizer may specialise (it folds the whole computation for a constant arm), and with
/// the default -ftrapping-math the vectorizer then refuses the loop; masks never do that.
EMBER_FORCEINLINE float select(bool c, float a, float b) {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return as_float((as_uint(a) & m) | (as_uint(b) & ~m));
}

/// c ? a : b for integers, as bit operations (for the same reason).
EMBER_FORCEINLINE std::int32_t select(bool c, std::int32_t a, std::int32_t b) {
  const std::int32_t m = -static_cast<std::int32_t>(c);
  return (a & m) | (b & ~m);
}

/// |x|, by clearing the sign bit.
EMBER_FORCEINLINE float abs(float x) { return as_float(as_uint(x) & ~kSign); }

/// |a| with the sign of s.
EMBER_FORCEINLINE float copysign(float a, float s) {
  return as_float((as_uint(a) & ~kSign) | (as_uint(s) & kSign));
}

/// t rounded to the nearest integer (ties to even), for |t| < 2^22: returned as a float, and
/// as an int in k. t + 1.5*2^23 has an ulp of 1, so adding it rounds t, and its low mantissa
/// bits are the integer. (Two additions instead of the conversions' four operations on SSE2.
/// Needs IEEE semantics: -fassociative-math / -ffast-math would fold t + c - c to t. A NaN t
/// gives a NaN float and a meaningless, but defined, k.)
EMBER_FORCEINLINE float round_int(float t, std::int32_t& k) {
  constexpr float kMagic = 0x1.8p23f;
  const float u = t + kMagic;
  k = static_cast<std::int32_t>(as_uint(u) - as_uint(kMagic));
  return u - kMagic;
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
/// Needs |x| < 350 (|k| < 512); a NaN x gives a NaN r.
EMBER_FORCEINLINE float reduce_ln2(float x, std::int32_t& k) {
  const float kf = round_int(x * kLog2e, k);
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
/// s (hfsq + R), R / z a degree-2 minimax fit in z (relative error 2^-29 on log1p(f)).
EMBER_FORCEINLINE float log1p_tail(float f, float hfsq) {
  const float s = f / (2.0f + f);
  const float z = s * s;
  const float R = z * (0x1.55557ap-1f + z * (0x1.995ed4p-2f + z * 0x1.31e0dap-2f));
  return s * (hfsq + R);
}

/// c ? a : b for doubles, as bit operations.
EMBER_FORCEINLINE double select(bool c, double a, double b) {
  const std::uint64_t m = 0u - static_cast<std::uint64_t>(c);
  return __builtin_bit_cast(double, (__builtin_bit_cast(std::uint64_t, a) & m) |
                                        (__builtin_bit_cast(std::uint64_t, b) & ~m));
}

/// Round to the nearest integer (ties to even) for |t| <= 2^51, in double.
EMBER_FORCEINLINE double rint_small(double t) {
  constexpr double kMagic = 0x1.8p52;
  return (t + kMagic) - kMagic;
}

/// Payne-Hanek style reduction of a float, in double and without tables: returns r with
/// |x| = (4m + j) pi/2 + r, |r| <= pi/4 (about), and the quadrant j in 0..3.
///
/// x = M 2^E (M < 2^24 an integer). For E >= B the multiples of 4 in 2^B (2/pi) contribute
/// multiples of 4 to x (2/pi), so with V = 2^B (2/pi) mod 4, x (2/pi) = (x / 2^B) V (mod 4).
/// V is held as V1 + V2 + V3 (29, 29 and 53 bits), pre-scaled by 2^-B, for B = 0, 20, 40, 60
/// and 80, picked by the size of x: x V1 and x V2 are exact products, x V1 is reduced mod 4
/// exactly, and the sum is carried with its rounding error (TwoSum), so the fraction is good
/// to about 2^-62 absolutely. That is enough for every float: the exhaustive test finds sin,
/// cos and tan within 1 ulp on all 2^32 inputs, those closest to a multiple of pi/2 included.
EMBER_FORCEINLINE double reduce_pio2(float x, std::int32_t& j) {
  const double ax = static_cast<double>(abs(x));
  const bool g1 = ax >= 0x1p43, g2 = ax >= 0x1p63, g3 = ax >= 0x1p83, g4 = ax >= 0x1p103;
  double v1 = select(g1, 0x1.b727220000000p-23, 0x1.45f306c000000p-1);
  double v2 = select(g1, 0x1.529fc20000000p-52, 0x1.c9c882a000000p-29);
  double v3 = select(g1, 0x1.d5f47d4d37703p-78, 0x1.4fe13abe8fa9ap-59);
  v1 = select(g2, 0x1.220a94f000000p-39, v1);
  v2 = select(g2, 0x1.c2757d1000000p-68, v2);
  v3 = select(g2, 0x1.ea69bb81b6c53p-97, v3);
  v1 = select(g3, 0x1.4fe13ab000000p-59, v1);
  v2 = select(g3, 0x1.d1f534d000000p-88, v2);
  v3 = select(g3, 0x1.b81b6c52b3279p-117, v3);
  v1 = select(g4, 0x1.abe8fa9000000p-79, v1);
  v2 = select(g4, 0x1.4ddc0db000000p-108, v2);
  v3 = select(g4, 0x1.8a5664f10e410p-138, v3);
  const double p1 = ax * v1;                           // exact (24 x 29 bits), < 2^51
  const double p2 = ax * v2;                           // exact, < 2^23
  const double p3 = ax * v3;                           // small, rounded
  const double f1 = p1 - 4.0 * rint_small(0.25 * p1);  // p1 mod 4, exact
  // s + e = f1 + p2 exactly (TwoSum).
  const double s = f1 + p2;
  const double bb = s - f1;
  const double e = (f1 - (s - bb)) + (p2 - bb);
  const double n = rint_small(s);
  const double frac = (s - n) + (e + p3);           // s - n is exact
  const double nn = select(abs(x) < kInf, n, 0.0);  // NaN/inf input: r is NaN anyway
  j = static_cast<std::int32_t>(nn) & 3;
  return frac * 0x1.921fb54442d18p+0;
}

/// sin(r) and cos(r) for |r| <= pi/4 (relative errors 2^-37 and 2^-43), in double.
EMBER_FORCEINLINE double sin_kernel(double r, double z) {
  double p = 0x1.6cd1f1fc741ffp-19 * z - 0x1.a00f7f25e9589p-13;
  p = p * z + 0x1.1111086a5e0e4p-7;
  p = p * z - 0x1.5555554c71cd5p-3;
  return r + (r * z) * p;
}
EMBER_FORCEINLINE double cos_kernel(double z) {
  double p = -0x1.241e9c0d430dep-22 * z + 0x1.a010decfe8f12p-16;
  p = p * z - 0x1.6c16b82a14665p-10;
  p = p * z + 0x1.5555554ed983fp-5;
  return (1.0 - 0.5 * z) + (z * z) * p;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Exponentials
// ---------------------------------------------------------------------------------------------

/// e^x. Max error 1 ulp.
EMBER_FORCEINLINE float exp(float x) {
  // e^-104 < 2^-150 rounds to 0 and e^89 overflows. Below -104 the result is a selected 0 and
  // the arithmetic runs on x = 0 instead: scaling down to zero would pass through subnormal
  // arithmetic, a microcode assist of about a hundred cycles on x86 (in every lane of a vector),
  // and -inf is common (attention's masked logits). The comparisons are false for NaN, which
  // flows through the arithmetic.
  const bool zero = x < -104.0f;
  float xc = detail::select(zero, 0.0f, x);
  xc = detail::select(xc > 89.0f, 89.0f, xc);
  std::int32_t k;
  const float r = detail::reduce_ln2(xc, k);
  const float p = 1.0f + (r + detail::expm1_tail4(r));
  return detail::select(zero, 0.0f, detail::scale2(p, k));
}

/// e^x for x <= 0, as a softmax takes it (differences from a row's maximum): the bits of exp(x)
/// on (-87, 0], +0 at -87 and below (e^-87 = 1.6e-38, just above the smallest normal float: a
/// softmax's sum is at least 1, so what is dropped is below 2^-125 of it), NaN for NaN. Cheaper
/// than exp by the overflow clamp and the two-step scaling that subnormal results need: every
/// result it computes is normal, so one multiply by 2^k is exact. Positive x up to 88 gives
/// exp's bits too (a recomputed score may pass its row's maximum by a rounding); above 88 is
/// outside its domain.
EMBER_FORCEINLINE float exp_nonpositive(float x) {
  const bool zero = x <= -87.0f;  // false for NaN
  const float xc = detail::select(zero, 0.0f, x);
  std::int32_t k;  // in [-126, 0]
  const float r = detail::reduce_ln2(xc, k);
  const float p = 1.0f + (r + detail::expm1_tail4(r));
  return detail::select(zero, 0.0f, p * detail::pow2i(k));
}

/// 2^x. Max error 1 ulp.
EMBER_FORCEINLINE float exp2(float x) {
  float xc = detail::select(x < -151.0f, -151.0f, x);  // NaN stays NaN
  xc = detail::select(xc > 129.0f, 129.0f, xc);
  std::int32_t k;
  const float r = xc - detail::round_int(xc, k);  // exact, |r| <= 1/2
  // 2^r = 1 + r P(r), P a degree-5 minimax fit (relative error 2^-27).
  float q = 0x1.44ab8cp-13f * r + 0x1.5f05eap-10f;
  q = q * r + 0x1.3b2a4cp-7f;
  q = q * r + 0x1.c6af90p-5f;
  q = q * r + 0x1.ebfbe0p-3f;
  q = q * r + 0x1.62e430p-1f;
  return detail::scale2(1.0f + r * q, k);
}

/// e^x - 1, accurate near 0 (expm1(-0) = -0). Max error 1 ulp.
EMBER_FORCEINLINE float expm1(float x) {
  // Below -30 the result rounds to -1. NaN stays NaN.
  float xc = detail::select(x < -30.0f, -30.0f, x);
  xc = detail::select(xc > 89.0f, 89.0f, xc);
  std::int32_t k;
  const float kf = detail::round_int(xc * detail::kLog2e, k);
  // r = rh - kf*ln2_lo rounded, and c its rounding error, so x = k ln2 + r + c.
  const float rh = xc - kf * detail::kLn2Hi;
  const float r = rh - kf * detail::kLn2Lo;
  const float c = (rh - r) - kf * detail::kLn2Lo;
  const float t = detail::expm1_tail5(r);  // expm1(r) = r + t
  // e^x - 1 = s (1 + r + t + c (1 + r)) - 1 with s = 2^k, summed as (s - 1) + s r + the
  // small terms; s - 1 and s r are split exactly (Fast2Sum, |s - 1| >= |s r| for k != 0).
  // For k > 64 the -1 is far below an ulp, so s is applied as 2^64 * 2^(k-64).
  const std::int32_t k1 = detail::select(k < 64, k, 64);
  const float s = detail::pow2i(k1);
  const float a = s - 1.0f;
  const float ea = (s - a) - 1.0f;  // error of a (nonzero only for k > 24)
  const float b = s * r;
  const float hi = a + b;
  const float lo = b - (hi - a);  // exact: a + b = hi + lo
  const float small = (lo + ea) + s * (t + (c + c * r));
  const float y = (hi + small) * detail::pow2i(k - k1);
  return detail::select(x == 0.0f, x, y);  // -0 -> -0
}

// ---------------------------------------------------------------------------------------------
// Logarithms
// ---------------------------------------------------------------------------------------------

/// Natural logarithm: log(0) = -inf, log(x < 0) = NaN, log(1) = +0. Max error 1 ulp.
EMBER_FORCEINLINE float log(float x) {
  const bool tiny = x < 0x1p-126f;  // subnormals (and 0, negatives): scale by 2^23 first
  std::int32_t e;
  const float f = detail::split_mantissa(detail::select(tiny, x * 0x1p23f, x), e);
  const float ek = static_cast<float>(e - detail::select(tiny, 23, 0));
  const float hfsq = 0.5f * f * f;
  const float r = detail::log1p_tail(f, hfsq);
  // e ln2_hi is exact; the rest is small next to it when e != 0, and for e == 0 f is exact.
  const float y = ek * detail::kLn2Hi - ((hfsq - (r + ek * detail::kLn2Lo)) - f);
  const float special =
      detail::select(x == 0.0f, -detail::kInf, detail::select(x < 0.0f, detail::kNaN, x));
  return detail::select((x > 0.0f) & (x < detail::kInf), y, special);
}

/// Base-2 logarithm; exact for powers of two. Max error 1 ulp.
EMBER_FORCEINLINE float log2(float x) {
  const bool tiny = x < 0x1p-126f;
  std::int32_t e;
  const float f = detail::split_mantissa(detail::select(tiny, x * 0x1p23f, x), e);
  const float ek = static_cast<float>(e - detail::select(tiny, 23, 0));
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
  const float special =
      detail::select(x == 0.0f, -detail::kInf, detail::select(x < 0.0f, detail::kNaN, x));
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
  const float special =
      detail::select(x == -1.0f, -detail::kInf, detail::select(x < -1.0f, detail::kNaN, x));
  return detail::select((x > -1.0f) & (x < detail::kInf), y2, special);
}

// ---------------------------------------------------------------------------------------------
// Activation functions
// ---------------------------------------------------------------------------------------------

/// Hyperbolic tangent: odd (tanh(-0) = -0), tanh(+-inf) = +-1. Max error 1 ulp.
EMBER_FORCEINLINE float tanh(float x) {
  // |x| < 0.625: x + x^3 P(x^2), P a degree-4 minimax fit (relative error 2^-27.7).
  const float z = x * x;
  float p = -0x1.750ce2p-8f * z + 0x1.51f8cep-6f;
  p = p * z - 0x1.b835a4p-5f;
  p = p * z + 0x1.1106f6p-3f;
  p = p * z - 0x1.555532p-2f;
  const float small = x + (x * z) * p;
  // |x| >= 0.625: 1 - 2 / (e^2|x| + 1), with e^2|x| = 2^k (1 + q) and the denominator
  // (2^k + 1) + 2^k q rounded once (2^k + 1 is exact while it matters). Past 9.5 the result
  // rounds to 1.
  const float ax = detail::abs(x);
  const float axc = detail::select(ax < 9.5f, ax, 9.5f);  // NaN takes the small path below
  std::int32_t k;
  const float r = detail::reduce_ln2(axc + axc, k);
  const float q = r + detail::expm1_tail4(r);
  const float sk = detail::pow2i(k);
  const float big = 1.0f - 2.0f / ((sk + 1.0f) + sk * q);
  // The sign comes from x on both paths (so tanh(-0) = -0).
  return detail::copysign(detail::select(ax >= 0.625f, big, small), x);
}

/// The logistic function 1 / (1 + e^-x). Max error 1 ulp.
EMBER_FORCEINLINE float sigmoid(float x) {
  // e^-x = 2^k (1 + q). Dividing through by 2^max(k, 0):
  //   sigmoid(x) = 2^-max(k,0) / ((1 + m) + b q),  m = 2^-|k|,  b = 1 if k > 0 else 2^k,
  // with the denominator summed exactly as d_hi + d_lo (two Fast2Sums: 1 >= m and
  // 1 + m > |b q|), so that 1/d = R - R^2 d_lo, R = 1/d_hi, has just two roundings (with one
  // plain division the error reaches 2 ulp). Below -110 the result is 0 and above 20 it is 1;
  // NaN stays NaN through the clamps and the arithmetic.
  float xc = detail::select(x < -110.0f, -110.0f, x);
  xc = detail::select(xc > 20.0f, 20.0f, xc);
  std::int32_t k;
  const float r = detail::reduce_ln2(-xc, k);
  const float q = r + detail::expm1_tail4(r);
  const bool pos = k > 0;
  const std::int32_t nk = static_cast<std::int32_t>(0u - static_cast<std::uint32_t>(k));
  const std::int32_t ak = detail::select(pos, detail::select(k < 120, k, 120), nk);  // |k|
  const float m = detail::pow2i(-ak);
  const float b = detail::select(pos, 1.0f, m);
  const float a = 1.0f + m;
  const float a_lo = m - (a - 1.0f);
  const float bq = b * q;
  const float d_hi = a + bq;
  const float d_lo = (bq - (d_hi - a)) + a_lo;
  const float R = 1.0f / d_hi;
  return detail::scale2(R - R * (R * d_lo), detail::select(pos, nk, 0));
}

// ---------------------------------------------------------------------------------------------
// Error function
// ---------------------------------------------------------------------------------------------

/// The error function: odd (erf(-0) = -0), erf(+-inf) = +-1. Max error 1 ulp.
EMBER_FORCEINLINE float erf(float x) {
  // |x| < 1: x + x Q(x^2), Q a degree-6 minimax fit (relative error 2^-29).
  const float z = x * x;
  float p = 0x1.4771fep-14f * z - 0x1.a3515ep-11f;
  p = p * z + 0x1.53f224p-8f;
  p = p * z - 0x1.b7f71ap-6f;
  p = p * z + 0x1.ce2ce6p-4f;
  p = p * z - 0x1.81273ep-2f;
  p = p * z + 0x1.06eba8p-3f;
  const float small = x + x * p;
  // 1 <= |x| < 4: 1 - e^-x^2 P(|x| - 2.5), P a degree-9 fit of erfc(x) e^(x^2) (absolute
  // error 2^-31 on erfc). From 4 on erf rounds to 1.
  const float ax = detail::abs(x);
  const float axc = detail::select(ax < 4.0f, ax, 4.0f);  // NaN takes the small path below
  const float t = axc - 2.5f;
  float g = -0x1.d28a68p-16f * t - 0x1.daac50p-15f;
  g = g * t - 0x1.175506p-13f;
  g = g * t + 0x1.dca718p-13f;
  g = g * t - 0x1.53760ap-11f;
  g = g * t + 0x1.4a5498p-9f;
  g = g * t - 0x1.062d5cp-7f;
  g = g * t + 0x1.9870f6p-6f;
  g = g * t - 0x1.3088fcp-4f;
  g = g * t + 0x1.afbb3cp-3f;
  std::int32_t k;
  const float r = detail::reduce_ln2(-(axc * axc), k);
  const float e = detail::pow2i(k) * (1.0f + (r + detail::expm1_tail4(r)));  // e^-x^2
  const float big = 1.0f - e * g;
  return detail::copysign(detail::select(ax >= 1.0f, big, small), x);
}

// ---------------------------------------------------------------------------------------------
// Trigonometric functions
// ---------------------------------------------------------------------------------------------
// Computed in double from an exact reduction (any finite float, however large), then rounded
// once to float: within 0.51 ulp, so at most 1 ulp from the correctly rounded result.

/// Sine (odd: sin(-0) = -0); sin(+-inf) = NaN. Max error 1 ulp.
EMBER_FORCEINLINE float sin(float x) {
  std::int32_t j;
  const double r = detail::reduce_pio2(x, j);
  const double z = r * r;
  const float s = static_cast<float>(detail::sin_kernel(r, z));
  const float c = static_cast<float>(detail::cos_kernel(z));
  const float v = detail::select((j & 1) != 0, c, s);
  // sin(|x|) is negative in quadrants 2 and 3; sin is odd.
  const std::uint32_t flip =
      (static_cast<std::uint32_t>(j & 2) << 30) ^ (detail::as_uint(x) & detail::kSign);
  return detail::as_float(detail::as_uint(v) ^ flip);
}

/// Cosine; cos(+-inf) = NaN. Max error 1 ulp.
EMBER_FORCEINLINE float cos(float x) {
  std::int32_t j;
  const double r = detail::reduce_pio2(x, j);
  const double z = r * r;
  const float s = static_cast<float>(detail::sin_kernel(r, z));
  const float c = static_cast<float>(detail::cos_kernel(z));
  const float v = detail::select((j & 1) != 0, s, c);
  // cos(|x|) is negative in quadrants 1 and 2.
  const std::uint32_t flip = static_cast<std::uint32_t>((j + 1) & 2) << 30;
  return detail::as_float(detail::as_uint(v) ^ flip);
}

/// Tangent (odd: tan(-0) = -0); tan(+-inf) = NaN. Max error 1 ulp.
EMBER_FORCEINLINE float tan(float x) {
  std::int32_t j;
  const double r = detail::reduce_pio2(x, j);
  const double z = r * r;
  const double s = detail::sin_kernel(r, z);
  const double c = detail::cos_kernel(z);
  // tan = s/c in quadrants 0 and 2, -c/s in 1 and 3 (chosen by multiplying with 0 and 1:
  // a double select on an int condition does not vectorize on SSE2).
  const double odd = static_cast<double>(j & 1);
  const double even = 1.0 - odd;
  const double num = s * even - c * odd;
  const double den = c * even + s * odd;
  const float v = static_cast<float>(num / den);
  return detail::as_float(detail::as_uint(v) ^ (detail::as_uint(x) & detail::kSign));
}

// ---------------------------------------------------------------------------------------------
// Square roots
// ---------------------------------------------------------------------------------------------
// The hardware instruction, correctly rounded. GCC treats sqrtf as setting errno for x < 0,
// so with the default -fmath-errno it emits sqrtss plus a test and a rarely taken call, and a
// loop over it is NOT vectorized; with -fno-math-errno (or -ffast-math) it becomes sqrtps.
// No errno-free spelling exists in GCC 12 (__builtin_sqrtf, std::sqrt, a nonnegative
// argument, an optimize attribute: all keep the check).

/// Square root (sqrt(-0) = -0, sqrt(x < 0) = NaN). Correctly rounded.
EMBER_FORCEINLINE float sqrt(float x) { return __builtin_sqrtf(x); }

/// 1 / sqrt(x) (rsqrt(+-0) = +-inf, rsqrt(inf) = 0). Two roundings: max error 1 ulp.
EMBER_FORCEINLINE float rsqrt(float x) { return 1.0f / __builtin_sqrtf(x); }

}  // namespace ember::fast
