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

struct IterLayout {
  Shape sizes;                  // collapsed extents
  std::vector<Strides> arrays;  // collapsed strides of every operand (outputs first)
  std::int64_t numel = 0;
  bool dense = false;  // one unit-stride dimension (or a single element)
  int ndim() const { return sizes.rank(); }
};

/// Merges neighbouring dimensions in [begin, end) that every array walks densely.
inline void merge_dims(Shape& sizes, std::vector<Strides>& arrays, int begin, int& end) {
  for (int d = end - 2; d >= begin; --d) {
    bool mergeable = true;
    for (const Strides& s : arrays) {
      if (s[d] != s[d + 1] * sizes[d + 1]) {
        mergeable = false;
        break;
      }
    }
    if (!mergeable) continue;
    sizes[d] *= sizes[d + 1];
    for (Strides& s : arrays) {
      s[d] = s[d + 1];
      s.erase(d + 1);
    }
    sizes.erase(d + 1);
    --end;
  }
}

/// Layout for writing `shape` (all arrays already broadcast to it). With `order_by_first`, the
/// dimensions are visited in the memory order of arrays[0] (the first output).
inline IterLayout make_layout(const Shape& shape, std::vector<Strides> arrays,
                              bool order_by_first = true) {
  IterLayout L;
  L.numel = shape.numel();
  // Drop size-1 dimensions: they contribute nothing to any offset.
  std::vector<int> dims;
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] != 1) dims.push_back(d);
  }
  if (order_by_first && !arrays.empty()) {
    const Strides& first = arrays[0];
    std::stable_sort(dims.begin(), dims.end(), [&](int a, int b) {
      const auto sa = first[a] < 0 ? -first[a] : first[a];
      const auto sb = first[b] < 0 ? -first[b] : first[b];
      return sa > sb;
    });
  }
  for (int d : dims) L.sizes.push_back(shape[d]);
  L.arrays.reserve(arrays.size());
  for (const Strides& s : arrays) {
    Strides c;
    for (int d : dims) c.push_back(s[d]);
    L.arrays.push_back(c);
  }
  int end = L.sizes.rank();
  merge_dims(L.sizes, L.arrays, 0, end);
  L.dense = L.sizes.rank() == 0 ||
            (L.sizes.rank() == 1 && std::all_of(L.arrays.begin(), L.arrays.end(),
                                                [](const Strides& s) { return s[0] == 1; }));
  return L;
}

}  // namespace ember::exec
