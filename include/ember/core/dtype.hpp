// Element types ember stores, the type each one computes in, and the promotion rule.
#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "bf16.hpp"
#include "config.hpp"
#include "half.hpp"

namespace ember {

enum class DType : std::uint8_t { f32, f64, bf16, f16, i32, i64, u8, boolean };

namespace detail {
template <class T>
struct dtype_info;
template <>
struct dtype_info<float> {
  static constexpr DType code = DType::f32;
  static constexpr std::string_view name = "float32";
  using acc = float;
};
template <>
struct dtype_info<double> {
  static constexpr DType code = DType::f64;
  static constexpr std::string_view name = "float64";
  using acc = double;
};
template <>
struct dtype_info<bf16> {
  static constexpr DType code = DType::bf16;
  static constexpr std::string_view name = "bfloat16";
  using acc = float;
};
template <>
struct dtype_info<half> {
  static constexpr DType code = DType::f16;
  static constexpr std::string_view name = "float16";
  using acc = float;
};
template <>
struct dtype_info<std::int32_t> {
  static constexpr DType code = DType::i32;
  static constexpr std::string_view name = "int32";
  using acc = std::int32_t;
};
template <>
struct dtype_info<std::int64_t> {
  static constexpr DType code = DType::i64;
  static constexpr std::string_view name = "int64";
  using acc = std::int64_t;
};
template <>
struct dtype_info<std::uint8_t> {
  static constexpr DType code = DType::u8;
  static constexpr std::string_view name = "uint8";
  using acc = std::int32_t;
};
template <>
struct dtype_info<bool> {
  static constexpr DType code = DType::boolean;
  static constexpr std::string_view name = "bool";
  using acc = bool;
};
}  // namespace detail

/// A type ember can store in a tensor.
template <class T>
concept Storable = requires {
  detail::dtype_info<std::remove_cv_t<T>>::code;
};

template <class T>
concept FloatingElement = std::same_as<T, float> || std::same_as<T, double> ||
    std::same_as<T, bf16> || std::same_as<T, half>;

template <class T>
concept IntegralElement = Storable<T> && !FloatingElement<T>;

/// The type a value of storage type T is computed in: float for bf16, half and float,
/// double for double; integers compute in themselves (uint8 in int32).
template <Storable T>
using acc_t = typename detail::dtype_info<T>::acc;

template <Storable T>
inline constexpr DType dtype_of = detail::dtype_info<T>::code;

template <Storable T>
inline constexpr std::string_view dtype_name = detail::dtype_info<T>::name;

inline constexpr std::string_view name_of(DType d) {
  switch (d) {
    case DType::f32:
      return "float32";
    case DType::f64:
      return "float64";
    case DType::bf16:
      return "bfloat16";
    case DType::f16:
      return "float16";
    case DType::i32:
      return "int32";
    case DType::i64:
      return "int64";
    case DType::u8:
      return "uint8";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

namespace detail {
// Rank in the promotion lattice: bool < integers < half/bf16 < float < double.
template <class T>
constexpr int promo_rank() {
  if constexpr (std::same_as<T, bool>)
    return 0;
  else if constexpr (std::same_as<T, std::uint8_t>)
    return 1;
  else if constexpr (std::same_as<T, std::int32_t>)
    return 2;
  else if constexpr (std::same_as<T, std::int64_t>)
    return 3;
  else if constexpr (std::same_as<T, half> || std::same_as<T, bf16>)
    return 4;
  else if constexpr (std::same_as<T, float>)
    return 5;
  else
    return 6;
}
template <class A, class B>
struct promote {
  // bf16 with half has no common 16-bit type: both go to float, as in PyTorch.
  using type =
      std::conditional_t<(std::same_as<A, bf16> && std::same_as<B, half>) ||
                             (std::same_as<A, half> && std::same_as<B, bf16>),
                         float, std::conditional_t<(promo_rank<A>() >= promo_rank<B>()), A, B>>;
};
}  // namespace detail

/// The element type of a binary operation on A and B (PyTorch's rule for tensors).
template <Storable A, Storable B>
using promote_t = typename detail::promote<A, B>::type;

/// Converts a computed value to storage type T, rounding once (nearest even for floats).
template <Storable T, class V>
EMBER_HD EMBER_FORCEINLINE T to_storage(V v) {
  if constexpr (std::same_as<T, bf16> || std::same_as<T, half>) {
    return T(v);  // from float, double or an integer: one rounding
  } else if constexpr (std::same_as<T, bool>) {
    return static_cast<bool>(v);
  } else {
    return static_cast<T>(v);
  }
}

/// Widens a stored value to its compute type.
template <Storable T>
EMBER_HD EMBER_FORCEINLINE acc_t<T> to_acc(T v) {
  if constexpr (std::same_as<T, bf16> || std::same_as<T, half>) {
    return static_cast<float>(v);
  } else {
    return static_cast<acc_t<T>>(v);
  }
}

}  // namespace ember
