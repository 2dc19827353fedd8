// Joining and splitting tensors along a dimension, with PyTorch's names and rules:
//
//   cat(list, dim)             the tensors end to end along dim; every other extent equal (a 1-D
//                              tensor of size 0 is skipped, as in PyTorch); one copy per input
//   stack(list, dim)           the tensors (all of one shape) along a new dimension dim
//   split(t, size, dim)        views of `size` along dim (the last one shorter when it must be)
//   split(t, {sizes...}, dim)  views of these sizes, which must add up to t's extent
//   chunk(t, n, dim)           split(t, ceil(extent / n), dim): n views or fewer, as torch.chunk
//
// The list is a braced list or a std::vector of tensors of one element type on one device.
// split and chunk return views (no copy); cat and stack write a new dense tensor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/shape.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"

namespace ember::ops::inline EMBER_UNIT_KIND {

/// Whether cat leaves `t` out: a 1-D tensor of size 0 joins anything (PyTorch's legacy rule).
template <Storable T>
bool cat_skips(const Tensor<T>& t) {
  return t.rank() == 1 && t.numel() == 0;
}

/// What cat(list, dim) makes: its shape, dim normalised, and the device.
struct CatLayout {
  Shape shape;
  int dim = 0;
  Device device;
};

/// cat's layout; throws ember::Error naming the first tensor that does not fit.
template <Storable T>
CatLayout cat_layout(const std::vector<Tensor<T>>& list, std::int64_t dim, const char* name) {
  EMBER_CHECK(!list.empty(), "ember: ", name, ": the list of tensors is empty");
  const Tensor<T>* first = nullptr;
  for (const Tensor<T>& t : list) {
    EMBER_CHECK(t.defined(), "ember: ", name, ": an undefined tensor in the list");
    if (!first && !cat_skips(t)) first = &t;
  }
  if (!first) return {list.front().shape(), 0, list.front().device()};  // only empty 1-D ones
  EMBER_CHECK(first->rank() > 0, "ember: ", name, ": a rank-0 tensor cannot be concatenated");
  const int d = normalize_axis(dim, first->rank(), name);
  Shape out = first->shape();
  out[d] = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Tensor<T>& t = list[i];
    if (cat_skips(t)) continue;
    EMBER_CHECK(t.device() == first->device(), "ember: ", name, ": tensor ", i, " is on ",
                t.device().str(), ", the first on ", first->device().str());
    bool fits = t.rank() == first->rank();
    for (int k = 0; fits && k < t.rank(); ++k) fits = k == d || t.size(k) == first->size(k);
    EMBER_CHECK(fits, "ember: ", name, ": tensor ", i, " has shape ", t.shape().str(),
                ", which does not match ", first->shape().str(), " outside dimension ", d);
    out[d] += t.size(d);
  }
  return {out, d, first->device()};
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// The tensors of `list` end to end along `dim` (see the top of this header).
template <Storable T>
Tensor<T> cat(const std::vector<Tensor<T>>& list, std::int64_t dim = 0) {
  const ops::CatLayout layout = ops::cat_layout(list, dim, "cat");
  const int d = layout.dim;
  Tensor<T> out = empty<T>(layout.shape, layout.device);
  std::int64_t at = 0;
  for (const Tensor<T>& t : list) {
    if (ops::cat_skips(t)) continue;  // no elements
    const std::int64_t n = t.size(d);
    if (n > 0) out.narrow(d, at, n).template copy_<T>(t);
    at += n;
  }
  return out;
}
template <Storable T>
Tensor<T> cat(std::initializer_list<Tensor<T>> list, std::int64_t dim = 0) {
  return cat<T>(std::vector<Tensor<T>>(list), dim);
}
}  // namespace ember::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// stack's checks on a list of Tensors or Vars (all defined, one shape), and `dim` normalised
/// against the stacked rank.
template <class X>
int stack_dim(const std::vector<X>& list, std::int64_t dim) {
  EMBER_CHECK(!list.empty(), "ember: stack: the list is empty");
  for (std::size_t i = 0; i < list.size(); ++i) {
    EMBER_CHECK(list[i].defined(), "ember: stack: entry ", i, " of the list is undefined");
    EMBER_CHECK(list[i].shape() == list.front().shape(), "ember: stack: entry ", i, " has shape ",
                list[i].shape().str(), ", the first ", list.front().shape().str(),
                " (stack needs one shape)");
  }
  return normalize_axis(dim, list.front().shape().rank() + 1, "stack");
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// The tensors of `list`, all of one shape, along a new dimension `dim` (in [-rank-1, rank]).
template <Storable T>
Tensor<T> stack(const std::vector<Tensor<T>>& list, std::int64_t dim = 0) {
  const int d = ops::stack_dim(list, dim);
  std::vector<Tensor<T>> parts;
  parts.reserve(list.size());
  for (const Tensor<T>& t : list) parts.push_back(t.unsqueeze(d));
  return cat<T>(parts, d);
}
template <Storable T>
Tensor<T> stack(std::initializer_list<Tensor<T>> list, std::int64_t dim = 0) {
  return stack<T>(std::vector<Tensor<T>>(list), dim);
}
}  // namespace ember::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// The extents split(t, sizes, dim) cuts dimension d of extent n into.
inline std::vector<std::int64_t> split_sizes(std::int64_t n, const std::vector<std::int64_t>& sizes,
                                             const char* name) {
  std::int64_t total = 0;
  for (const std::int64_t s : sizes) {
    EMBER_CHECK(s >= 0, "ember: ", name, ": a negative size ", s);
    total += s;
  }
  EMBER_CHECK(total == n, "ember: ", name, ": sizes adding up to ", total, " for an extent of ", n);
  return sizes;
}

/// The extents of split(t, size, dim): `size` each, the last one what is left (one empty piece
/// for an empty extent, as PyTorch gives).
inline std::vector<std::int64_t> split_even(std::int64_t n, std::int64_t size, const char* name) {
  EMBER_CHECK(size > 0 || (size == 0 && n == 0), "ember: ", name, ": the split size must be ",
              "positive, got ", size);
  if (n == 0) return {0};
  std::vector<std::int64_t> out;
  for (std::int64_t at = 0; at < n; at += size) out.push_back(std::min(size, n - at));
  return out;
}

/// chunk's piece extent: ceil(n / chunks) (0 for an empty extent).
inline std::int64_t chunk_size(std::int64_t n, std::int64_t chunks) {
  EMBER_CHECK(chunks > 0, "ember: chunk: the number of chunks must be positive, got ", chunks);
  return n == 0 ? 0 : (n + chunks - 1) / chunks;
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// Views of `t` along `dim` of the given extents (which add up to t's extent).
template <Storable T>
std::vector<Tensor<T>> split(const Tensor<T>& t, const std::vector<std::int64_t>& sizes,
                             std::int64_t dim = 0) {
  EMBER_CHECK(t.defined() && t.rank() > 0, "ember: split: needs a tensor of rank 1 or more");
  const int d = normalize_axis(dim, t.rank(), "split");
  std::vector<Tensor<T>> out;
  std::int64_t at = 0;
  for (const std::int64_t s : ops::split_sizes(t.size(d), sizes, "split")) {
    out.push_back(t.narrow(d, at, s));
    at += s;
  }
  return out;
}
/// Views of `t` along `dim` of `size` each (the last one shorter when the extent is not a
/// multiple).
template <Storable T>
std::vector<Tensor<T>> split(const Tensor<T>& t, std::int64_t size, std::int64_t dim = 0) {
  EMBER_CHECK(t.defined() && t.rank() > 0, "ember: split: needs a tensor of rank 1 or more");
  const int d = normalize_axis(dim, t.rank(), "split");
  return split(t, ops::split_even(t.size(d), size, "split"), d);
}

/// `chunks` views of `t` along `dim` of ceil(extent / chunks) each, or fewer (torch.chunk).
template <Storable T>
std::vector<Tensor<T>> chunk(const Tensor<T>& t, std::int64_t chunks, std::int64_t dim = 0) {
  EMBER_CHECK(t.defined() && t.rank() > 0, "ember: chunk: needs a tensor of rank 1 or more");
  const int d = normalize_axis(dim, t.rank(), "chunk");
  return split(t, ops::chunk_size(t.size(d), chunks), d);
}
}  // namespace ember::inline EMBER_UNIT_KIND
