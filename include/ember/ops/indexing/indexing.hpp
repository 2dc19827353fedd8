// Indexing by integer tensors, with PyTorch's names and rules:
//
//   index_select(t, dim, idx)       idx 1-D int64: out has t's shape with dim's extent idx's
//                                   size; out[..., j, ...] = t[..., idx[j], ...]
//   gather(t, dim, idx)             idx of t's rank (extents <= t's outside dim): out has idx's
//                                   shape; out[..., j, ...] = t[..., idx[..., j, ...], ...]
//   scatter_add(t, dim, idx, src)   out of place: t plus, for every position p of idx, src[p]
//                                   added at p with its dim coordinate replaced by idx[p]
//   masked_fill(t, mask, value)     value where mask is true, else t (where(mask, value, t))
//   one_hot(ids, n)                 int64 [..., n], 1 at each id's class (n < 0: max id + 1)
//
// Indices outside [0, extent) are an ember::Error (one reduction counts them). Every output is
// a new dense tensor; t, src and idx may be strided views. Each op is one pass (exec::
// for_each_index), the same functor on the CPU and the GPU.
//
// scatter_add is deterministic: each output element sums, in increasing position order and in
// the compute type (float for bf16/half), the src values aimed at it, rounded once; no atomics.
// An output element scans idx's extent along dim for them, so the pass costs numel(t) times
// that extent: fine for the class and token dimensions scatter_add serves, quadratic for a
// scatter along one long dimension.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/shape.hpp"
#include "../../exec/for_each.hpp"
#include "../../exec/generate.hpp"
#include "../../exec/reduce.hpp"
#include "../../expr/operators.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"

namespace ember::ops::inline EMBER_UNIT_KIND {

/// Extents and element strides of up to kMaxRank dimensions, by value inside kernels.
struct Geometry {
  int rank = 0;
  std::int64_t size[kMaxRank] = {};
  std::int64_t stride[kMaxRank] = {};
};

/// `sizes`' extents with `strides` (a tensor's, or a dense layout's).
inline Geometry geometry(const Shape& sizes, const Strides& strides) {
  Geometry g;
  g.rank = sizes.rank();
  for (int k = 0; k < g.rank; ++k) {
    g.size[k] = sizes[k];
    g.stride[k] = strides[k];
  }
  return g;
}

/// An index of `idx` outside [0, n) (the smallest when one is negative, else the largest), or
/// none. One reduction (one wait for a GPU) counts them; the offender is looked up only when
/// there is one.
template <class = void>  // compiled only where called (docs/design.md)
std::optional<std::int64_t> index_outside(const Tensor<std::int64_t>& idx, std::int64_t n) {
  if (idx.numel() == 0) return std::nullopt;
  const auto outside = logical_or(idx < std::int64_t{0}, idx >= n);
  if (sum<decltype(outside)>(outside).item() == 0) return std::nullopt;
  const std::int64_t lo = min<Tensor<std::int64_t>>(idx).item();
  return lo < 0 ? lo : max<Tensor<std::int64_t>>(idx).item();
}

/// Throws unless every index is in [0, n), naming the op and the shape indexed.
template <class = void>  // compiled only where called (docs/design.md)
void check_indices(const Tensor<std::int64_t>& idx, std::int64_t n, const char* name,
                   const Shape& of) {
  if (const auto bad = index_outside(idx, n)) {
    fail("ember: ", name, ": index ", *bad, " is outside [0, ", n, ") (a dimension of ", of.str(),
         ")");
  }
}

/// The order that moves dimension `from` of a rank-`rank` tensor to position `to`, the others
/// keeping theirs (torch.movedim's permutation).
inline Dims moved_dimension(int rank, int from, int to) {
  std::vector<std::int64_t> order;
  for (int k = 0; k < rank; ++k) {
    if (k != from) order.push_back(k);
  }
  order.insert(order.begin() + to, from);
  return Dims(order);
}

/// The permutation that undoes `order`.
inline Dims inverse_permutation(const Dims& order) {
  std::vector<std::int64_t> back(static_cast<std::size_t>(order.rank()));
  for (int k = 0; k < order.rank(); ++k) back[static_cast<std::size_t>(order[k])] = k;
  return Dims(back);
}

/// Output element i of index_select (idx read at i's dim coordinate) or gather (idx read at i).
template <class T>
struct GatherAlong {
  const T* src;
  const std::int64_t* idx;  // dense: 1-D (index_select) or of the output's shape (gather)
  T* out;                   // dense
  Geometry geo;             // the output's extents, src's strides
  int dim;
  bool per_element;  // gather

  EMBER_HD void operator()(std::int64_t i) const {
    std::int64_t rem = i, off = 0;
    for (int k = geo.rank - 1; k >= 0; --k) {
      const std::int64_t c = rem % geo.size[k];
      rem /= geo.size[k];
      off += (k == dim ? idx[per_element ? i : c] : c) * geo.stride[k];
    }
    out[i] = src[off];
  }
};

/// Output element i of scatter_add: base[i] plus the src values whose index lands on it.
template <class T>
struct ScatterAddAlong {
  const T* base;            // dense, the output's shape
  const T* src;             // strided: src_stride
  const std::int64_t* idx;  // dense, idx_geo
  T* out;                   // dense
  Geometry out_geo;         // extents of the output
  Geometry idx_geo;         // extents and (dense) strides of idx
  std::int64_t src_stride[kMaxRank];
  int dim;

  EMBER_HD void operator()(std::int64_t i) const {
    using A = acc_t<T>;
    A s = to_acc(base[i]);
    std::int64_t rem = i, idx_off = 0, src_off = 0, target = 0;
    bool covered = true;
    for (int k = out_geo.rank - 1; k >= 0; --k) {
      const std::int64_t c = rem % out_geo.size[k];
      rem /= out_geo.size[k];
      if (k == dim) {
        target = c;
      } else {
        covered = covered && c < idx_geo.size[k];
        idx_off += c * idx_geo.stride[k];
        src_off += c * src_stride[k];
      }
    }
    if (covered) {
      const std::int64_t n = idx_geo.size[dim];
      for (std::int64_t j = 0; j < n; ++j) {
        if (idx[idx_off + j * idx_geo.stride[dim]] == target) {
          s += to_acc(src[src_off + j * src_stride[dim]]);
        }
      }
    }
    out[i] = to_storage<T>(s);
  }
};
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// The slices of `t` along `dim` at the positions `idx` (1-D), in idx's order.
template <Storable T>
Tensor<T> index_select(const Tensor<T>& t, std::int64_t dim, const Tensor<std::int64_t>& idx) {
  EMBER_CHECK(t.defined() && idx.defined(), "ember: index_select: an undefined operand");
  EMBER_CHECK(idx.rank() <= 1, "ember: index_select: the index must be 1-D, got ",
              idx.shape().str());
  EMBER_CHECK(t.device() == idx.device(), "ember: index_select: the tensor is on ",
              t.device().str(), ", the index on ", idx.device().str());
  const bool scalar = t.rank() == 0;
  EMBER_CHECK(!scalar || idx.numel() == 1, "ember: index_select: a rank-0 tensor takes one ",
              "index, got ", idx.numel());
  const Tensor<T> src = scalar ? t.reshape(Shape{1}) : t;
  const int d = normalize_axis(dim, src.rank(), "index_select");
  const Tensor<std::int64_t> ix = idx.contiguous().reshape(Shape{idx.numel()});
  ops::check_indices(ix, src.size(d), "index_select", src.shape());
  Shape shape = src.shape();
  shape[d] = ix.numel();
  Tensor<T> out = empty<T>(shape, t.device());
  const ops::GatherAlong<T> f{
      src.data(), ix.data(), out.data(), ops::geometry(shape, src.strides()), d, false};
  exec::for_each_index<decltype(f)>(f, out.numel(), 1, t.device());
  return scalar ? out.reshape(Shape{}) : out;
}
}  // namespace ember::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// gather's and scatter_add's rule: idx has t's rank and no larger extent outside dim.
template <Storable T>
int gather_dim(const Tensor<T>& t, std::int64_t dim, const Tensor<std::int64_t>& idx,
               const char* name) {
  EMBER_CHECK(t.defined() && idx.defined(), "ember: ", name, ": an undefined operand");
  EMBER_CHECK(t.device() == idx.device(), "ember: ", name, ": the tensor is on ", t.device().str(),
              ", the index on ", idx.device().str());
  EMBER_CHECK(idx.rank() == t.rank(), "ember: ", name, ": the index has rank ", idx.rank(),
              ", the tensor ", t.rank(), " (they must match)");
  EMBER_CHECK(t.rank() > 0, "ember: ", name, ": a rank-0 tensor needs a rank-0 index");
  const int d = normalize_axis(dim, t.rank(), name);
  for (int k = 0; k < t.rank(); ++k) {
    EMBER_CHECK(k == d || idx.size(k) <= t.size(k), "ember: ", name, ": index shape ",
                idx.shape().str(), " is larger than ", t.shape().str(), " in dimension ", k);
  }
  return d;
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// out[..., j, ...] = t[..., idx[..., j, ...], ...] along `dim`; out has idx's shape.
template <Storable T>
Tensor<T> gather(const Tensor<T>& t, std::int64_t dim, const Tensor<std::int64_t>& idx) {
  if (t.defined() && t.rank() == 0 && idx.defined() && idx.rank() == 0) {
    return gather<T>(t.reshape(Shape{1}), 0, idx.reshape(Shape{1})).reshape(Shape{});
  }
  const int d = ops::gather_dim(t, dim, idx, "gather");
  const Tensor<std::int64_t> ix = idx.contiguous();
  ops::check_indices(ix, t.size(d), "gather", t.shape());
  Tensor<T> out = empty<T>(ix.shape(), t.device());
  const ops::GatherAlong<T> f{
      t.data(), ix.data(), out.data(), ops::geometry(ix.shape(), t.strides()), d, true};
  exec::for_each_index<decltype(f)>(f, out.numel(), 1, t.device());
  return out;
}

/// t with src added at the positions idx names along `dim` (see the top of this header); idx's
/// extents are at most src's, and t's outside dim.
template <Storable T>
Tensor<T> scatter_add(const Tensor<T>& t, std::int64_t dim, const Tensor<std::int64_t>& idx,
                      const Tensor<T>& src) {
  if (t.defined() && t.rank() == 0 && idx.defined() && idx.rank() == 0 && src.defined() &&
      src.rank() == 0) {
    return scatter_add<T>(t.reshape(Shape{1}), 0, idx.reshape(Shape{1}), src.reshape(Shape{1}))
        .reshape(Shape{});
  }
  const int d = ops::gather_dim(t, dim, idx, "scatter_add");
  EMBER_CHECK(
      src.defined() && src.device() == t.device() && src.rank() == idx.rank(),
      "ember: scatter_add: src must be a tensor of the index's rank on the tensor's device");
  for (int k = 0; k < idx.rank(); ++k) {
    EMBER_CHECK(idx.size(k) <= src.size(k), "ember: scatter_add: index shape ", idx.shape().str(),
                " is larger than src's ", src.shape().str(), " in dimension ", k);
  }
  const Tensor<std::int64_t> ix = idx.contiguous();
  ops::check_indices(ix, t.size(d), "scatter_add", t.shape());
  const Tensor<T> base = t.contiguous();
  Tensor<T> out = empty<T>(t.shape(), t.device());
  ops::ScatterAddAlong<T> f{base.data(),
                            src.data(),
                            ix.data(),
                            out.data(),
                            ops::geometry(t.shape(), contiguous_strides(t.shape())),
                            ops::geometry(ix.shape(), ix.strides()),
                            {},
                            d};
  for (int k = 0; k < src.rank(); ++k) f.src_stride[k] = src.strides()[k];
  exec::for_each_index<decltype(f)>(f, out.numel(), std::max<std::int64_t>(1, idx.size(d)),
                                    t.device());
  return out;
}

/// `value` where `mask` is true (nonzero), else t: a lazy expression, as where(mask, value, t).
template <ArrayOperand X, Operand M, Operand V>
auto masked_fill(const X& t, const M& mask, const V& value) {
  return where(mask, value, t);
}

/// int64 [..., n]: 1 at each id's class, 0 elsewhere; n < 0 takes the largest id + 1.
template <class = void>  // compiled only where called (docs/design.md)
Tensor<std::int64_t> one_hot(const Tensor<std::int64_t>& ids, std::int64_t n = -1) {
  EMBER_CHECK(ids.defined(), "ember: one_hot: an undefined tensor");
  EMBER_CHECK(ids.rank() < kMaxRank, "ember: one_hot: ids of rank ", ids.rank(), " (at most ",
              kMaxRank - 1, ")");
  if (n < 0) {
    EMBER_CHECK(ids.numel() > 0, "ember: one_hot: the number of classes cannot be inferred from ",
                "an empty tensor; pass it");
    n = max<Tensor<std::int64_t>>(ids).item() + 1;
  }
  ops::check_indices(ids, n, "one_hot", Shape{n});
  const Tensor<std::int64_t> classes =
      arange<std::int64_t>(0.0, static_cast<double>(n), 1.0, ids.device());
  return Tensor<std::int64_t>(cast<std::int64_t>(ids.unsqueeze(ids.rank()) == classes));
}
}  // namespace ember::inline EMBER_UNIT_KIND
