// nn::Linear: y = x W^T + b, PyTorch's layer: weight [out, in] and bias [out] are public Vars,
// initialised as PyTorch does (U(+-1/sqrt(in)) for both, from nn::manual_seed's stream), and the
// activation (none, ReLU, GELU) can be fused into the product (ember::linear).
#pragma once

#include <cmath>
#include <cstdint>

#include "../autograd/matmul.hpp"
#include "init.hpp"
#include "module.hpp"

namespace ember::nn {

/// nn::Linear's settings beyond its sizes, PyTorch's keyword arguments by name:
/// `Linear<float>(784, 256, {.activation = Activation::relu})`, `{.bias = false}`.
struct LinearOptions {
  bool bias = true;                          // nn.Linear's bias=
  Activation activation = Activation::none;  // fused into the product (ember::linear)
};

template <FloatingElement T = float>
class Linear : public Module, public Callable<Linear<T>> {
 public:
  Var<T> weight;
  Var<T> bias;  // undefined when built without one
  std::int64_t in_features, out_features;

  // A layer is a type both kinds of unit share, so its evaluating members take the kind's tag
  // (core/config.hpp): .cpp and .cu files may both build and run the same layer type.
  template <class Mode = exec::mode>
  Linear(std::int64_t in, std::int64_t out, const LinearOptions& opt = {},
         Device device = Device::cpu())
      : in_features(in), out_features(out), activation_(opt.activation) {
    EMBER_CHECK(in > 0 && out > 0, "ember: nn::Linear: features must be positive, got ", in, " -> ",
                out);
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    weight = param(init::uniform<T>(Shape{out, in}, -bound, bound, device));
    register_parameter("weight", weight);
    if (opt.bias) {
      bias = param(init::uniform<T>(Shape{out}, -bound, bound, device));
      register_parameter("bias", bias);
    }
  }

  /// x [..., in] -> [..., out].
  template <class Mode = exec::mode>
  Var<T> forward(const Var<T>& x) const {
    return bias.defined() ? linear<Var<T>, Var<T>, Var<T>>(x, weight, bias, activation_)
                          : linear<Var<T>, Var<T>, Tensor<T>>(x, weight, Tensor<T>(), activation_);
  }

 private:
  Activation activation_;
};

}  // namespace ember::nn
