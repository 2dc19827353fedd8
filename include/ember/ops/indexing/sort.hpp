// Sorting along a dimension, with PyTorch's names and rules:
//
//   sort(t, dim, descending)        {values, indices}: stable (equal elements keep their order,
//                                   descending too, as torch.sort(stable=True)); NaN counts as
//                                   larger than everything (last ascending, first descending)
//   argsort(t, dim, descending)     sort's indices
//   topk(t, k, dim, largest)        {values, indices} of the k largest (or smallest), in order;
//                                   ties go to the lower index
//
// Each value becomes an int64 key whose signed order is the sort order (the float's bits with
// the magnitude flipped below zero, -0 as +0, NaN as the largest; bitwise not for descending),
// then every line along dim is sorted stably by key: std::stable_sort per line on the CPU (the
// lines in parallel), CUB's segmented stable sort on the GPU (sort_cuda.cuh). The values are
// then gathered at the indices. Indices are int64, as PyTorch's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>

#include "../../core/config.hpp"
#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/shape.hpp"
#include "../../exec/cpu_executor.hpp"
#include "../../exec/for_each.hpp"
#include "../../exec/launch_counter.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "indexing.hpp"
#if defined(EMBER_CUDA_KERNELS)
#include "sort_cuda.cuh"
#endif

namespace ember {

/// What sort and topk return: the values and where each came from along the dimension.
template <class V>
struct SortResult {
  V values;
  Tensor<std::int64_t> indices;
};
}  // namespace ember

namespace ember::ops::inline EMBER_UNIT_KIND {

/// keys[i]: an int64 whose signed order is src's sort order at element i (see the top).
template <Storable T>
struct SortKeys {
  const T* src;
  std::int64_t* keys;
  bool descending;

  EMBER_HD void operator()(std::int64_t i) const {
    std::int64_t k = 0;
    if constexpr (std::is_same_v<T, double>) {
      const double v = src[i];
      if (v != v) {
        k = std::numeric_limits<std::int64_t>::max();
      } else if (v != 0) {
        std::int64_t b;
        std::memcpy(&b, &v, sizeof b);
        k = b >= 0 ? b : b ^ std::numeric_limits<std::int64_t>::max();
      }
    } else if constexpr (FloatingElement<T>) {  // float, and bf16 and half through float
      const float v = static_cast<float>(to_acc(src[i]));
      if (v != v) {
        k = std::numeric_limits<std::int64_t>::max();
      } else if (v != 0) {
        std::int32_t b;
        std::memcpy(&b, &v, sizeof b);
        k = b >= 0 ? b : b ^ std::numeric_limits<std::int32_t>::max();
      }
    } else {
      k = static_cast<std::int64_t>(src[i]);
    }
    keys[i] = descending ? ~k : k;
  }
};

/// sort_lines' work for exec::launch: std::stable_sort per line on the CPU, CUB's segmented
/// sort on CUDA (sort_cuda.cuh).
template <class = void>  // compiled only where used (docs/design.md)
struct LineSort {
  const std::int64_t* keys;
  std::int64_t* idx;
  std::int64_t lines, n;

  void on_host() const {
    exec::count_launch();
#pragma omp parallel for schedule(dynamic, 1) if (lines * n >= exec::cpu::kParallelThreshold)
    for (std::int64_t l = 0; l < lines; ++l) {
      const std::int64_t* k = keys + l * n;
      std::int64_t* o = idx + l * n;
      std::iota(o, o + n, std::int64_t{0});
      std::stable_sort(o, o + n, [k](std::int64_t a, std::int64_t b) { return k[a] < k[b]; });
    }
  }
#if defined(EMBER_CUDA_KERNELS)
  void on_cuda(int device) const { gpu::sort_lines(keys, idx, lines, n, device); }
#endif
};

/// The order of every line of n keys (dense [lines, n]): idx[l, j] = the position in line l of
/// its j-th smallest key, equal keys in position order.
template <class = void>  // compiled only where called (docs/design.md)
void sort_lines(const Tensor<std::int64_t>& keys, Tensor<std::int64_t>& idx, std::int64_t lines,
                std::int64_t n) {
  if (lines * n == 0) return;
  exec::launch(LineSort<>{keys.data(), idx.data(), lines, n}, keys.device());
}

/// The indices that sort t along dimension d, in t's layout (dense).
template <Storable T>
Tensor<std::int64_t> sort_indices(const Tensor<T>& t, int d, bool descending) {
  // Dimension d last, dense: each line is n consecutive keys.
  const Dims order = moved_dimension(t.rank(), d, t.rank() - 1);
  const Tensor<T> moved = t.permute(order).contiguous();
  const std::int64_t n = t.size(d), lines = n == 0 ? 0 : moved.numel() / n;
  Tensor<std::int64_t> keys = empty<std::int64_t>(moved.shape(), t.device());
  const SortKeys<T> f{moved.data(), keys.data(), descending};
  exec::for_each_index<decltype(f)>(f, moved.numel(), 1, t.device());
  Tensor<std::int64_t> idx = empty<std::int64_t>(moved.shape(), t.device());
  sort_lines(keys, idx, lines, n);
  return idx.permute(inverse_permutation(order)).contiguous();
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// The indices that sort t along `dim` (stable; NaN largest).
template <Storable T>
Tensor<std::int64_t> argsort(const Tensor<T>& t, std::int64_t dim = -1, bool descending = false) {
  EMBER_CHECK(t.defined(), "ember: argsort: an undefined tensor");
  if (t.rank() == 0) return zeros<std::int64_t>(Shape{}, t.device());
  return ops::sort_indices<T>(t, normalize_axis(dim, t.rank(), "argsort"), descending);
}

/// t sorted along `dim` (stable; NaN largest), and the indices the values came from.
template <Storable T>
SortResult<Tensor<T>> sort(const Tensor<T>& t, std::int64_t dim = -1, bool descending = false) {
  EMBER_CHECK(t.defined(), "ember: sort: an undefined tensor");
  if (t.rank() == 0) return {t.clone(), zeros<std::int64_t>(Shape{}, t.device())};
  const int d = normalize_axis(dim, t.rank(), "sort");
  Tensor<std::int64_t> idx = ops::sort_indices<T>(t, d, descending);
  return {gather<T>(t, d, idx), idx};
}

/// The k largest (largest = false: smallest) elements along `dim`, in order, and their indices;
/// equal elements in index order.
template <Storable T>
SortResult<Tensor<T>> topk(const Tensor<T>& t, std::int64_t k, std::int64_t dim = -1,
                           bool largest = true) {
  EMBER_CHECK(t.defined(), "ember: topk: an undefined tensor");
  const int d = t.rank() == 0 ? 0 : normalize_axis(dim, t.rank(), "topk");
  const std::int64_t n = t.rank() == 0 ? 1 : t.size(d);
  EMBER_CHECK(k >= 0 && k <= n, "ember: topk: k = ", k, " for an extent of ", n, " (shape ",
              t.shape().str(), ")");
  if (t.rank() == 0) return sort<T>(t);
  Tensor<std::int64_t> idx = ops::sort_indices<T>(t, d, largest).narrow(d, 0, k).contiguous();
  return {gather<T>(t, d, idx), idx};
}
}  // namespace ember::inline EMBER_UNIT_KIND
