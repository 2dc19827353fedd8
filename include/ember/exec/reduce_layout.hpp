// The iteration space of a reduction: kept dimensions first (they index the output, which is
// dense), then the reduced ones, each group collapsed on its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../core/shape.hpp"
#include "layout.hpp"

namespace ember::exec {

/// The reduction's iteration space: kept dimensions first (they index the output, which is
/// dense), then reduced ones; each group collapsed separately.
struct ReduceLayout : StridedSpace {
  int kept = 0;  // sizes[0, kept) are kept, sizes[kept, ndim) reduced
  std::int64_t outputs = 1;
  std::int64_t reduced = 1;
  // Every leaf is dense in (kept..., reduced...) order: element r of output o sits at linear
  // index o * reduced + r, so the executors can index linearly.
  bool dense_rows = false;
  // Every leaf is dense in (reduced..., kept...) order: element r of output o sits at linear
  // index r * outputs + o (a sum over the batch axis of a dense tensor).
  bool dense_columns = false;
};

inline ReduceLayout make_reduce_layout(const Shape& shape, const std::vector<bool>& is_reduced,
                                       const std::vector<Strides>& leaf_strides) {
  std::vector<int> order;
  int kept = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (int d = 0; d < shape.rank(); ++d) {
      if (is_reduced[static_cast<std::size_t>(d)] == (pass == 1) && shape[d] != 1)
        order.push_back(d);
    }
    if (pass == 0) kept = static_cast<int>(order.size());
  }
  ReduceLayout L;
  static_cast<StridedSpace&>(L) = StridedSpace::permuted(shape, leaf_strides, order);
  L.coalesce(kept, L.ndim());    // the reduced group
  L.kept = L.coalesce(0, kept);  // the kept group
  for (int d = 0; d < L.kept; ++d) L.outputs *= L.sizes[d];
  for (int d = L.kept; d < L.ndim(); ++d) L.reduced *= L.sizes[d];
  const Strides dense = contiguous_strides(L.sizes);
  L.dense_rows =
      std::all_of(L.arrays.begin(), L.arrays.end(), [&](const Strides& s) { return s == dense; });
  Strides columns = Strides::filled(L.ndim(), 0);
  std::int64_t step = 1;
  auto dense_over = [&](int innermost, int outermost) {
    for (int d = innermost; d >= outermost; --d) {
      columns[d] = step;
      step *= L.sizes[d];
    }
  };
  dense_over(L.kept - 1, 0);         // the kept dimensions vary fastest,
  dense_over(L.ndim() - 1, L.kept);  // then the reduced ones
  L.dense_columns =
      std::all_of(L.arrays.begin(), L.arrays.end(), [&](const Strides& s) { return s == columns; });
  return L;
}

}  // namespace ember::exec
