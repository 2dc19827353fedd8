// conv2d of Vars: ops/conv/conv.hpp's convolution, recorded with its backward (the input's and the
// weight's gradients from ops::conv2d_backward, the bias's as a sum over N, H and W). The weight
// and bias may be Vars, Tensors (constants) or, for the bias, undefined.
#pragma once

#include <vector>

#include "../core/compiled_once.hpp"
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

/// Compiled once in ember::kernels (core/compiled_once.hpp): conv2d on tensors and Vars, and its
/// backward.
#define EMBER_CONV_INSTANCES(EXPLICIT, T)                                                         \
  namespace ember {                                                                               \
  EXPLICIT Tensor<T> conv2d<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,              \
                               const Conv2dOptions&);                                             \
  EXPLICIT Tensor<T> conv2d<T>(const Tensor<T>&, const Tensor<T>&, const Conv2dOptions&);         \
  EXPLICIT Var<T> conv2d<T>(const Var<T>&, const autograd::ParamArg<T>&,                          \
                            const autograd::ParamArg<T>&, const Conv2dOptions&);                  \
  EXPLICIT Var<T> conv2d<T>(const Var<T>&, const autograd::ParamArg<T>&, const Conv2dOptions&);   \
  }                                                                                               \
  namespace ember::ops {                                                                          \
  EXPLICIT std::pair<Tensor<T>, Tensor<T>> conv2d_backward<T>(const Tensor<T>&, const Tensor<T>&, \
                                                              const Tensor<T>&,                   \
                                                              const Conv2dOptions&, bool, bool);  \
  }
EMBER_EXTERN_INSTANCES(EMBER_CONV_INSTANCES)
