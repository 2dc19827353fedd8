// embedding on Vars: the lookup of ops/embedding.hpp, recorded with its deterministic
// scatter-add backward for the weight (the ids are integers: no gradient).
#pragma once

#include <cstdint>
#include <vector>

#include <optional>

#include "../ops/embedding.hpp"
#include "op_node.hpp"
#include "var.hpp"

namespace ember {

template <FloatingElement T, class Mode = exec::mode>
Var<T> embedding(const Var<T>& weight, const Tensor<std::int64_t>& ids,
                 std::optional<std::int64_t> padding_idx = std::nullopt) {
  const Tensor<T> y = embedding<T, Mode>(weight.value(), ids, padding_idx);
  const std::int64_t V = weight.value().size(0), D = weight.value().size(1);
  const std::int64_t padding = ops::padding_row(padding_idx, V);
  return Var<T>::from_node(autograd::record_op<T>(
      "embedding", y, {weight.node()}, {}, [ids, V, D, padding](const Tensor<T>& g) {
        return std::vector<Tensor<T>>{ops::embedding_backward<T, Mode>(g, ids, V, D, padding)};
      }));
}

}  // namespace ember
