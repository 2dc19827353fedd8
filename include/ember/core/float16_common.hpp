// What bf16 and half share: rounding a double once, and the arithmetic of a 2-byte float type
// that computes in float and rounds once (a CRTP base, so each type states only its encoding).
#pragma once

#include <concepts>
#include <cstdint>

#include "ember/core/config.hpp"

namespace ember {

/// double to float rounding to odd: truncate, then set the last bit if anything was lost.
/// Rounding that float to any narrower format (bf16, half) to nearest even then gives the same
/// answer as rounding the double directly: one rounding, not two.
EMBER_HD constexpr float double_to_float_round_odd(double v) {
  const float f = static_cast<float>(v);
  const double back = static_cast<double>(f);
  if (back == v || v != v) return f;  // exact, or NaN
  std::uint32_t bits = __builtin_bit_cast(std::uint32_t, f);
  if ((back > v) == (v > 0.0)) --bits;  // rounded away from zero (or to inf): step back
  bits |= 1u;
  return __builtin_bit_cast(float, bits);
}

namespace detail {

/// c ? a : b on bit patterns, as mask arithmetic. The 2-byte conversions choose this way, never
/// with a plain ternary: inside ember's larger fused loops GCC turned one into a branch (a tanh
/// chain stored to bf16 ran scalar), and a branch stops the loop vectorising. (bf16's NaN test
/// spells the mask out: through this function it was slower there.)
EMBER_HD constexpr std::uint32_t select_bits(bool c, std::uint32_t a, std::uint32_t b) {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return (b & ~m) | (a & m);
}

/// Operators of a 2-byte float type D (with `bits`, `from_bits`, conversions from and to float):
/// compound assignment and D (op) D compute in float and round once; unary minus flips the sign
/// bit. The binary operators are templates taking exactly D, so `a + 1.0f` resolves to the
/// built-in float addition instead of being ambiguous.
template <class D>
struct Float16Operators {
  EMBER_HD constexpr D& operator+=(float o) { return self() = D(float(self()) + o); }
  EMBER_HD constexpr D& operator-=(float o) { return self() = D(float(self()) - o); }
  EMBER_HD constexpr D& operator*=(float o) { return self() = D(float(self()) * o); }
  EMBER_HD constexpr D& operator/=(float o) { return self() = D(float(self()) / o); }

  EMBER_HD friend constexpr D operator-(D a) {
    return D::from_bits(static_cast<std::uint16_t>(a.bits ^ 0x8000u));
  }
  EMBER_HD friend constexpr D operator+(D a) { return a; }

  template <std::same_as<D> T>
  EMBER_HD friend constexpr D operator+(T a, T b) {
    return D(float(a) + float(b));
  }
  template <std::same_as<D> T>
  EMBER_HD friend constexpr D operator-(T a, T b) {
    return D(float(a) - float(b));
  }
  template <std::same_as<D> T>
  EMBER_HD friend constexpr D operator*(T a, T b) {
    return D(float(a) * float(b));
  }
  template <std::same_as<D> T>
  EMBER_HD friend constexpr D operator/(T a, T b) {
    return D(float(a) / float(b));
  }
  template <std::same_as<D> T>
  EMBER_HD friend constexpr bool operator==(T a, T b) {
    return float(a) == float(b);
  }
  template <std::same_as<D> T>
  EMBER_HD friend constexpr bool operator!=(T a, T b) {
    return float(a) != float(b);
  }
  template <std::same_as<D> T>
  EMBER_HD friend constexpr bool operator<(T a, T b) {
    return float(a) < float(b);
  }
  template <std::same_as<D> T>
  EMBER_HD friend constexpr bool operator<=(T a, T b) {
    return float(a) <= float(b);
  }
  template <std::same_as<D> T>
  EMBER_HD friend constexpr bool operator>(T a, T b) {
    return float(a) > float(b);
  }
  template <std::same_as<D> T>
  EMBER_HD friend constexpr bool operator>=(T a, T b) {
    return float(a) >= float(b);
  }

 private:
  EMBER_HD constexpr D& self() { return static_cast<D&>(*this); }
};

}  // namespace detail
}  // namespace ember
