// ember::half: the IEEE 754 binary16 storage type (1 sign, 5 exponent, 10 mantissa bits).
//
// Why it exists: half is a first-class storage dtype in ember (mixed-precision training) and must
// behave identically on the CPU and the GPU. The host conversion from float is portable integer
// code, bit-identical to CUDA's __float2half_rn for every float (round to nearest even, overflow to
// infinity from 65520 up, correctly rounded subnormals, NaN -> canonical 0x7FFF); device code uses
// the CUDA intrinsics. Arithmetic goes through float and rounds once, which gives the same bits as
// native half arithmetic.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <ostream>
#include <type_traits>

#include "ember/core/config.hpp"
#include "ember/core/float16_common.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace ember {

namespace detail {

// Portable float -> half bits, round to nearest even, written with selects only so that loops over
// it vectorise (no data-dependent branches, no shift by 32 or more).
EMBER_HD constexpr uint16_t float_to_half_bits_portable(float f) {
  const uint32_t x = __builtin_bit_cast(uint32_t, f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t u = x & 0x7FFFFFFFu;
  // |f| >= 2^-14 (half normal): rebias the exponent from 127 to 15 and round the 13 dropped bits
  // to nearest even (a carry bumps the exponent). Anything from 65520 up, float infinity included,
  // lands at or past 0x7C00 and is clamped to infinity. Wraps (unused) for smaller u.
  uint32_t normal = (u + 0x0FFFu + ((u >> 13) & 1u) - 0x38000000u) >> 13;
  normal = normal < 0x7C00u ? normal : 0x7C00u;
  // |f| < 2^-14 (half subnormal or zero): the result is |f| / 2^-24 rounded to nearest even, i.e.
  // the 24-bit significand shifted right by 126 - exponent. Shifts of 26 or more give 0, so the
  // shift is clamped to [14, 31]; float subnormals (whose implicit bit is wrongly set here) shift
  // by 31 and give 0, as they must.
  const uint32_t e = u >> 23;
  uint32_t shift = 126u - (e < 112u ? e : 112u);
  shift = shift < 31u ? shift : 31u;
  const uint32_t m = (u & 0x007FFFFFu) | 0x00800000u;
  const uint32_t sub = (m + ((1u << (shift - 1u)) - 1u) + ((m >> shift) & 1u)) >> shift;
  const uint32_t r = select_bits(u < 0x38800000u, sub, normal) | sign;
  return static_cast<uint16_t>(select_bits(u > 0x7F800000u, 0x7FFFu, r));
}

// Portable half bits -> float (exact). NaN gives the canonical float NaN 0x7FFFFFFF, as CUDA's
// __half2float does; subnormals are converted through an exact float multiply.
EMBER_HD constexpr float half_bits_to_float_portable(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7FFFu;
  const uint32_t normal = (em << 13) + (112u << 23);
  const uint32_t sub = __builtin_bit_cast(uint32_t, static_cast<float>(em) * 0x1p-24f);
  uint32_t r = select_bits(em < 0x0400u, sub, normal) | sign;
  r = select_bits(em == 0x7C00u, sign | 0x7F800000u, r);
  r = select_bits(em > 0x7C00u, 0x7FFFFFFFu, r);
  return __builtin_bit_cast(float, r);
}

}  // namespace detail

/// float -> half bits, round to nearest even; same bits as CUDA's __float2half_rn.
EMBER_HD constexpr uint16_t float_to_half_bits(float f) {
#if defined(EMBER_DEVICE_CODE)
  if (!__builtin_is_constant_evaluated()) return __half_as_ushort(__float2half_rn(f));
#endif
  return detail::float_to_half_bits_portable(f);
}

/// half bits -> float (exact; NaN -> 0x7FFFFFFF); same bits as CUDA's __half2float.
EMBER_HD constexpr float half_bits_to_float(uint16_t b) {
#if defined(EMBER_DEVICE_CODE)
  if (!__builtin_is_constant_evaluated()) return __half2float(__ushort_as_half(b));
#endif
  return detail::half_bits_to_float_portable(b);
}

/// IEEE binary16 value. Trivially copyable, standard layout, 2 bytes; the default constructor
/// leaves `bits` uninitialised (like float). Converts implicitly from and to float. Arithmetic
/// between two half gives half; mixing with another arithmetic type computes in float (or wider),
/// like the built-in promotions.
struct alignas(2) half : detail::Float16Operators<half> {
  uint16_t bits;

  half() = default;
  EMBER_HD constexpr half(float f) : bits(float_to_half_bits(f)) {}
  /// Rounds once (through float rounded to odd, which a second rounding cannot disturb).
  EMBER_HD constexpr half(double d) : half(double_to_float_round_odd(d)) {}
  template <std::integral I>
  EMBER_HD constexpr half(I i) : half(static_cast<double>(i)) {}

  EMBER_HD static constexpr half from_bits(uint16_t b) {
    half r{};
    r.bits = b;
    return r;
  }

  EMBER_HD constexpr operator float() const { return half_bits_to_float(bits); }

#if defined(__CUDACC__)
  EMBER_HD half(__half v) : bits(static_cast<__half_raw>(v).x) {}
  EMBER_HD operator __half() const {
    __half_raw r;
    r.x = bits;
    return __half(r);
  }
#endif
};

static_assert(sizeof(half) == 2 && alignof(half) == 2);
static_assert(std::is_trivially_copyable_v<half> && std::is_standard_layout_v<half>);
static_assert(std::is_trivially_default_constructible_v<half>);

// Classification by bits. Templates constrained to half so that an unqualified isnan(float) inside
// namespace ember fails to compile instead of silently converting the float to half.
template <std::same_as<half> T>
EMBER_HD constexpr bool isnan(T v) {
  return (v.bits & 0x7FFFu) > 0x7C00u;
}
template <std::same_as<half> T>
EMBER_HD constexpr bool isinf(T v) {
  return (v.bits & 0x7FFFu) == 0x7C00u;
}
template <std::same_as<half> T>
EMBER_HD constexpr bool isfinite(T v) {
  return (v.bits & 0x7C00u) != 0x7C00u;
}

/// Prints the float value.
inline std::ostream& operator<<(std::ostream& os, half v) { return os << static_cast<float>(v); }

}  // namespace ember

namespace std {
template <>
struct numeric_limits<ember::half> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr std::float_denorm_style has_denorm = std::denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = true;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 11;
  static constexpr int digits10 = 3;
  static constexpr int max_digits10 = 5;
  static constexpr int radix = 2;
  static constexpr int min_exponent = -13;
  static constexpr int min_exponent10 = -4;
  static constexpr int max_exponent = 16;
  static constexpr int max_exponent10 = 4;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  EMBER_HD static constexpr ember::half min() noexcept { return ember::half::from_bits(0x0400); }
  EMBER_HD static constexpr ember::half lowest() noexcept { return ember::half::from_bits(0xFBFF); }
  EMBER_HD static constexpr ember::half max() noexcept { return ember::half::from_bits(0x7BFF); }
  EMBER_HD static constexpr ember::half epsilon() noexcept {
    return ember::half::from_bits(0x1400);
  }
  EMBER_HD static constexpr ember::half round_error() noexcept {
    return ember::half::from_bits(0x3800);
  }
  EMBER_HD static constexpr ember::half infinity() noexcept {
    return ember::half::from_bits(0x7C00);
  }
  EMBER_HD static constexpr ember::half quiet_NaN() noexcept {
    return ember::half::from_bits(0x7E00);
  }
  EMBER_HD static constexpr ember::half signaling_NaN() noexcept {
    return ember::half::from_bits(0x7D00);
  }
  EMBER_HD static constexpr ember::half denorm_min() noexcept {
    return ember::half::from_bits(0x0001);
  }
};
}  // namespace std
