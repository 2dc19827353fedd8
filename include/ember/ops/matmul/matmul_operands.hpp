// The operands of a matrix product as batched matrices, and the activations linear fuses.
#pragma once

#include <cstdint>

#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/shape.hpp"
#include "../../tensor/tensor.hpp"
#include "gemm_cpu.hpp"

namespace ember {

/// What linear applies after the bias, in the same pass.
/// gelu is the exact (erf) form, gelu_tanh the tanh approximation (cuBLASLt's GELU epilogue).
enum class Activation { none, relu, gelu, gelu_tanh };

namespace ops {

/// The operands of a matrix product as batched matrices: a [batch..., M, K], b [batch..., K, N],
/// both expanded (views, stride 0 where broadcast) to the common batch shape.
template <Storable T>
struct MatmulOperands {
  Tensor<T> a, b;
  Shape batch;
  std::int64_t M, N, K;
  Shape out_shape;  // what matmul returns (vector dimensions dropped)
};

template <Storable T>
MatmulOperands<T> matmul_operands(const Tensor<T>& a, const Tensor<T>& b, const char* name) {
  EMBER_CHECK(a.defined() && b.defined(), "ember: ", name, ": undefined operand");
  EMBER_CHECK(a.rank() >= 1 && b.rank() >= 1, "ember: ", name,
              ": operands need rank 1 or more, got shapes ", a.shape().str(), " and ",
              b.shape().str());
  EMBER_CHECK(a.device() == b.device(), "ember: ", name, ": operands are on different devices (",
              a.device().str(), " and ", b.device().str(), ")");
  const Tensor<T> a2 = a.rank() == 1 ? a.unsqueeze(0) : a;
  const Tensor<T> b2 = b.rank() == 1 ? b.unsqueeze(1) : b;
  const std::int64_t M = a2.size(-2), K = a2.size(-1), K2 = b2.size(-2), N = b2.size(-1);
  EMBER_CHECK(K == K2, "ember: ", name, ": shapes ", a.shape().str(), " and ", b.shape().str(),
              " do not multiply: ", K, " columns against ", K2, " rows");
  Shape ba = a2.shape(), bb = b2.shape();
  ba.erase(ba.rank() - 1);
  ba.erase(ba.rank() - 1);
  bb.erase(bb.rank() - 1);
  bb.erase(bb.rank() - 1);
  const Shape batch = broadcast_shapes(ba, bb, name);
  Shape ea = batch, eb = batch;
  ea.push_back(M);
  ea.push_back(K);
  eb.push_back(K);
  eb.push_back(N);
  Shape out = batch;
  if (a.rank() > 1) out.push_back(M);
  if (b.rank() > 1) out.push_back(N);
  return {a2.expand(ea), b2.expand(eb), batch, M, N, K, out};
}

/// The matrix at batch position `i` (row-major over the batch shape) of a [batch..., r, c] view.
template <class P, Storable T>
MatrixView<P> batch_matrix(const Tensor<T>& t, const Shape& batch, std::int64_t i) {
  std::int64_t off = 0;
  for (int d = batch.rank() - 1; d >= 0; --d) {
    off += (i % batch[d]) * t.stride(d);
    i /= batch[d];
  }
  const int r = t.rank();
  return {reinterpret_cast<P*>(t.data()) + off, t.size(r - 2), t.size(r - 1), t.stride(r - 2),
          t.stride(r - 1)};
}

/// The matrices of a [batch..., r, c] view over the batch shape `batch`.
template <class P, Storable T>
MatrixBatch<P> matrix_batch(const Tensor<T>& t, const Shape& batch) {
  MatrixBatch<P> m{batch_matrix<P>(t, batch, 0)};
  m.batch_rank = batch.rank();
  for (int d = 0; d < batch.rank(); ++d) {
    m.batch_sizes[d] = batch[d];
    m.batch_strides[d] = t.stride(d);
  }
  return m;
}

}  // namespace ops
}  // namespace ember
