// matmul and linear of Vars (mixed with Tensors): the products of ops/matmul.hpp, recorded with
// their backward rules.
//
//   C = A B:                dA = dC B^T, dB = A^T dC, each summed over the batch dimensions its
//                           operand was broadcast along (vectors as NumPy promotes them)
//   Y = act(X W^T + b):     dP = dY act'(P) (one fused pass; P is the pre-activation, kept by the
//                           forward for GELU, or read back from Y for ReLU), then
//                           dX = dP W, dW = dP^T X, db = the column sums of dP (on CUDA from
//                           dW's GEMM: cuBLASLt's bias-gradient epilogue)
// The backward products read transposed views in place (no copies).
#pragma once

#include <memory>
#include <type_traits>
#include <vector>

#include "../exec/reduce.hpp"
#include "../ops/matmul.hpp"
#include "op_node.hpp"
#include "var.hpp"

namespace ember {

namespace autograd {

/// A matmul or linear argument: a Var (recorded) or a Tensor (a constant).
template <class X>
struct product_arg : std::false_type {};
template <FloatingElement T>
struct product_arg<Var<T>> : std::true_type {
  using type = T;
};
template <FloatingElement T>
struct product_arg<Tensor<T>> : std::true_type {
  using type = T;
};

template <class X>
auto arg_value(const X& x) {
  if constexpr (is_var<X>::value) {
    return x.value();
  } else {
    return x;
  }
}
template <class X>
auto arg_node(const X& x) {
  using T = typename product_arg<X>::type;
  if constexpr (is_var<X>::value) {
    return x.node();
  } else {
    return std::shared_ptr<VarNode<T>>();
  }
}

}  // namespace autograd

/// Either operand a Var, the other a Var or a Tensor of the same element type.
template <class A, class B>
concept ProductOperands = autograd::product_arg<A>::value && autograd::product_arg<B>::value &&
                          (autograd::is_var<A>::value || autograd::is_var<B>::value) &&
                          std::is_same_v<typename autograd::product_arg<A>::type,
                                         typename autograd::product_arg<B>::type>;

/// matmul of Vars (or a Var and a Tensor), recorded for backward.
template <class A, class B, class Mode = exec::mode>
requires ProductOperands<A, B> Var<typename autograd::product_arg<A>::type> matmul(const A& a,
                                                                                   const B& b) {
  using T = typename autograd::product_arg<A>::type;
  const Tensor<T> av = autograd::arg_value(a), bv = autograd::arg_value(b);
  Tensor<T> out = matmul<T, Mode>(av, bv);
  const Shape out_shape = out.shape();
  return Var<T>::from_node(autograd::record_op<T>(
      "matmul", out, {autograd::arg_node(a), autograd::arg_node(b)}, {av, bv},
      [av, bv, out_shape](const Tensor<T>& g) {
        // As the forward saw them: a [..., M, K], b [..., K, N], g [batch..., M, N].
        const Tensor<T> a2 = av.rank() == 1 ? av.unsqueeze(0) : av;
        const Tensor<T> b2 = bv.rank() == 1 ? bv.unsqueeze(1) : bv;
        const auto m = ops::matmul_operands(a2, b2, "matmul");
        Shape full = m.batch;
        full.push_back(m.M);
        full.push_back(m.N);
        const Tensor<T> g2 = g.template reshape<Mode>(full);
        const Tensor<T> ga = matmul<T, Mode>(g2, b2.transpose(-1, -2));
        const Tensor<T> gb = matmul<T, Mode>(a2.transpose(-1, -2), g2);
        return std::vector<Tensor<T>>{
            sum_to<T, Mode>(ga, a2.shape()).template reshape<Mode>(av.shape()),
            sum_to<T, Mode>(gb, b2.shape()).template reshape<Mode>(bv.shape())};
      }));
}

/// linear of Vars: x [..., K], w [N, K], optional bias [N] (an undefined Tensor for none), then
/// `act`; recorded for backward. Any of x, w, bias may be a Tensor (a constant).
template <class X, class W, class Bias = Tensor<typename autograd::product_arg<X>::type>,
          class Mode = exec::mode>
requires ProductOperands<X, W> || ProductOperands<X, Bias> || ProductOperands<W, Bias>
    Var<typename autograd::product_arg<X>::type> linear(const X& x, const W& w,
                                                        const Bias& bias = {},
                                                        Activation act = Activation::none) {
  using T = typename autograd::product_arg<X>::type;
  const Tensor<T> xv = autograd::arg_value(x), wv = autograd::arg_value(w);
  const Tensor<T> bv = autograd::arg_value(bias);
  Tensor<T> y, pre;
  if (act == Activation::gelu || act == Activation::gelu_tanh) {
    // The backward needs the pre-activation. cuBLASLt keeps it in the same call (GELU_AUX) for
    // its tanh-form GELU, when the auxiliary output's leading dimension is a multiple of 8.
    if (xv.device().is_cuda() && act == Activation::gelu_tanh && wv.size(0) % 8 == 0) {
#if defined(EMBER_WITH_CUDA)
      pre = empty<T>(Shape{xv.numel() / std::max<std::int64_t>(wv.size(1), 1), wv.size(0)},
                     xv.device());
      y = ops::cuda::linear(xv, wv, bv, act, pre);
#endif
    } else {
      pre = linear<T, Mode>(xv, wv, bv, Activation::none);
      y = act == Activation::gelu ? Tensor<T>(gelu(pre)) : Tensor<T>(gelu_tanh(pre));
    }
  } else {
    y = linear<T, Mode>(xv, wv, bv, act);
  }
  const std::int64_t N = wv.size(0), K = wv.size(1);
  return Var<T>::from_node(autograd::record_op<T>(
      "linear", y, {autograd::arg_node(x), autograd::arg_node(w), autograd::arg_node(bias)},
      {xv, wv, bv, pre}, [xv, wv, bv, y, pre, act, N, K](const Tensor<T>& g) {
        const std::int64_t rows = g.numel() / std::max<std::int64_t>(N, 1);
        Tensor<T> gp = g.template reshape<Mode>(Shape{rows, N});
        if (act == Activation::relu) {
          gp = Tensor<T>(where(y.template reshape<Mode>(Shape{rows, N}) > 0.0, gp, 0.0));
        } else if (act == Activation::gelu) {
          const Tensor<T> p = pre.template reshape<Mode>(Shape{rows, N});
          gp = Tensor<T>(gp * expr::make_map(fn::Derivative<fn::GeluErf>{}, p));
        } else if (act == Activation::gelu_tanh) {
          const Tensor<T> p = pre.template reshape<Mode>(Shape{rows, N});
          gp = Tensor<T>(gp * expr::make_map(fn::Derivative<fn::GeluTanh>{}, p));
        }
        const Tensor<T> x2 = xv.template reshape<Mode>(Shape{rows, K});
        Tensor<T> gw, gb;
#if defined(EMBER_WITH_CUDA)
        if (bv.defined() && gp.device().is_cuda() && rows > 0) {
          // The bias gradient from the weight gradient's GEMM (cuBLASLt's BGRADB epilogue).
          gw = empty<T>(Shape{N, K}, gp.device());
          gb = empty<T>(Shape{N}, gp.device());
          if (!ops::cuda::linear_weight_and_bias_grad(gp, x2, gw, gb)) gw = gb = Tensor<T>();
        }
#endif
        if (!gw.defined()) {
          gw = matmul<T, Mode>(gp.t(), x2);
          if (bv.defined()) gb = sum<expr::Leaf<T>, Mode>(expr::Leaf<T>(gp), Dims{0});
        }
        return std::vector<Tensor<T>>{matmul<T, Mode>(gp, wv).template reshape<Mode>(xv.shape()),
                                      gw, gb};
      }));
}

}  // namespace ember
