// The iteration space of one evaluation: the output shape with size-1 dimensions dropped,
// dimensions ordered as the first output lies in memory, and neighbours merged wherever every
// operand is dense across them. A dense, unbroadcast evaluation collapses to one dimension of
// unit stride: the fast path.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "../core/shape.hpp"

namespace ember::exec {

/// Extents, and for each array its strides over them: what both iteration spaces (this one
/// and the reduction's, reduce_layout.hpp) are made of, with their two operations.
struct StridedSpace {
  Shape sizes;
  std::vector<Strides> arrays;
  int ndim() const { return sizes.rank(); }

  /// The dimensions of `shape` listed in `order` (a caller leaves out those of size 1, which
  /// add nothing to any offset), every array's strides taken along.
  static StridedSpace permuted(const Shape& shape, const std::vector<Strides>& arrays,
                               const std::vector<int>& order) {
    StridedSpace p;
    for (int d : order) p.sizes.push_back(shape[d]);
    p.arrays.reserve(arrays.size());
    for (const Strides& s : arrays) {
      Strides c;
      for (int d : order) c.push_back(s[d]);
      p.arrays.push_back(c);
    }
    return p;
  }

  /// Merges neighbouring dimensions in [begin, end) that every array walks densely (the outer
  /// stride is the inner one times the inner extent); returns the group's new end.
  int coalesce(int begin, int end) {
    for (int d = end - 2; d >= begin; --d) {
      const bool mergeable = std::all_of(arrays.begin(), arrays.end(), [&](const Strides& s) {
        return s[d] == s[d + 1] * sizes[d + 1];
      });
      if (!mergeable) continue;
      sizes[d] *= sizes[d + 1];
      for (Strides& s : arrays) {
        s[d] = s[d + 1];
        s.erase(d + 1);
      }
      sizes.erase(d + 1);
      --end;
    }
    return end;
  }
};

/// The iteration space of one evaluation; arrays[0] is the first output.
struct IterLayout : StridedSpace {
  std::int64_t numel = 0;
  bool dense = false;  // one unit-stride dimension (or a single element)
};

/// Layout for writing `shape` (all arrays already broadcast to it). With `order_by_first`, the
/// dimensions are visited in the memory order of arrays[0] (the first output).
inline IterLayout make_layout(const Shape& shape, std::vector<Strides> arrays,
                              bool order_by_first = true) {
  std::vector<int> order;
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] != 1) order.push_back(d);
  }
  if (order_by_first && !arrays.empty()) {
    const Strides& first = arrays[0];
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const auto sa = first[a] < 0 ? -first[a] : first[a];
      const auto sb = first[b] < 0 ? -first[b] : first[b];
      return sa > sb;
    });
  }
  IterLayout L;
  static_cast<StridedSpace&>(L) = StridedSpace::permuted(shape, arrays, order);
  L.coalesce(0, L.ndim());
  L.numel = shape.numel();
  L.dense =
      L.ndim() == 0 || (L.ndim() == 1 && std::all_of(L.arrays.begin(), L.arrays.end(),
                                                     [](const Strides& s) { return s[0] == 1; }));
  return L;
}

}  // namespace ember::exec
