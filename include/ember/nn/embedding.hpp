// nn::Embedding: PyTorch's lookup table. weight [num_embeddings, embedding_dim] is a public Var
// drawn from N(0, 1) as PyTorch does (nn::manual_seed's stream); forward maps int64 ids of any
// shape to [..., embedding_dim] rows (ember::embedding, an ember::Error naming the id for one
// outside [0, num_embeddings)), and its backward scatter-adds into the weight's gradient. With
// padding_idx (PyTorch's), that row starts at zeros and gets no gradient. With max_norm
// (PyTorch's), each forward first scales the rows it looks up to at most that norm_type-norm,
// in place in the weight (ops::embedding_renorm_).
#pragma once

#include <cstdint>
#include <optional>

#include "../autograd/embedding.hpp"
#include "init.hpp"
#include "module.hpp"

namespace ember::nn {

template <FloatingElement T = float>
class Embedding : public Module, public Callable<Embedding<T>> {
 public:
  Var<T> weight;
  std::int64_t num_embeddings, embedding_dim;
  std::optional<std::int64_t> padding_idx;  // a row that starts at zeros and is never trained
  std::optional<double> max_norm;           // rows looked up are renormalised to at most this
  double norm_type;                         // the p of max_norm's p-norm

  template <class Mode = exec::mode>
  Embedding(std::int64_t count, std::int64_t dim, Device device = Device::cpu(),
            std::optional<std::int64_t> padding = std::nullopt,
            std::optional<double> max_norm_ = std::nullopt, double norm_type_ = 2.0)
      : num_embeddings(count),
        embedding_dim(dim),
        padding_idx(padding),
        max_norm(max_norm_),
        norm_type(norm_type_) {
    EMBER_CHECK(count > 0 && dim > 0,
                "ember: nn::Embedding: num_embeddings and embedding_dim must be positive, got ",
                count, " and ", dim);
    const std::int64_t row = ops::padding_row(padding, count);
    Tensor<T> table = init::normal<T>(Shape{count, dim}, 0.0, 1.0, device);
    if (row >= 0) {
      Tensor<T> zeroed = table.narrow(0, row, 1);
      zeroed = 0.0;
    }
    weight = param(table);
    register_parameter("weight", weight);
  }

  /// ids [...] (int64, on the weight's device) -> [..., embedding_dim].
  template <class Mode = exec::mode>
  Var<T> forward(const Tensor<std::int64_t>& ids) const {
    EMBER_CHECK(ids.defined(), "ember: nn::Embedding: undefined ids");
    return embedding<T>(weight, ids, padding_idx, max_norm, norm_type);
  }
};

}  // namespace ember::nn
