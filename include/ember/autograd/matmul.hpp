// matmul and linear of Vars (mixed with Tensors): the products of ops/matmul/matmul.hpp, recorded
// with their backward rules.
//
//   C = A B:                dA = dC B^T, dB = A^T dC, each summed over the batch dimensions its
//                           operand was broadcast along (vectors as NumPy promotes them)
//   Y = act(X W^T + b):     dP = dY act'(P) (one fused pass; P is the pre-activation, kept by the
//                           forward for GELU, or read back from Y for ReLU), then
//                           dX = dP W, dW = dP^T X, db = the column sums of dP (on CUDA from
//                           dW's GEMM: cuBLASLt's bias-gradient epilogue)
// The backward products read transposed views in place (no copies).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/compiled_once.hpp"
#include "../exec/reduce.hpp"
#include "../ops/matmul/matmul.hpp"
#include "op_node.hpp"
#include "var.hpp"

namespace ember::autograd::inline EMBER_UNIT_KIND {

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

/// What a linear(act) keeps for its backward: the output, GELU's pre-activation (either form),
/// and, on CUDA when asked, ReLU's sign bits in cuBLASLt's layout (for a following product's
/// DRELU epilogue, ops::cuda::activation_input_grad).
template <FloatingElement T>
struct LinearSaved {
  Tensor<T> y;
  Tensor<T> pre;                   // [rows, N]; GELU only
  Tensor<std::uint8_t> relu_mask;  // [rows, relu_mask_row_bytes(N)]; CUDA ReLU, when asked
};

/// linear(x, w, bias, act), keeping what its backward reads. On CUDA cuBLASLt writes the
/// tanh-form GELU's pre-activation (and, with `keep_relu_mask`, ReLU's sign bits) in the same
/// call, where its layout rules allow.
template <FloatingElement T>
LinearSaved<T> linear_saving(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>& bias,
                             Activation act, [[maybe_unused]] bool keep_relu_mask) {
  ops::check_linear_args(x, w, bias);
  LinearSaved<T> s;
  const std::int64_t N = w.size(0), rows = x.numel() / std::max<std::int64_t>(w.size(1), 1);
#if defined(EMBER_WITH_CUDA)
  if (x.device().is_cuda() && ops::cuda::activation_aux_supported(act, N) &&
      (act == Activation::gelu_tanh || keep_relu_mask)) {
    void* aux = nullptr;
    if (act == Activation::relu) {
      s.relu_mask = empty<std::uint8_t>(Shape{rows, ops::cuda::relu_mask_row_bytes(N)}, x.device());
      aux = s.relu_mask.data();
    } else {
      s.pre = empty<T>(Shape{rows, N}, x.device());
      aux = s.pre.data();
    }
    s.y = ops::cuda::linear(x, w, bias, act, aux);
    return s;
  }
#endif
  if (act == Activation::gelu || act == Activation::gelu_tanh) {
    s.pre = linear<T>(x, w, bias, Activation::none);
    s.y = act == Activation::gelu ? Tensor<T>(gelu(s.pre)) : Tensor<T>(gelu_tanh(s.pre));
    s.pre = s.pre.reshape(Shape{rows, N});
  } else {
    s.y = linear<T>(x, w, bias, act);
  }
  return s;
}

/// dP = dY act'(P) for dY [rows, N] (one fused pass; ReLU reads its output back).
template <FloatingElement T>
Tensor<T> activation_grad(const Tensor<T>& gy, const LinearSaved<T>& s, Activation act) {
  const Shape shape = gy.shape();
  switch (act) {
    case Activation::none:
      return gy;
    case Activation::relu:
      return Tensor<T>(where(s.y.reshape(shape) > 0.0, gy, 0.0));
    case Activation::gelu:
      return Tensor<T>(gy * expr::make_map(fn::Derivative<fn::GeluErf>{}, s.pre));
    case Activation::gelu_tanh:
      return Tensor<T>(gy * expr::make_map(fn::Derivative<fn::GeluTanh>{}, s.pre));
  }
  return gy;
}

/// A linear's weight and bias gradients from its pre-activation gradient dP [rows, N] and input
/// X [rows, K]: dW = dP^T X, and (with_bias) db = the column sums of dP, on CUDA from dW's GEMM
/// (cuBLASLt's BGRADB epilogue) where cuBLASLt has it.
template <FloatingElement T>
std::pair<Tensor<T>, Tensor<T>> linear_param_grads(const Tensor<T>& gp, const Tensor<T>& x2,
                                                   bool with_bias) {
  Tensor<T> gw, gb;
#if defined(EMBER_WITH_CUDA)
  if (with_bias && gp.device().is_cuda() && gp.size(0) > 0) {
    gw = empty<T>(Shape{gp.size(1), x2.size(1)}, gp.device());
    gb = empty<T>(Shape{gp.size(1)}, gp.device());
    if (ops::cuda::linear_weight_and_bias_grad(gp, x2, gw, gb)) return {gw, gb};
  }
#endif
  gw = matmul<T>(gp.t(), x2);
  if (with_bias) gb = sum<expr::Leaf<T>>(expr::Leaf<T>(gp), Dims{0});
  return {gw, gb};
}
}  // namespace ember::autograd::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// Either operand a Var, the other a Var or a Tensor of the same element type.
template <class A, class B>
concept ProductOperands = autograd::product_arg<A>::value && autograd::product_arg<B>::value &&
                          (autograd::is_var<A>::value || autograd::is_var<B>::value) &&
                          std::is_same_v<typename autograd::product_arg<A>::type,
                                         typename autograd::product_arg<B>::type>;

/// matmul of Vars (or a Var and a Tensor), recorded for backward.
template <class A, class B>
requires ProductOperands<A, B> Var<typename autograd::product_arg<A>::type> matmul(const A& a,
                                                                                   const B& b) {
  using T = typename autograd::product_arg<A>::type;
  const Tensor<T> av = autograd::arg_value(a), bv = autograd::arg_value(b);
  Tensor<T> out = matmul<T>(av, bv);
  return Var<T>::from_node(autograd::record_op<T>(
      "matmul", out, {autograd::arg_node(a), autograd::arg_node(b)}, {av, bv},
      [av, bv](const Tensor<T>& g) {
        // As the forward saw them: a [..., M, K], b [..., K, N], g [batch..., M, N].
        const Tensor<T> a2 = av.rank() == 1 ? av.unsqueeze(0) : av;
        const Tensor<T> b2 = bv.rank() == 1 ? bv.unsqueeze(1) : bv;
        const auto m = ops::matmul_operands(a2, b2, "matmul");
        Shape full = m.batch;
        full.push_back(m.M);
        full.push_back(m.N);
        const Tensor<T> g2 = g.reshape(full);
        const Tensor<T> ga = matmul<T>(g2, b2.transpose(-1, -2));
        const Tensor<T> gb = matmul<T>(a2.transpose(-1, -2), g2);
        return std::vector<Tensor<T>>{sum_to<T>(ga, a2.shape()).reshape(av.shape()),
                                      sum_to<T>(gb, b2.shape()).reshape(bv.shape())};
      }));
}

/// linear of Vars: x [..., K], w [N, K], optional bias [N] (an undefined Tensor for none), then
/// `act`; recorded for backward. Any of x, w, bias may be a Tensor (a constant).
template <class X, class W, class Bias = Tensor<typename autograd::product_arg<X>::type>>
requires ProductOperands<X, W> || ProductOperands<X, Bias> || ProductOperands<W, Bias>
    Var<typename autograd::product_arg<X>::type> linear(const X& x, const W& w,
                                                        const Bias& bias = {},
                                                        Activation act = Activation::none) {
  using T = typename autograd::product_arg<X>::type;
  const Tensor<T> xv = autograd::arg_value(x), wv = autograd::arg_value(w);
  const Tensor<T> bv = autograd::arg_value(bias);
  const autograd::LinearSaved<T> s = autograd::linear_saving<T>(xv, wv, bv, act, false);
  const std::int64_t N = wv.size(0), K = wv.size(1);
  return Var<T>::from_node(autograd::record_op<T>(
      "linear", s.y, {autograd::arg_node(x), autograd::arg_node(w), autograd::arg_node(bias)},
      {xv, wv, bv, s.pre}, [xv, wv, bv, s, act, N, K](const Tensor<T>& g) {
        const std::int64_t rows = g.numel() / std::max<std::int64_t>(N, 1);
        const Tensor<T> gp = autograd::activation_grad<T>(g.reshape(Shape{rows, N}), s, act);
        const Tensor<T> x2 = xv.reshape(Shape{rows, K});
        auto [gw, gb] = autograd::linear_param_grads<T>(gp, x2, bv.defined());
        return std::vector<Tensor<T>>{matmul<T>(gp, wv).reshape(xv.shape()), gw, gb};
      }));
}
}  // namespace ember::inline EMBER_UNIT_KIND

/// Compiled once in ember::kernels (core/compiled_once.hpp): matmul and linear on tensors and Vars,
/// and linear's backward passes.
#define EMBER_MATMUL_INSTANCES(EXPLICIT, T)                                                       \
  namespace ember {                                                                               \
  EXPLICIT Tensor<T> matmul<T>(const Tensor<T>&, const Tensor<T>&);                               \
  EXPLICIT Tensor<T> linear<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, Activation); \
  EXPLICIT Var<T> matmul<Var<T>, Var<T>>(const Var<T>&, const Var<T>&);                           \
  EXPLICIT Var<T> linear<Var<T>, Var<T>, Var<T>>(const Var<T>&, const Var<T>&, const Var<T>&,     \
                                                 Activation);                                     \
  EXPLICIT Var<T> linear<Var<T>, Var<T>, Tensor<T>>(const Var<T>&, const Var<T>&,                 \
                                                    const Tensor<T>&, Activation);                \
  }                                                                                               \
  namespace ember::autograd {                                                                     \
  EXPLICIT LinearSaved<T> linear_saving<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,  \
                                           Activation, bool);                                     \
  EXPLICIT Tensor<T> activation_grad<T>(const Tensor<T>&, const LinearSaved<T>&, Activation);     \
  EXPLICIT std::pair<Tensor<T>, Tensor<T>> linear_param_grads<T>(const Tensor<T>&,                \
                                                                 const Tensor<T>&, bool);         \
  }
EMBER_EXTERN_INSTANCES(EMBER_MATMUL_INSTANCES)
