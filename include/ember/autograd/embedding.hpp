// embedding on Vars: the lookup of ops/embedding.hpp, recorded with its deterministic
// scatter-add backward for the weight (the ids are integers: no gradient).
#pragma once

#include <cstdint>
#include <vector>

#include "../ops/embedding.hpp"
#include "op_node.hpp"
#include "var.hpp"

namespace ember {

template <FloatingElement T, class Mode = exec::mode>
Var<T> embedding(const Var<T>& weight, const Tensor<std::int64_t>& ids) {
  const Tensor<T> y = embedding<T, Mode>(weight.value(), ids);
  const std::int64_t V = weight.value().size(0), D = weight.value().size(1);
  return Var<T>::from_node(
      autograd::record_op<T>("embedding", y, {weight.node()}, {}, [ids, V, D](const Tensor<T>& g) {
        return std::vector<Tensor<T>>{ops::embedding_backward<T, Mode>(g, ids, V, D)};
      }));
}

}  // namespace ember
