// Tests for ember::bf16 and ember::half: conversions checked exhaustively (all 2^32 floats)
// against an independent reference rounding and, where the CUDA headers are available, against
// CUDA's own host implementations; round trips, numeric_limits, arithmetic and printing.
#include <catch2/catch.hpp>

#include "support/bits.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <type_traits>

#include <ember/core/bf16.hpp>
#include <ember/core/half.hpp>

#if __has_include(<cuda_bf16.h>) && __has_include(<cuda_fp16.h>)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define EMBER_TEST_HAVE_CUDA_HEADERS 1
#endif

namespace {

using ember::bf16;
// ember::half is spelt out: CUDA's headers declare a global `half` (typedef __half half).

using ember::testing::bits_of;
using ember::testing::float_from_bits;

double pow2(int e) {  // 2^e, built from the exponent field (|e| < 1023)
  const uint64_t b = static_cast<uint64_t>(1023 + e) << 52;
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}

int binade(double a) {  // floor(log2(a)) for a positive normal double
  uint64_t b;
  std::memcpy(&b, &a, sizeof b);
  return static_cast<int>(b >> 52) - 1023;
}

// Reference rounding, in double arithmetic: the representable neighbours of |f| are k*q and
// (k+1)*q for the quantum q of |f|'s binade (clamped to the subnormal quantum); pick the nearer,
// ties to the even k. Values that round to 2^(emax+1) or beyond are infinities. Written from the
// IEEE definition, not from the implementation's integer trick.
//   mant_bits: explicit mantissa bits of the target (7 for bf16, 10 for half)
//   emin: smallest normal exponent of the target (-126 for bf16, -14 for half)
//   limit: 2^(emax+1), the first value that is infinite (2^128, 2^16)
struct Format {
  int mant_bits;
  int emin;
  double limit;
  uint16_t inf_bits;
};
constexpr Format kBf16{7, -126, 0x1p128, 0x7F80};
constexpr Format kHalf{10, -14, 0x1p16, 0x7C00};

template <const Format& fmt>
uint16_t reference_round(float f) {
  if (std::isnan(f)) return 0x7FFF;  // CUDA's canonical NaN for both formats
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isinf(f)) return sign | fmt.inf_bits;
  const double a = std::fabs(static_cast<double>(f));  // float subnormals are normal doubles
  if (a >= fmt.limit) return sign | fmt.inf_bits;
  if (a < pow2(fmt.emin - fmt.mant_bits - 1)) return sign;  // below half the smallest subnormal
  const int e = std::max(binade(a), fmt.emin);
  const double q = pow2(e - fmt.mant_bits);
  int64_t k = static_cast<int64_t>(a * pow2(fmt.mant_bits - e));  // floor; the product is exact
  const double rem = a - static_cast<double>(k) * q;              // exact
  k += (rem > q / 2) | ((rem == q / 2) & (k & 1));  // bitwise: no unpredictable branches
  const double value = static_cast<double>(k) * q;
  if (value >= fmt.limit) return sign | fmt.inf_bits;
  // Encode the value, which is exactly a float: through the float's fields.
  const uint32_t fb = bits_of(static_cast<float>(value));
  if constexpr (fmt.mant_bits == 7) return sign | static_cast<uint16_t>(fb >> 16);
  if (value < pow2(fmt.emin)) {  // half subnormal: an integer number of quanta 2^-24
    return sign | static_cast<uint16_t>(value * pow2(fmt.mant_bits - fmt.emin));
  }
  const uint32_t exponent = (fb >> 23) - 127 + 15, mantissa = (fb >> 13) & 0x3FF;
  return sign | static_cast<uint16_t>((exponent << 10) | mantissa);
}

}  // namespace

TEST_CASE("bf16/half: the reference rounding agrees with hand-checked values", "[bf16][half]") {
  CHECK(reference_round<kHalf>(1.0f) == 0x3C00);
  CHECK(reference_round<kHalf>(65504.0f) == 0x7BFF);
  CHECK(reference_round<kHalf>(65519.99f) == 0x7BFF);
  CHECK(reference_round<kHalf>(65520.0f) == 0x7C00);
  CHECK(reference_round<kHalf>(0x1p-24f) == 0x0001);
  CHECK(reference_round<kHalf>(0x1p-25f) == 0x0000);
  CHECK(reference_round<kHalf>(0x1.8p-24f) == 0x0002);
  CHECK(reference_round<kHalf>(-0x1p-14f) == 0x8400);
  CHECK(reference_round<kBf16>(1.0f) == 0x3F80);
  CHECK(reference_round<kBf16>(float_from_bits(0x3F808000)) == 0x3F80);  // tie to even
  CHECK(reference_round<kBf16>(float_from_bits(0x3F818000)) == 0x3F82);  // tie to even (up)
  CHECK(reference_round<kBf16>(float_from_bits(0x7F7FFFFF)) == 0x7F80);
  CHECK(reference_round<kBf16>(float_from_bits(0x00000001)) == 0x0000);
  CHECK(reference_round<kBf16>(float_from_bits(0x00008000)) == 0x0000);  // tie to even (down)
  CHECK(reference_round<kBf16>(float_from_bits(0x00018000)) == 0x0002);
}

TEST_CASE("bf16/half: float conversion is correctly rounded for all 2^32 floats",
          "[bf16][half][exhaustive]") {
  // One pass over all floats, +x and -x together (the reference is computed for +x; rounding to
  // nearest is symmetric, so -x must give the same bits with the sign set, NaN aside). Checks
  // 0/1: bf16/half against the reference; 2/3: against CUDA's host __float2bfloat16_rn and
  // __float2half_rn.
  int64_t count[4] = {0, 0, 0, 0};
  int64_t first[4] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};  // float bit patterns
#pragma omp parallel for schedule(dynamic, 1 << 20) reduction(+ : count[:4]) \
    reduction(min : first[:4])
  for (int64_t i = 0; i <= int64_t{0x7FFFFFFF}; ++i) {
    const float pos = float_from_bits(static_cast<uint32_t>(i));
    const float neg = float_from_bits(static_cast<uint32_t>(i) | 0x80000000u);
    const uint16_t bp = ember::float_to_bf16_bits(pos), bn = ember::float_to_bf16_bits(neg);
    const uint16_t hp = ember::float_to_half_bits(pos), hn = ember::float_to_half_bits(neg);
    const uint16_t rb = reference_round<kBf16>(pos), rh = reference_round<kHalf>(pos);
    const bool nan = std::isnan(pos);
    int64_t bad[4] = {0, 0, 0, 0};  // 1: +x wrong, 2: -x wrong
    bad[0] = (bp != rb) | (bn != (nan ? rb : rb | 0x8000)) << 1;
    bad[1] = (hp != rh) | (hn != (nan ? rh : rh | 0x8000)) << 1;
#if defined(EMBER_TEST_HAVE_CUDA_HEADERS)
    bad[2] = (bp != static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(pos)).x) |
             (bn != static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(neg)).x) << 1;
    bad[3] = (hp != static_cast<__half_raw>(__float2half_rn(pos)).x) |
             (hn != static_cast<__half_raw>(__float2half_rn(neg)).x) << 1;
#endif
    for (int c = 0; c < 4; ++c) {
      if (bad[c] == 0) continue;
      count[c] += (bad[c] & 1) + (bad[c] >> 1);
      const int64_t pattern = (bad[c] & 1) ? i : (i | int64_t{0x80000000});
      if (pattern < first[c]) first[c] = pattern;
    }
  }
  const char* names[4] = {"bf16 vs reference", "half vs reference", "bf16 vs __float2bfloat16_rn",
                          "half vs __float2half_rn"};
  for (int c = 0; c < 4; ++c) {
    INFO(names[c] << ": " << count[c] << " mismatches");
    if (count[c] != 0) {
      const float f = float_from_bits(static_cast<uint32_t>(first[c]));
      UNSCOPED_INFO("first mismatch: float bits 0x"
                    << std::hex << first[c] << " (" << f << "): got 0x"
                    << (c % 2 ? ember::float_to_half_bits(f) : ember::float_to_bf16_bits(f))
                    << ", reference 0x"
                    << (c % 2 ? reference_round<kHalf>(f) : reference_round<kBf16>(f)));
    }
    CHECK(count[c] == 0);
  }
#if !defined(EMBER_TEST_HAVE_CUDA_HEADERS)
  WARN("CUDA headers not found: skipped the comparison with __float2bfloat16_rn/__float2half_rn");
#endif
}

TEST_CASE("bf16/half: to float and back gives the same bits for all 65536 patterns",
          "[bf16][half]") {
  int bad_bf16 = 0, bad_half = 0, bad_cuda = 0;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const bool bf16_nan = (b & 0x7FFF) > 0x7F80, half_nan = (b & 0x7FFF) > 0x7C00;
    const float fb = ember::bf16_bits_to_float(bits), fh = ember::half_bits_to_float(bits);
    CHECK(std::isnan(fb) == bf16_nan);
    CHECK(std::isnan(fh) == half_nan);
    bad_bf16 += ember::float_to_bf16_bits(fb) != (bf16_nan ? 0x7FFF : bits);
    bad_half += ember::float_to_half_bits(fh) != (half_nan ? 0x7FFF : bits);
    CHECK(bf16::from_bits(bits).bits == bits);
    CHECK(ember::isnan(bf16::from_bits(bits)) == bf16_nan);
    CHECK(ember::isnan(ember::half::from_bits(bits)) == half_nan);
    CHECK(ember::isinf(bf16::from_bits(bits)) == std::isinf(fb));
    CHECK(ember::isinf(ember::half::from_bits(bits)) == std::isinf(fh));
    CHECK(ember::isfinite(bf16::from_bits(bits)) == std::isfinite(fb));
    CHECK(ember::isfinite(ember::half::from_bits(bits)) == std::isfinite(fh));
    if (!half_nan) {  // the value itself, independently: (-1)^s 2^(e-15) (1 + m/1024)
      const int e = (b >> 10) & 0x1F, m = b & 0x3FF;
      const double v = e == 0    ? m * 0x1p-24
                       : e == 31 ? INFINITY
                                 : std::ldexp(1 + m / 1024.0, e - 15);
      CHECK(fh == static_cast<float>((b & 0x8000) ? -v : v));
    }
#if defined(EMBER_TEST_HAVE_CUDA_HEADERS)
    __half_raw hr;
    hr.x = bits;
    __nv_bfloat16_raw br;
    br.x = bits;
    bad_cuda += bits_of(fh) != bits_of(__half2float(__half(hr)));
    bad_cuda += bits_of(fb) != bits_of(__bfloat162float(__nv_bfloat16(br)));
#endif
  }
  CHECK(bad_bf16 == 0);
  CHECK(bad_half == 0);
  CHECK(bad_cuda == 0);
  CHECK(bits_of(ember::half_bits_to_float(0xFE01)) == 0x7FFFFFFFu);  // canonical, like CUDA
  CHECK(bits_of(ember::bf16_bits_to_float(0xFFC1)) == 0xFFC10000u);  // payload kept, like CUDA
}

TEST_CASE("bf16/half: special values and rounding", "[bf16][half]") {
  CHECK(ember::half(65504.0f).bits == 0x7BFF);
  CHECK(ember::half(65519.0f).bits == 0x7BFF);
  CHECK(ember::half(65520.0f).bits == 0x7C00);
  CHECK(ember::half(-1e9f).bits == 0xFC00);
  CHECK(ember::half(0x1p-24f).bits == 0x0001);
  CHECK(ember::half(0x1p-25f).bits == 0x0000);      // tie to even
  CHECK(ember::half(0x1.01p-25f).bits == 0x0001);   // just above the tie
  CHECK(ember::half(0x1.ff8p-15f).bits == 0x03FF);  // largest subnormal
  CHECK(ember::half(0x1.ffap-15f).bits == 0x03FF);
  CHECK(ember::half(0x1.ffcp-15f).bits == 0x0400);  // tie: rounds to even, into the normals
  CHECK(ember::half(-0.0f).bits == 0x8000);
  CHECK(ember::half(std::numeric_limits<float>::quiet_NaN()).bits == 0x7FFF);
  CHECK(ember::half(-std::numeric_limits<float>::quiet_NaN()).bits == 0x7FFF);
  CHECK(bf16(std::numeric_limits<float>::quiet_NaN()).bits == 0x7FFF);
  CHECK(bf16(float_from_bits(0xFF800001)).bits == 0x7FFF);  // signalling, negative
  CHECK(bf16(std::numeric_limits<float>::infinity()).bits == 0x7F80);
  CHECK(bf16(-std::numeric_limits<float>::infinity()).bits == 0xFF80);
  CHECK(bf16(std::numeric_limits<float>::max()).bits == 0x7F80);
  CHECK(bf16(float_from_bits(0x00012345)).bits == 0x0001);  // float subnormals are kept
  CHECK(bf16(float_from_bits(0x807F8000)).bits == 0x8080);  // and round into the normals
  CHECK(bf16(1.0f / 3.0f).bits == 0x3EAB);
  CHECK(bf16(3.0).bits == 0x4040);
  CHECK(bf16(1e40).bits == 0x7F80);  // double -> float overflows to inf first
  CHECK(bf16(7).bits == 0x40E0);
  CHECK(ember::half(int64_t{-2048}).bits == 0xE800);
  CHECK(ember::half(2049u).bits == 0x6800);  // 2049 is a tie between 2048 and 2050: even is 2048
  CHECK(ember::half(true).bits == 0x3C00);

  static_assert(bf16(1.0f).bits == 0x3F80, "conversions are constexpr");
  static_assert(ember::half(-2.0).bits == 0xC000);
  static_assert(ember::half(1) == ember::half(1.0f));
  static_assert(float(ember::half::from_bits(0x3555)) == 0x1.554p-2f);
  static_assert(std::is_trivially_copyable_v<bf16> && std::is_standard_layout_v<ember::half>);
  static_assert(std::is_trivially_default_constructible_v<ember::half> && sizeof(ember::half) == 2);
  static_assert(std::is_convertible_v<float, bf16> && std::is_convertible_v<ember::half, float>);
  static_assert(std::is_convertible_v<int, ember::half> && std::is_convertible_v<double, bf16>);
}

TEST_CASE("bf16/half: numeric_limits", "[bf16][half]") {
  using LB = std::numeric_limits<bf16>;
  using LH = std::numeric_limits<ember::half>;
  static_assert(LB::is_specialized && LH::is_specialized);
  static_assert(LB::digits == 8 && LH::digits == 11);
  static_assert(LB::radix == 2 && LH::radix == 2);
  static_assert(LB::has_infinity && LB::has_quiet_NaN && LH::has_infinity && LH::has_quiet_NaN);
  CHECK(float(LB::epsilon()) == 0x1p-7f);
  CHECK(float(LH::epsilon()) == 0x1p-10f);
  CHECK(bf16(1.0f + float(LB::epsilon())).bits == bf16(1.0f).bits + 1);
  CHECK(ember::half(1.0f + float(LH::epsilon())).bits == ember::half(1.0f).bits + 1);
  CHECK(float(LH::max()) == 65504.0f);
  CHECK(float(LH::lowest()) == -65504.0f);
  CHECK(float(LH::min()) == 0x1p-14f);
  CHECK(float(LH::denorm_min()) == 0x1p-24f);
  CHECK(float(LB::max()) == 0x1.FEp127f);
  CHECK(float(LB::lowest()) == -0x1.FEp127f);
  CHECK(float(LB::min()) == std::numeric_limits<float>::min());
  CHECK(float(LB::denorm_min()) == 0x1p-133f);
  CHECK(float(LB::round_error()) == 0.5f);
  CHECK(float(LH::round_error()) == 0.5f);
  CHECK(std::isinf(float(LB::infinity())));
  CHECK(std::isinf(float(LH::infinity())));
  CHECK(float(LH::infinity()) > 0);
  CHECK(ember::isnan(LB::quiet_NaN()));
  CHECK(ember::isnan(LH::quiet_NaN()));
  CHECK(ember::isnan(LB::signaling_NaN()));
  CHECK(ember::isnan(LH::signaling_NaN()));
  // min_exponent: 2^(min_exponent - 1) is the smallest normal; max_exponent: 2^(max_exponent - 1)
  // is finite and 2^max_exponent is not.
  CHECK(float(LB::min()) == std::ldexp(1.0f, LB::min_exponent - 1));
  CHECK(float(LH::min()) == std::ldexp(1.0f, LH::min_exponent - 1));
  CHECK(ember::isfinite(ember::half(std::ldexp(1.0f, LH::max_exponent - 1))));
  CHECK(ember::isinf(ember::half(std::ldexp(1.0f, LH::max_exponent))));
  CHECK(LH::max_exponent10 == 4);
  CHECK(LH::min_exponent10 == -4);
  CHECK(LB::max_exponent10 == 38);
}

TEST_CASE("bf16/half: arithmetic goes through float and rounds once", "[bf16][half]") {
  bf16 a = 1.5f, b = 2.0f;
  ember::half x = 1.5f, y = 2.0f;
  static_assert(std::is_same_v<decltype(a + b), bf16>);
  static_assert(std::is_same_v<decltype(a / b), bf16>);
  static_assert(std::is_same_v<decltype(x * y), ember::half>);
  static_assert(std::is_same_v<decltype(a + 1.0f), float>);
  static_assert(std::is_same_v<decltype(1.0f + a), float>);
  static_assert(std::is_same_v<decltype(a * 2), float>);
  static_assert(std::is_same_v<decltype(x * 2), float>);
  static_assert(std::is_same_v<decltype(x + 1.0), double>);
  static_assert(std::is_same_v<decltype(a + x), float>);
  static_assert(std::is_same_v<decltype(a < b), bool>);
  static_assert(std::is_same_v<decltype(-a), bf16>);
  CHECK(float(a + b) == 3.5f);
  CHECK(float(a - b) == -0.5f);
  CHECK(float(a * b) == 3.0f);
  CHECK(float(a / b) == 0.75f);
  CHECK(float(x + y) == 3.5f);
  CHECK(float(x / y) == 0.75f);
  CHECK(a + 1.0f == 2.5f);
  CHECK(a * 2 == 3.0f);
  CHECK(x * 2 == 3.0f);
  CHECK(a < b);
  CHECK(a <= b);
  CHECK_FALSE(a > b);
  CHECK(b >= a);
  CHECK(a == bf16(1.5));
  CHECK(a != b);
  CHECK(x < y);
  CHECK(x == ember::half(1.5));
  CHECK(a < 2.0f);
  CHECK(x > 1);
  // One rounding: 1 + 2^-8 is a tie in bf16 and rounds to even (1); 1 + 3 * 2^-9 rounds up.
  CHECK((bf16(1.0f) + bf16(0x1p-8f)).bits == 0x3F80);
  CHECK((bf16(1.0f) + bf16(0x1.8p-8f)).bits == 0x3F81);
  CHECK((ember::half(1.0f) + ember::half(0x1p-11f)).bits == 0x3C00);
  CHECK((ember::half(1.0f) + ember::half(0x1.8p-11f)).bits == 0x3C01);
  CHECK((ember::half(60000.0f) + ember::half(60000.0f)).bits == 0x7C00);  // overflow to inf
  CHECK(ember::isinf(bf16(1.0f) / bf16(0.0f)));
  CHECK(ember::isnan(ember::half(0.0f) / ember::half(0.0f)));
  bf16 n = std::numeric_limits<bf16>::quiet_NaN();
  CHECK_FALSE(n == n);
  CHECK(n != n);
  CHECK_FALSE(n < n);
  CHECK((-a).bits == 0xBFC0);
  CHECK((-bf16(0.0f)).bits == 0x8000);
  CHECK((-ember::half(0.0f)).bits == 0x8000);
  CHECK((+x).bits == x.bits);
  a += b;
  CHECK(float(a) == 3.5f);
  a -= 1.0f;
  CHECK(float(a) == 2.5f);
  a *= 2;
  CHECK(float(a) == 5.0f);
  a /= 4.0;
  CHECK(float(a) == 1.25f);
  x += 0.25f;
  x *= x;
  CHECK(float(x) == 3.0625f);
  // Compound assignment with a float operand rounds once: 256 + (1 + 2^-8) = 257.0039 -> 258,
  // where rounding the operand to bf16 first (1 + 2^-8 -> 1) would give 257 -> tie -> 256.
  bf16 c = 256.0f;
  c += 1.00390625f;
  CHECK(float(c) == 258.0f);
  c = 256.0f;
  c += 1.0f;
  CHECK(float(c) == 256.0f);
  ember::half h = 1.0f;
  h = h + ember::half(0.5f) * ember::half(2.0f);
  CHECK(float(h) == 2.0f);
  int i = static_cast<int>(ember::half(3.75f));
  CHECK(i == 3);
  double d = bf16(0.5f);
  CHECK(d == 0.5);
}

TEST_CASE("bf16/half: printing shows the float value", "[bf16][half]") {
  std::ostringstream os;
  os << bf16(1.5f) << ' ' << ember::half(-0.25f) << ' ' << ember::half(65520.0f) << ' '
     << bf16(0.1f);
  std::ostringstream expect;
  expect << 1.5f << ' ' << -0.25f << ' ' << std::numeric_limits<float>::infinity() << ' '
         << float(bf16(0.1f));
  CHECK(os.str() == expect.str());
  CHECK(os.str().substr(0, 11) == "1.5 -0.25 i");
}

TEST_CASE("bf16 and half round a double once", "[bf16][half]") {
  // 1 + 2^-8 + 2^-40 is just above the midpoint between bf16's 1 and 1 + 2^-7; through float
  // it would land exactly on the midpoint and tie to 1.
  CHECK(float(ember::bf16(1 + 0x1p-8 + 0x1p-40)) == 1 + 0x1p-7f);
  CHECK(float(ember::half(1 + 0x1p-11 + 0x1p-40)) == 1 + 0x1p-10f);
  CHECK(float(ember::bf16(1 + 0x1p-8)) == 1.0f);  // an exact tie still goes to even
  CHECK(float(ember::half(std::int64_t{65520})) == std::numeric_limits<float>::infinity());
  CHECK(float(ember::bf16(std::int64_t{(1ll << 40) + (1ll << 32) + 1})) ==
        float((1ll << 40) + (1ll << 33)));
}
