// nn::Sequential: layers run one after the other, as PyTorch's nn.Sequential. Each layer is
// built in place by emplace<L>(constructor arguments), owned here and registered under its
// index ("0", "1", ...), so parameters get PyTorch's names ("0.weight", "1.running_mean").
// forward chains the layers' forward(const Var<T>&) (type-erased; for ember's own layers the
// translation-unit tag is fixed when the layer is emplaced: see core/config.hpp).
//
//   nn::Sequential<float> stem;
//   auto& conv = stem.emplace<nn::Conv2d<float>>(
//       3, 64, 7, nn::Conv2dOptions{.stride = {2, 2}, .padding = {3, 3}, .bias = false});
//   stem.emplace<nn::BatchNorm2d<float>>(64);
//   stem.emplace<nn::ReLU<float>>();
//   stem.emplace<nn::MaxPool2d<float>>(3, 2, 1);
//   Var<float> y = stem(x);
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "module.hpp"

namespace ember::nn {

namespace detail {
// Whether L has forward(const Var<T>&) returning something convertible to Var<T>. (A trait, not
// a requires-expression: nvcc 13's front end rejected the latter for the ResNet blocks.)
template <class L, class T, class = void>
struct has_var_forward : std::false_type {};
template <class L, class T>
struct has_var_forward<
    L, T, std::void_t<decltype(std::declval<const L&>().forward(std::declval<const Var<T>&>()))>>
    : std::is_convertible<decltype(std::declval<const L&>().forward(std::declval<const Var<T>&>())),
                          Var<T>> {};
}  // namespace detail

template <FloatingElement T = float>
class Sequential : public Module, public Callable<Sequential<T>> {
 public:
  Sequential() = default;

  /// Builds L(args...) as the next layer and returns it. L is an nn::Module with a
  /// forward(const Var<T>&) returning Var<T>: ember's layers, or the user's own.
  template <class L, class Mode = exec::mode, class... Args>
  L& emplace(Args&&... args) {
    static_assert(std::is_base_of_v<Module, L>, "ember: nn::Sequential holds nn::Module layers");
    static_assert(detail::has_var_forward<L, T>::value,
                  "ember: a layer of nn::Sequential<T> needs forward(const Var<T>&) -> Var<T>");
    auto layer = std::make_unique<L>(std::forward<Args>(args)...);
    L& ref = *layer;
    register_module(std::to_string(layers_.size()), ref);
    // ember's layers default their translation-unit tag to this file's, as emplace does.
    steps_.push_back([&ref](const Var<T>& x) -> Var<T> { return ref.forward(x); });
    layers_.push_back(std::move(layer));
    return ref;
  }

  std::size_t size() const { return layers_.size(); }
  bool empty() const { return layers_.empty(); }
  /// Layer i, as a Module (the reference emplace returned keeps its type).
  Module& operator[](std::size_t i) const {
    EMBER_CHECK(i < layers_.size(), "ember: nn::Sequential: layer ", i, " of ", layers_.size());
    return *layers_[i];
  }

  /// The layers' forwards, in order (x itself for an empty Sequential).
  template <class Mode = exec::mode>
  Var<T> forward(const Var<T>& x) const {
    Var<T> y = x;
    for (const auto& step : steps_) y = step(y);
    return y;
  }

 private:
  std::vector<std::unique_ptr<Module>> layers_;
  std::vector<std::function<Var<T>(const Var<T>&)>> steps_;
};

}  // namespace ember::nn
