// A strided row-major matrix view, what the CPU matrix products take (ops/matmul/gemm_cpu.hpp,
// ops/matmul/gemm_dnnl.hpp).
#pragma once

#include <cstdint>

namespace ember::ops {

/// A strided row-major matrix view: element (i, j) at data[i * rs + j * cs].
template <class T>
struct MatrixView {
  T* data;
  std::int64_t rows, cols, rs, cs;
  T& operator()(std::int64_t i, std::int64_t j) const { return data[i * rs + j * cs]; }
};

}  // namespace ember::ops
