// A strided row-major matrix view, what the CPU matrix products take (ops/matmul/gemm_cpu.hpp,
// ops/matmul/gemm_dnnl.hpp).
#pragma once

#include <cstdint>

#include "../../core/config.hpp"

namespace ember::ops {

/// A strided row-major matrix view: element (i, j) at data[i * rs + j * cs].
template <class T>
struct MatrixView {
  T* data;
  std::int64_t rows, cols, rs, cs;
  T& operator()(std::int64_t i, std::int64_t j) const { return data[i * rs + j * cs]; }
};

/// Matrices of one shape at strided positions over a batch shape: matrix (b_0, ..., b_n-1)
/// starts at first.data + sum of b_d * batch_strides[d] (stride 0 along a broadcast extent).
template <class T>
struct MatrixBatch {
  MatrixView<T> first;
  int batch_rank = 0;
  std::int64_t batch_sizes[kMaxRank] = {};
  std::int64_t batch_strides[kMaxRank] = {};
};

}  // namespace ember::ops
