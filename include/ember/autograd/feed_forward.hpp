// feed_forward of Vars (mixed with Tensors): linear(linear(x, w1, b1, act), w2, b2) recorded as
// one node, so that its backward can multiply by the activation's derivative inside a GEMM.
//
//   H = act(P), P = X W1^T + b1;  Y = H W2^T + b2
//   dW2 = dY^T H, db2 = column sums of dY       (CUDA: one GEMM, BGRADB)
//   dP = (dY W2) act'(P), db1 = column sums of dP
//                                               (CUDA, ReLU and tanh-form GELU: one GEMM whose
//                                                epilogue reads the aux the forward kept,
//                                                DRELU_BGRAD / DGELU_BGRAD)
//   dW1 = dP^T X, dX = dP W1
//
// Two linears recorded apart cannot do this: the first linear's backward receives dH from the
// second's and has to multiply by act'(P) in a pass of its own. Elsewhere (the CPU, the exact
// GELU that cuBLASLt has no epilogue for) the products and the fused act' pass are those of two
// linears.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "../core/compiled_once.hpp"
#include "../ops/matmul/feed_forward.hpp"
#include "matmul.hpp"

namespace ember::inline EMBER_UNIT_KIND {

/// feed_forward's arguments: each a Var (recorded) or a Tensor (a constant), one Var at least,
/// all of one element type.
template <class X, class... Rest>
concept FeedForwardOperands = autograd::product_arg<X>::value &&
                              (autograd::product_arg<Rest>::value&&...) &&
                              (autograd::is_var<X>::value ||
                               (autograd::is_var<Rest>::value || ...)) &&
                              (std::is_same_v<typename autograd::product_arg<X>::type,
                                              typename autograd::product_arg<Rest>::type> &&
                               ...);

/// feed_forward of Vars, recorded for backward (see the top of this header). b1 and b2 may be
/// undefined Tensors (no bias).
template <class X, class W1, class B1, class W2, class B2>
requires FeedForwardOperands<X, W1, B1, W2, B2> Var<typename autograd::product_arg<X>::type>
feed_forward(const X& x, const W1& w1, const B1& b1, const W2& w2, const B2& b2, Activation act) {
  using T = typename autograd::product_arg<X>::type;
  using autograd::arg_node;
  using autograd::arg_value;
  const Tensor<T> xv = arg_value(x), w1v = arg_value(w1), b1v = arg_value(b1);
  const Tensor<T> w2v = arg_value(w2), b2v = arg_value(b2);
  ops::check_feed_forward_args(xv, w1v, b1v, w2v, b2v);
  // The hidden activation keeps what dP needs: on CUDA the aux of the epilogue that will read it.
  const autograd::LinearSaved<T> hidden =
      autograd::linear_saving<T>(xv, w1v, b1v, act, /*keep_relu_mask=*/true);
  const Tensor<T> y = linear<T>(hidden.y, w2v, b2v, Activation::none);
  const std::int64_t K = w1v.size(1), F = w1v.size(0), N = w2v.size(0);
  const std::int64_t rows = xv.numel() / std::max<std::int64_t>(K, 1);
  return Var<T>::from_node(autograd::record_op<T>(
      "feed_forward", y, {arg_node(x), arg_node(w1), arg_node(b1), arg_node(w2), arg_node(b2)},
      {xv, w1v, b1v, w2v, b2v, hidden.y, hidden.pre},
      [xv, w1v, b1v, w2v, b2v, hidden, act, K, F, N, rows](const Tensor<T>& g) {
        const Tensor<T> gy = g.reshape(Shape{rows, N});
        const Tensor<T> h = hidden.y.reshape(Shape{rows, F});
        auto [gw2, gb2] = autograd::linear_param_grads<T>(gy, h, b2v.defined());
        Tensor<T> gp, gb1;
#if defined(EMBER_WITH_CUDA)
        if (gy.device().is_cuda() && ops::cuda::activation_aux_supported(act, F) &&
            (hidden.relu_mask.defined() || act == Activation::gelu_tanh)) {
          gp = empty<T>(Shape{rows, F}, gy.device());
          if (b1v.defined()) gb1 = empty<T>(Shape{F}, gy.device());
          const void* aux = act == Activation::relu
                                ? static_cast<const void*>(hidden.relu_mask.data())
                                : static_cast<const void*>(hidden.pre.data());
          if (!ops::cuda::activation_input_grad(gy, w2v, act, aux, gp, gb1)) {
            gp = gb1 = Tensor<T>();
          }
        }
#endif
        if (!gp.defined()) {
          gp = autograd::activation_grad<T>(matmul<T>(gy, w2v), hidden, act);
        }
        const Tensor<T> x2 = xv.reshape(Shape{rows, K});
        auto [gw1, gb1_apart] =
            autograd::linear_param_grads<T>(gp, x2, b1v.defined() && !gb1.defined());
        if (!gb1.defined()) gb1 = gb1_apart;
        return std::vector<Tensor<T>>{matmul<T>(gp, w1v).reshape(xv.shape()), gw1, gb1, gw2, gb2};
      }));
}
}  // namespace ember::inline EMBER_UNIT_KIND

/// Compiled once in ember::kernels (core/compiled_once.hpp): the feed-forward block on tensors and
/// Vars.
#define EMBER_FEED_FORWARD_INSTANCES(EXPLICIT, T)                                             \
  namespace ember {                                                                           \
  EXPLICIT Tensor<T> feed_forward<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,    \
                                     const Tensor<T>&, const Tensor<T>&, Activation);         \
  EXPLICIT Var<T> feed_forward<Var<T>, Var<T>, Var<T>, Var<T>, Var<T>>(                       \
      const Var<T>&, const Var<T>&, const Var<T>&, const Var<T>&, const Var<T>&, Activation); \
  }
EMBER_EXTERN_INSTANCES(EMBER_FEED_FORWARD_INSTANCES)
