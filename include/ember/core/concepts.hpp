// The concepts at ember's entry points. They keep template errors at the user's line, in words.
#pragma once

#include <concepts>
#include <type_traits>

#include "dtype.hpp"

namespace ember {

template <Storable T>
class Tensor;

/// A lazy elementwise expression: it has an element type, a shape and a device, and it
/// can be planned for evaluation (see expr/). Tensor is not one; it becomes a leaf.
template <class E>
concept Expression = requires(const E& e) {
  typename std::remove_cvref_t<E>::value_type;
  requires std::remove_cvref_t<E>::is_ember_expression;
  e.shape();
};

namespace detail {
template <class T>
struct is_tensor : std::false_type {};
template <class T>
struct is_tensor<Tensor<T>> : std::true_type {};
}  // namespace detail

/// ember::Tensor<T> for any storable T.
template <class T>
concept TensorType = detail::is_tensor<std::remove_cvref_t<T>>::value;

/// A plain C++ number usable as a scalar operand (bf16 and half included).
template <class S>
concept Scalar = std::is_arithmetic_v<std::remove_cvref_t<S>> ||
    std::same_as<std::remove_cvref_t<S>, bf16> || std::same_as<std::remove_cvref_t<S>, half>;

/// Anything an operator or elementwise function accepts: an expression, a tensor or a number.
template <class X>
concept Operand = Expression<X> || TensorType<X> || Scalar<X>;

/// An operand that is not a plain number (at least one of these makes an expression).
template <class X>
concept ArrayOperand = Expression<X> || TensorType<X>;

}  // namespace ember
