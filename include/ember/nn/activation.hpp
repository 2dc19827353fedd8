// nn::ReLU and nn::GELU: PyTorch's activation layers, for nn::Sequential. Each forward is one
// fused elementwise expression (ember::relu; ember::gelu, the exact erf form, or
// ember::gelu_tanh, the tanh approximation) recorded with its fused backward.
#pragma once

#include "../autograd/var.hpp"
#include "../expr/operators.hpp"
#include "module.hpp"

namespace ember::nn {

template <FloatingElement T = float>
class ReLU : public Module, public Callable<ReLU<T>> {
 public:
  template <class Mode = exec::mode>
  Var<T> forward(const Var<T>& x) const {
    return Var<T>(relu(x));
  }
};

/// GELU(false): 0.5 x (1 + erf(x / sqrt 2)) (BERT's; PyTorch's approximate='none');
/// GELU(true): the tanh approximation (GPT-2's; approximate='tanh').
template <FloatingElement T = float>
class GELU : public Module, public Callable<GELU<T>> {
 public:
  bool approximate;

  explicit GELU(bool tanh_approximation = false) : approximate(tanh_approximation) {}

  template <class Mode = exec::mode>
  Var<T> forward(const Var<T>& x) const {
    return approximate ? Var<T>(gelu_tanh(x)) : Var<T>(gelu(x));
  }
};

}  // namespace ember::nn
