// AnyTensor: a tensor of any of ember's element types, and NamedTensors, a list of them by name:
// what a checkpoint, an optimizer's state or a model's state holds (io/ reads and writes them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "../core/bf16.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/half.hpp"
#include "tensor.hpp"

namespace ember {

/// A tensor of any of ember's element types: what a checkpoint holds.
class AnyTensor {
 public:
  using Variant =
      std::variant<Tensor<double>, Tensor<float>, Tensor<half>, Tensor<bf16>, Tensor<std::int64_t>,
                   Tensor<std::int32_t>, Tensor<std::uint8_t>, Tensor<bool>>;

  /// An undefined tensor (an undefined Tensor<double>).
  AnyTensor() = default;
  template <Storable T>
  AnyTensor(Tensor<T> t) : v_(std::move(t)) {}  // NOLINT(google-explicit-constructor)

  /// std::visit on the Tensor<T> held.
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit(std::forward<F>(f), v_);
  }
  bool defined() const {
    return visit([](const auto& t) { return t.defined(); });
  }
  DType dtype() const {
    return visit([](const auto& t) { return t.dtype(); });
  }
  /// ember's name of the element type: "float32", "bfloat16", "int64", "bool", ...
  std::string_view dtype_name() const { return name_of(dtype()); }
  Shape shape() const {
    return visit([](const auto& t) { return t.shape(); });
  }
  int rank() const { return shape().rank(); }
  std::int64_t numel() const { return shape().numel(); }
  Device device() const {
    return visit([](const auto& t) { return t.device(); });
  }

  /// True when this holds a Tensor<T>.
  template <Storable T>
  bool holds() const {
    return std::holds_alternative<Tensor<T>>(v_);
  }
  /// The Tensor<T> held (the same handle, no copy); throws ember::Error on another element type,
  /// naming the tensor when `name` is given. No conversion: use cast<T> on the result for that.
  template <Storable T>
  Tensor<T> as(std::string_view name = {}) const {
    if (const auto* t = std::get_if<Tensor<T>>(&v_)) return *t;
    if (name.empty()) {
      fail("ember: the tensor holds ", dtype_name(), ", not ", ::ember::dtype_name<T>);
    }
    fail("ember: tensor '", name, "' holds ", dtype_name(), ", not ", ::ember::dtype_name<T>);
  }

  const Variant& variant() const { return v_; }

 private:
  Variant v_;
};

/// Named tensors, in the order of a file's data buffer when loaded.
using NamedTensors = std::vector<std::pair<std::string, AnyTensor>>;

/// The tensor called `name` as a Tensor<T>; throws ember::Error when there is none or it holds
/// another element type.
template <Storable T>
Tensor<T> get_tensor(const NamedTensors& tensors, std::string_view name) {
  for (const auto& [n, t] : tensors) {
    if (n == name) return t.template as<T>(name);
  }
  fail("ember: no tensor named '", name, "'");
}

}  // namespace ember
