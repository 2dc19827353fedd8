// ember::bf16: the bfloat16 storage type (1 sign, 8 exponent, 7 mantissa bits).
//
// Why it exists: bf16 is a first-class storage dtype in ember (mixed-precision training) and must
// behave identically on the CPU and the GPU. The host conversion from float is portable integer
// code, bit-identical to CUDA's __float2bfloat16_rn for every float (round to nearest even, NaN ->
// canonical 0x7FFF, float subnormals kept); device code uses the CUDA intrinsics. Arithmetic goes
// through float and rounds once, which gives the same bits as native bf16 arithmetic.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <ostream>
#include <type_traits>

#include "ember/core/config.hpp"
#include "ember/core/float16_common.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#endif

namespace ember {

namespace detail {

// Portable float -> bf16 bits, round to nearest even. Branch-free (the NaN test is a select), so
// loops over it vectorise. Adding 0x7FFF plus the lowest kept bit to the float's bits rounds the
// low 16 bits away to nearest even; a carry out of the mantissa bumps the exponent, which is also
// how the largest finite floats round to infinity.
EMBER_HD constexpr uint16_t float_to_bf16_bits_portable(float f) {
  const uint32_t x = __builtin_bit_cast(uint32_t, f);
  const uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  // NaN -> 0x7FFF through a mask (see select_bits: a ternary here became a branch).
  const uint32_t nan = 0u - static_cast<uint32_t>((x & 0x7FFFFFFFu) > 0x7F800000u);
  return static_cast<uint16_t>((rounded & ~nan) | (0x7FFFu & nan));
}

// bf16 -> float is exact: the bf16 bits are the top half of the float's bits (NaN payload kept,
// as CUDA does).
EMBER_HD constexpr float bf16_bits_to_float_portable(uint16_t b) {
  return __builtin_bit_cast(float, static_cast<uint32_t>(b) << 16);
}

}  // namespace detail

/// float -> bf16 bits, round to nearest even; same bits as CUDA's __float2bfloat16_rn.
EMBER_HD constexpr uint16_t float_to_bf16_bits(float f) {
#if defined(EMBER_DEVICE_CODE)
  if (!__builtin_is_constant_evaluated()) return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#endif
  return detail::float_to_bf16_bits_portable(f);
}

/// bf16 bits -> float (exact).
EMBER_HD constexpr float bf16_bits_to_float(uint16_t b) {
#if defined(EMBER_DEVICE_CODE)
  if (!__builtin_is_constant_evaluated()) return __bfloat162float(__ushort_as_bfloat16(b));
#endif
  return detail::bf16_bits_to_float_portable(b);
}

/// bfloat16 value. Trivially copyable, standard layout, 2 bytes; the default constructor leaves
/// `bits` uninitialised (like float). Converts implicitly from and to float. Arithmetic between
/// two bf16 gives bf16; mixing with another arithmetic type computes in float (or wider), like
/// the built-in promotions.
struct alignas(2) bf16 : detail::Float16Operators<bf16> {
  uint16_t bits;

  bf16() = default;
  EMBER_HD constexpr bf16(float f) : bits(float_to_bf16_bits(f)) {}
  /// Rounds once (through float rounded to odd, which a second rounding cannot disturb).
  EMBER_HD constexpr bf16(double d) : bf16(double_to_float_round_odd(d)) {}
  template <std::integral I>
  EMBER_HD constexpr bf16(I i) : bf16(static_cast<double>(i)) {}

  EMBER_HD static constexpr bf16 from_bits(uint16_t b) {
    bf16 r{};
    r.bits = b;
    return r;
  }

  EMBER_HD constexpr operator float() const { return bf16_bits_to_float(bits); }

#if defined(__CUDACC__)
  EMBER_HD bf16(__nv_bfloat16 v) : bits(static_cast<__nv_bfloat16_raw>(v).x) {}
  EMBER_HD operator __nv_bfloat16() const {
    __nv_bfloat16_raw r;
    r.x = bits;
    return __nv_bfloat16(r);
  }
#endif
};

static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2);
static_assert(std::is_trivially_copyable_v<bf16> && std::is_standard_layout_v<bf16>);
static_assert(std::is_trivially_default_constructible_v<bf16>);

// Classification by bits. Templates constrained to bf16 so that an unqualified isnan(float) inside
// namespace ember fails to compile instead of silently converting the float to bf16.
template <std::same_as<bf16> T>
EMBER_HD constexpr bool isnan(T v) {
  return (v.bits & 0x7FFFu) > 0x7F80u;
}
template <std::same_as<bf16> T>
EMBER_HD constexpr bool isinf(T v) {
  return (v.bits & 0x7FFFu) == 0x7F80u;
}
template <std::same_as<bf16> T>
EMBER_HD constexpr bool isfinite(T v) {
  return (v.bits & 0x7F80u) != 0x7F80u;
}

/// Prints the float value.
inline std::ostream& operator<<(std::ostream& os, bf16 v) { return os << static_cast<float>(v); }

}  // namespace ember

namespace std {
template <>
struct numeric_limits<ember::bf16> {
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
  static constexpr bool is_iec559 = false;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 8;
  static constexpr int digits10 = 2;
  static constexpr int max_digits10 = 4;
  static constexpr int radix = 2;
  static constexpr int min_exponent = -125;
  static constexpr int min_exponent10 = -37;
  static constexpr int max_exponent = 128;
  static constexpr int max_exponent10 = 38;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  EMBER_HD static constexpr ember::bf16 min() noexcept { return ember::bf16::from_bits(0x0080); }
  EMBER_HD static constexpr ember::bf16 lowest() noexcept { return ember::bf16::from_bits(0xFF7F); }
  EMBER_HD static constexpr ember::bf16 max() noexcept { return ember::bf16::from_bits(0x7F7F); }
  EMBER_HD static constexpr ember::bf16 epsilon() noexcept {
    return ember::bf16::from_bits(0x3C00);
  }
  EMBER_HD static constexpr ember::bf16 round_error() noexcept {
    return ember::bf16::from_bits(0x3F00);
  }
  EMBER_HD static constexpr ember::bf16 infinity() noexcept {
    return ember::bf16::from_bits(0x7F80);
  }
  EMBER_HD static constexpr ember::bf16 quiet_NaN() noexcept {
    return ember::bf16::from_bits(0x7FC0);
  }
  EMBER_HD static constexpr ember::bf16 signaling_NaN() noexcept {
    return ember::bf16::from_bits(0x7F81);
  }
  EMBER_HD static constexpr ember::bf16 denorm_min() noexcept {
    return ember::bf16::from_bits(0x0001);
  }
};
}  // namespace std
