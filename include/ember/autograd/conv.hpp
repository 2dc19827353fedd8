// conv2d of Vars: ops/conv/conv.hpp's convolution, recorded with its backward (the input's and the
// weight's gradients from ops::conv2d_backward, the bias's as a sum over N, H and W). The weight
// and bias may be Vars, Tensors (constants) or, for the bias, undefined.
#pragma once

#include <vector>

#include "../ops/conv/conv.hpp"
#include "normalization.hpp"
#include "op_node.hpp"
#include "var.hpp"

namespace ember::inline EMBER_UNIT_KIND {

template <FloatingElement T>
Var<T> conv2d(const Var<T>& x, const autograd::param_arg_t<T>& weight,
              const autograd::param_arg_t<T>& bias, const Conv2dOptions& opt = {}) {
  const Tensor<T> xv = x.value(), wv = weight.value, bv = bias.value;
  const Tensor<T> y = conv2d<T>(xv, wv, bv, opt);
  const bool need_x = x.requires_grad(), need_w = weight.node && weight.node->requires_grad;
  return Var<T>::from_node(autograd::record_op<T>(
      "conv2d", y, {x.node(), weight.node, bias.node}, {xv, wv},
      [xv, wv, bv, opt, need_x, need_w](const Tensor<T>& g) {
        auto [gx, gw] = ops::conv2d_backward<T>(xv, wv, g, opt, need_x, need_w);
        Tensor<T> gb;
        if (bv.defined()) gb = sum<Tensor<T>>(g, Dims{0, 2, 3});
        return std::vector<Tensor<T>>{gx, gw, gb};
      }));
}
template <FloatingElement T>
Var<T> conv2d(const Var<T>& x, const autograd::param_arg_t<T>& weight,
              const Conv2dOptions& opt = {}) {
  return conv2d<T>(x, weight, Tensor<T>(), opt);
}
}  // namespace ember::inline EMBER_UNIT_KIND
