// Small products on the CPU for kernels that keep their tiles in cache (flash attention):
//   c[r][0, n) (+)= sum over k < depth of a(r, k) * b[k][0, n)
// a is read one scalar at a time through two strides (any layout, any storage type, widened to
// A), b and c are rows of A whose length n is padded to whole vectors. Eight rows of c in
// registers at a time, one or two vectors wide: the broadcast-and-FMA kernel that reaches most of
// a core's FMA throughput (about 160 GFLOP/s a core on AVX-512 for float), with none of a GEMM
// library's per-call cost. GCC's generic vectors: 64 bytes a vector, lowered to the machine's
// width (AVX-512, AVX2 or SSE).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../core/config.hpp"
#include "../../core/dtype.hpp"

namespace ember::ops::tile {

template <class A>
struct Vector;
template <>
struct Vector<float> {
  typedef float type __attribute__((vector_size(64)));
};
template <>
struct Vector<double> {
  typedef double type __attribute__((vector_size(64)));
};

/// Elements of A in one vector: the multiple that b's and c's row lengths are padded to.
template <class A>
inline constexpr std::int64_t kLanes = sizeof(typename Vector<A>::type) / sizeof(A);

/// n rounded up to whole vectors of A.
template <class A>
constexpr std::int64_t padded(std::int64_t n) {
  return (n + kLanes<A> - 1) / kLanes<A> * kLanes<A>;
}

/// A view of the a operand: a(r, k) = data[r * row + k * step].
template <class S>
struct Operand {
  const S* data;
  std::int64_t row, step;
};

/// R rows of c, NV vectors wide.
template <int R, int NV, class A, class S>
inline __attribute__((always_inline)) void block(Operand<S> a, const A* b, std::int64_t b_row,
                                                 std::int64_t depth, A* c, std::int64_t c_row,
                                                 bool accumulate) {
  using V = typename Vector<A>::type;
  constexpr std::int64_t W = kLanes<A>;
  V acc[R][NV];
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) {
      if (accumulate) {
        std::memcpy(&acc[r][v], c + r * c_row + v * W, sizeof(V));
      } else {
        acc[r][v] = V{};
      }
    }
  }
  for (std::int64_t k = 0; k < depth; ++k) {
    V bv[NV];
    for (int v = 0; v < NV; ++v) std::memcpy(&bv[v], b + k * b_row + v * W, sizeof(V));
    for (int r = 0; r < R; ++r) {
      const A s = to_acc(a.data[r * a.row + k * a.step]);
      for (int v = 0; v < NV; ++v) acc[r][v] += s * bv[v];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) std::memcpy(c + r * c_row + v * W, &acc[r][v], sizeof(V));
  }
}

/// Fewer than eight rows (the tail), R chosen at run time.
template <int NV, class A, class S>
void tail_block(int rows, Operand<S> a, const A* b, std::int64_t b_row, std::int64_t depth, A* c,
                std::int64_t c_row, bool accumulate) {
  switch (rows) {
    case 1:
      return block<1, NV>(a, b, b_row, depth, c, c_row, accumulate);
    case 2:
      return block<2, NV>(a, b, b_row, depth, c, c_row, accumulate);
    case 3:
      return block<3, NV>(a, b, b_row, depth, c, c_row, accumulate);
    case 4:
      return block<4, NV>(a, b, b_row, depth, c, c_row, accumulate);
    case 5:
      return block<5, NV>(a, b, b_row, depth, c, c_row, accumulate);
    case 6:
      return block<6, NV>(a, b, b_row, depth, c, c_row, accumulate);
    case 7:
      return block<7, NV>(a, b, b_row, depth, c, c_row, accumulate);
    default:
      return;
  }
}

/// c[r][0, n) (+)= sum_k a(r, k) b[k][0, n) for r < rows; n a multiple of kLanes<A>; b's and c's
/// rows b_row and c_row elements apart.
template <class A, class S>
void product(std::int64_t rows, std::int64_t n, std::int64_t depth, Operand<S> a, const A* b,
             std::int64_t b_row, A* c, std::int64_t c_row, bool accumulate) {
  constexpr std::int64_t W = kLanes<A>;
  constexpr int R = 8;
  for (std::int64_t col = 0; col < n;) {
    const bool two = n - col >= 2 * W;
    Operand<S> ar = a;
    std::int64_t r = 0;
    for (; r + R <= rows; r += R, ar.data += R * a.row) {
      if (two) {
        block<R, 2>(ar, b + col, b_row, depth, c + r * c_row + col, c_row, accumulate);
      } else {
        block<R, 1>(ar, b + col, b_row, depth, c + r * c_row + col, c_row, accumulate);
      }
    }
    if (r < rows) {
      const int left = static_cast<int>(rows - r);
      if (two) {
        tail_block<2>(left, ar, b + col, b_row, depth, c + r * c_row + col, c_row, accumulate);
      } else {
        tail_block<1>(left, ar, b + col, b_row, depth, c + r * c_row + col, c_row, accumulate);
      }
    }
    col += two ? 2 * W : W;
  }
}

}  // namespace ember::ops::tile
