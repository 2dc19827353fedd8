// scaled_dot_product_attention of Vars: ops/rows/attention.hpp's forward, recorded with its
// backward.
#pragma once

#include <vector>

#include "../core/compiled_once.hpp"
#include "../ops/rows/attention.hpp"
#include "normalization.hpp"
#include "op_node.hpp"
#include "var.hpp"

namespace ember::inline EMBER_UNIT_KIND {

template <FloatingElement T>
Var<T> scaled_dot_product_attention(const Var<T>& q, const autograd::param_arg_t<T>& k,
                                    const autograd::param_arg_t<T>& v,
                                    const Tensor<bool>& mask = {},
                                    const AttentionOptions& opt = {}) {
  const Tensor<T> qv = q.value(), kv = k.value, vv = v.value;
  auto [out, saved] = ops::attention_forward<T>(qv, kv, vv, mask, opt);
  return Var<T>::from_node(autograd::record_op<T>(
      "scaled_dot_product_attention", out, {q.node(), k.node, v.node}, {qv, kv, vv},
      [qv, kv, vv, saved = std::move(saved), opt](const Tensor<T>& g) {
        auto [dq, dk, dv] = ops::attention_backward<T>(qv, kv, vv, saved, opt, g);
        return std::vector<Tensor<T>>{dq, dk, dv};
      }));
}

/// packed_qkv_attention (ops/rows/attention.hpp) of a Var: qkv [..., L, 3, H, E] ->
/// [..., L, H, E], its gradient one tensor.
template <FloatingElement T>
Var<T> packed_qkv_attention(const Var<T>& qkv, const Tensor<bool>& mask = {},
                            const AttentionOptions& opt = {}) {
  const Tensor<T> x = qkv.value();
  auto [out, saved] = ops::packed_attention_forward<T>(x, mask, opt);
  return Var<T>::from_node(autograd::record_op<T>(
      "packed_qkv_attention", out, {qkv.node()}, {x},
      [x, saved = std::move(saved), opt](const Tensor<T>& g) {
        return std::vector<Tensor<T>>{ops::packed_attention_backward<T>(x, saved, opt, g)};
      }));
}
}  // namespace ember::inline EMBER_UNIT_KIND

/// Compiled once in ember::kernels (core/compiled_once.hpp): scaled dot-product attention on
/// tensors and Vars, and its passes.
#define EMBER_ATTENTION_INSTANCES(EXPLICIT, T)                                                    \
  namespace ember {                                                                               \
  EXPLICIT Tensor<T> scaled_dot_product_attention<T>(const Tensor<T>&, const Tensor<T>&,          \
                                                     const Tensor<T>&, const Tensor<bool>&,       \
                                                     const AttentionOptions&);                    \
  EXPLICIT Var<T> scaled_dot_product_attention<T>(const Var<T>&, const autograd::ParamArg<T>&,    \
                                                  const autograd::ParamArg<T>&,                   \
                                                  const Tensor<bool>&, const AttentionOptions&);  \
  EXPLICIT Tensor<T> packed_qkv_attention<T>(const Tensor<T>&, const Tensor<bool>&,               \
                                             const AttentionOptions&);                            \
  EXPLICIT Var<T> packed_qkv_attention<T>(const Var<T>&, const Tensor<bool>&,                     \
                                          const AttentionOptions&);                               \
  }                                                                                               \
  namespace ember::ops {                                                                          \
  EXPLICIT std::pair<Tensor<T>, AttentionSaved<T>> attention_forward<T>(const Tensor<T>&,         \
                                                                        const Tensor<T>&,         \
                                                                        const Tensor<T>&,         \
                                                                        const Tensor<bool>&,      \
                                                                        const AttentionOptions&); \
  EXPLICIT std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> attention_backward<T>(                     \
      const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, const AttentionSaved<T>&,             \
      const AttentionOptions&, const Tensor<T>&);                                                 \
  EXPLICIT std::pair<Tensor<T>, AttentionSaved<T>> packed_attention_forward<T>(                   \
      const Tensor<T>&, const Tensor<bool>&, const AttentionOptions&);                            \
  EXPLICIT Tensor<T> packed_attention_backward<T>(const Tensor<T>&, const AttentionSaved<T>&,     \
                                                  const AttentionOptions&, const Tensor<T>&);     \
  }
EMBER_EXTERN_INSTANCES(EMBER_ATTENTION_INSTANCES)
