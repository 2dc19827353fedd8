// embedding on Vars: the lookup of ops/indexing/embedding.hpp, recorded with its deterministic
// scatter-add backward for the weight (the ids are integers: no gradient).
#pragma once

#include <cstdint>
#include <vector>

#include <optional>

#include "../core/compiled_once.hpp"
#include "../ops/indexing/embedding.hpp"
#include "op_node.hpp"
#include "var.hpp"

namespace ember::inline EMBER_UNIT_KIND {

/// embedding of a Var table, recorded (see ops/indexing/embedding.hpp). With max_norm the table's
/// value is renormalised in place first (no gradient flows through that: PyTorch's rule).
template <FloatingElement T>
Var<T> embedding(const Var<T>& weight, const Tensor<std::int64_t>& ids,
                 std::optional<std::int64_t> padding_idx = std::nullopt,
                 std::optional<double> max_norm = std::nullopt, double norm_type = 2.0) {
  const Tensor<T> y = embedding<T>(weight.value(), ids, padding_idx, max_norm, norm_type);
  const std::int64_t V = weight.value().size(0), D = weight.value().size(1);
  const std::int64_t padding = ops::padding_row(padding_idx, V);
  auto node = autograd::record_op<T>(
      "embedding", y, {weight.node()}, {}, [ids, V, D, padding](const Tensor<T>& g) {
        return std::vector<Tensor<T>>{ops::embedding_backward<T>(g, ids, V, D, padding)};
      });
  // A table that already has a gradient (tied to an output projection) gets the rows named.
  // That gradient is dense: accumulate_grad keeps a 2-D gradient contiguous.
  if (auto* op = dynamic_cast<autograd::OpNode<T>*>(node->grad_fn.get())) {
    op->add_into_with([ids, padding](const Tensor<T>& table_grad, const Tensor<T>& g) {
      ops::embedding_backward_add<T>(table_grad, g, ids, padding);
    });
  }
  return Var<T>::from_node(std::move(node));
}
}  // namespace ember::inline EMBER_UNIT_KIND

/// Compiled once in ember::kernels (core/compiled_once.hpp): embedding on tensors and Vars, and its
/// backward.
#define EMBER_EMBEDDING_INSTANCES(EXPLICIT, T)                                                 \
  namespace ember {                                                                            \
  EXPLICIT Tensor<T> embedding<T>(const Tensor<T>&, const Tensor<std::int64_t>&,               \
                                  std::optional<std::int64_t>, std::optional<double>, double); \
  EXPLICIT Var<T> embedding<T>(const Var<T>&, const Tensor<std::int64_t>&,                     \
                               std::optional<std::int64_t>, std::optional<double>, double);    \
  }                                                                                            \
  namespace ember::ops {                                                                       \
  EXPLICIT Tensor<T> embedding_backward<T>(const Tensor<T>&, const Tensor<std::int64_t>&,      \
                                           std::int64_t, std::int64_t, std::int64_t);          \
  EXPLICIT void embedding_backward_add<T>(const Tensor<T>&, const Tensor<T>&,                  \
                                          const Tensor<std::int64_t>&, std::int64_t);          \
  }
EMBER_EXTERN_INSTANCES(EMBER_EMBEDDING_INSTANCES)
