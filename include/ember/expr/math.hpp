// Scalar math for float and double that compiles in host and device code: the host uses the C
// library, device code CUDA's math library. Functors call these, never std:: directly.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../core/config.hpp"
#include "fast_math.hpp"

namespace ember::math {

#define EMBER_MATH_UNARY(name, fname, dname)                            \
  EMBER_HD EMBER_FORCEINLINE float name(float x) { return ::fname(x); } \
  EMBER_HD EMBER_FORCEINLINE double name(double x) { return ::dname(x); }

// Float functions the CPU loops must vectorise: on the host, ember's own branch-free versions
// (expr/fast_math.hpp, within 1 ulp); in device code, CUDA's math library.
#if defined(EMBER_DEVICE_CODE)
#define EMBER_MATH_UNARY_FAST(name, fname, dname) EMBER_MATH_UNARY(name, fname, dname)
#else
#define EMBER_MATH_UNARY_FAST(name, fname, dname)                          \
  EMBER_HD EMBER_FORCEINLINE float name(float x) { return fast::name(x); } \
  EMBER_HD EMBER_FORCEINLINE double name(double x) { return ::dname(x); }
#endif

EMBER_MATH_UNARY_FAST(exp, expf, exp)
EMBER_MATH_UNARY_FAST(exp2, exp2f, exp2)
EMBER_MATH_UNARY_FAST(log, logf, log)
EMBER_MATH_UNARY_FAST(log2, log2f, log2)
EMBER_MATH_UNARY_FAST(log1p, log1pf, log1p)
EMBER_MATH_UNARY_FAST(expm1, expm1f, expm1)
EMBER_MATH_UNARY_FAST(tanh, tanhf, tanh)
EMBER_MATH_UNARY_FAST(erf, erff, erf)
#undef EMBER_MATH_UNARY_FAST
EMBER_MATH_UNARY(sqrt, sqrtf, sqrt)
EMBER_MATH_UNARY(sin, sinf, sin)
EMBER_MATH_UNARY(cos, cosf, cos)
EMBER_MATH_UNARY(tan, tanf, tan)
EMBER_MATH_UNARY(floor, floorf, floor)
EMBER_MATH_UNARY(ceil, ceilf, ceil)
EMBER_MATH_UNARY(fabs, fabsf, fabs)
// Round half to even, as torch.round and NumPy do.
EMBER_MATH_UNARY(round_even, rintf, rint)
#undef EMBER_MATH_UNARY

EMBER_HD EMBER_FORCEINLINE float pow(float x, float y) { return ::powf(x, y); }
EMBER_HD EMBER_FORCEINLINE double pow(double x, double y) { return ::pow(x, y); }
EMBER_HD EMBER_FORCEINLINE float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
EMBER_HD EMBER_FORCEINLINE double fma(double a, double b, double c) { return ::fma(a, b, c); }

EMBER_HD EMBER_FORCEINLINE float rsqrt(float x) {
#if defined(EMBER_DEVICE_CODE)
  return ::rsqrtf(x);
#else
  return 1.0f / ::sqrtf(x);
#endif
}
EMBER_HD EMBER_FORCEINLINE double rsqrt(double x) {
#if defined(EMBER_DEVICE_CODE)
  return ::rsqrt(x);
#else
  return 1.0 / ::sqrt(x);
#endif
}

/// c ? a : b without a branch. GCC keeps a ternary on floats as a branch (or a scalar blend)
/// that stops the loops around it from vectorising, forward and backward alike; masks on the
/// bits always vectorise. Device code and other types take the ternary.
template <class X>
EMBER_HD EMBER_FORCEINLINE X select(bool c, X a, X b) {
#if !defined(EMBER_DEVICE_CODE)
  if constexpr (std::is_same_v<X, float> || std::is_same_v<X, double>) {
    using U = std::conditional_t<std::is_same_v<X, float>, std::uint32_t, std::uint64_t>;
    const U m = U(0) - static_cast<U>(c);
    return __builtin_bit_cast(
        X, static_cast<U>((__builtin_bit_cast(U, a) & m) | (__builtin_bit_cast(U, b) & ~m)));
  }
#endif
  return c ? a : b;
}

template <class X>
EMBER_HD EMBER_FORCEINLINE bool isnan(X x) {
  if constexpr (std::is_floating_point_v<X>) {
    return x != x;
  } else {
    return false;
  }
}

template <class X>
EMBER_HD EMBER_FORCEINLINE X infinity() {
  if constexpr (std::is_same_v<X, float>) {
    return __builtin_huge_valf();
  } else if constexpr (std::is_same_v<X, double>) {
    return __builtin_huge_val();
  } else if constexpr (std::is_same_v<X, bool>) {
    return true;
  } else {
    return X(~(std::make_unsigned_t<X>(1) << (sizeof(X) * 8 - 1)));  // largest value
  }
}

/// The smallest value of X (-inf for floating types), the identity of max.
template <class X>
EMBER_HD EMBER_FORCEINLINE X lowest() {
  if constexpr (std::is_floating_point_v<X>) {
    return -infinity<X>();
  } else if constexpr (std::is_same_v<X, bool>) {
    return false;
  } else {
    return X(-infinity<X>() - 1);
  }
}

}  // namespace ember::math
