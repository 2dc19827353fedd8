// Indexing and rearranging Vars: ops/indexing/indexing.hpp's and ops/indexing/rearrange.hpp's,
// recorded, each with a deterministic backward (no atomics):
//   index_select  the gradient's slices added back at the indices: embedding's sorted scatter-add
//                 (ops::embedding_backward) with the indexed dimension moved to the front
//   gather        scatter_add of the gradient into zeros
//   scatter_add   t gets the gradient; src gets it gathered at the indices (zeros where src is
//                 larger than the index)
//   flip, roll    the same move backwards
//   pad           constant: the interior of the gradient; the other modes one dimension at a
//                 time, each summing the copies that read an element (ops::PadAdjoint)
//   cumsum        running sums of the gradient from the end
//   sort          the gradient read back through the inverse permutation (argsort of indices)
//   topk          gather's
// masked_fill, tril and triu are where() expressions, and repeat is views, so Vars take the
// Tensor versions' code and the fused backward.
#pragma once

#include <cstdint>
#include <vector>

#include "../ops/indexing/embedding.hpp"
#include "../ops/indexing/indexing.hpp"
#include "../ops/indexing/rearrange.hpp"
#include "../ops/indexing/sort.hpp"
#include "op_node.hpp"
#include "var.hpp"
#include "views.hpp"

namespace ember::inline EMBER_UNIT_KIND {

template <FloatingElement T>
Var<T> index_select(const Var<T>& x, std::int64_t dim, const Tensor<std::int64_t>& idx) {
  EMBER_CHECK(x.defined(), "ember: index_select: an undefined Var");
  if (x.shape().rank() == 0) {
    return index_select<T>(x.reshape(Shape{1}), dim, idx).reshape(Shape{});
  }
  const Tensor<T> y = index_select<T>(x.value(), dim, idx);
  const Shape xs = x.shape();
  const int d = normalize_axis(dim, xs.rank(), "index_select");
  const Tensor<std::int64_t> ix = idx.contiguous().reshape(Shape{idx.numel()});
  return Var<T>::from_node(
      autograd::record_op<T>("index_select", y, {x.node()}, {}, [xs, d, ix](const Tensor<T>& g) {
        // [..., K, ...] -> [K, rest]: rows that embedding's backward adds up by index.
        const Dims order = ops::moved_dimension(xs.rank(), d, 0);
        const Tensor<T> front = g.permute(order).contiguous();
        const std::int64_t K = ix.numel();
        if (K == 0 || front.numel() == 0) return std::vector<Tensor<T>>{zeros<T>(xs, g.device())};
        const std::int64_t rest = front.numel() / K;
        Shape moved = front.shape();
        moved[0] = xs[d];
        const Tensor<T> rows =
            ops::embedding_backward<T>(front.reshape(Shape{K, rest}), ix, xs[d], rest);
        return std::vector<Tensor<T>>{
            rows.reshape(moved).permute(ops::inverse_permutation(order)).contiguous()};
      }));
}

template <FloatingElement T>
Var<T> gather(const Var<T>& x, std::int64_t dim, const Tensor<std::int64_t>& idx) {
  EMBER_CHECK(x.defined(), "ember: gather: an undefined Var");
  const Tensor<T> y = gather<T>(x.value(), dim, idx);
  const Shape xs = x.shape();
  return Var<T>::from_node(
      autograd::record_op<T>("gather", y, {x.node()}, {}, [xs, dim, idx](const Tensor<T>& g) {
        return std::vector<Tensor<T>>{scatter_add<T>(zeros<T>(xs, g.device()), dim, idx, g)};
      }));
}

template <FloatingElement T>
Var<T> scatter_add(const Var<T>& t, std::int64_t dim, const Tensor<std::int64_t>& idx,
                   const Var<T>& src) {
  EMBER_CHECK(t.defined() && src.defined(), "ember: scatter_add: an undefined Var");
  const Tensor<T> y = scatter_add<T>(t.value(), dim, idx, src.value());
  const Shape ss = src.shape();
  return Var<T>::from_node(autograd::record_op<T>("scatter_add", y, {t.node(), src.node()}, {},
                                                  [ss, dim, idx](const Tensor<T>& g) {
                                                    Tensor<T> gs = gather<T>(g, dim, idx);
                                                    if (!(gs.shape() == ss)) {
                                                      Tensor<T> full = zeros<T>(ss, g.device());
                                                      Tensor<T> part = full;
                                                      for (int k = 0; k < ss.rank(); ++k)
                                                        part = part.narrow(k, 0, gs.size(k));
                                                      part.template copy_<T>(gs);
                                                      gs = full;
                                                    }
                                                    return std::vector<Tensor<T>>{g, gs};
                                                  }));
}

template <FloatingElement T>
Var<T> flip(const Var<T>& x, const std::vector<std::int64_t>& dims) {
  EMBER_CHECK(x.defined(), "ember: flip: an undefined Var");
  return Var<T>::from_node(autograd::record_op<T>(
      "flip", flip<T>(x.value(), dims), {x.node()}, {},
      [dims](const Tensor<T>& g) { return std::vector<Tensor<T>>{flip<T>(g, dims)}; }));
}

template <FloatingElement T>
Var<T> roll(const Var<T>& x, std::int64_t shift, std::int64_t dim) {
  EMBER_CHECK(x.defined(), "ember: roll: an undefined Var");
  return Var<T>::from_node(autograd::record_op<T>(
      "roll", roll<T>(x.value(), shift, dim), {x.node()}, {}, [shift, dim](const Tensor<T>& g) {
        return std::vector<Tensor<T>>{roll<T>(g, -shift, dim)};
      }));
}

template <FloatingElement T>
Var<T> pad(const Var<T>& x, const std::vector<std::int64_t>& pads, PadMode mode = PadMode::constant,
           double value = 0.0) {
  EMBER_CHECK(x.defined(), "ember: pad: an undefined Var");
  const std::vector<ops::PadDim> dims = ops::pad_dims(x.value(), pads, mode);
  if (mode == PadMode::constant) {
    const Shape xs = x.shape();
    return Var<T>::from_node(autograd::record_op<T>("pad", pad<T>(x.value(), pads, mode, value),
                                                    {x.node()}, {}, [dims, xs](const Tensor<T>& g) {
                                                      Tensor<T> inner = g;
                                                      for (const ops::PadDim& p : dims)
                                                        inner =
                                                            inner.narrow(p.dim, p.left, xs[p.dim]);
                                                      return std::vector<Tensor<T>>{inner};
                                                    }));
  }
  Var<T> out = x;
  for (const ops::PadDim& p : dims) {
    const Shape s = out.shape();
    out = Var<T>::from_node(autograd::record_op<T>(
        "pad", ops::pad_one<T>(out.value(), p, mode, value), {out.node()}, {},
        [s, p, mode](const Tensor<T>& g) {
          return std::vector<Tensor<T>>{ops::pad_one_backward<T>(g, s, p, mode)};
        }));
  }
  return out;
}

template <FloatingElement T>
Var<T> repeat(const Var<T>& x, const std::vector<std::int64_t>& reps) {
  EMBER_CHECK(x.defined(), "ember: repeat: an undefined Var");
  const ops::RepeatShapes s = ops::repeat_shapes(x.shape(), reps);
  return x.reshape(s.paired).expand(s.expanded).contiguous().reshape(s.out);
}

template <FloatingElement T>
Var<T> tril(const Var<T>& x, std::int64_t diagonal = 0) {
  EMBER_CHECK(x.defined(), "ember: tril: an undefined Var");
  return ops::triangle<Var<T>>(x, x.shape(), x.value().device(), diagonal, true, "tril");
}

template <FloatingElement T>
Var<T> triu(const Var<T>& x, std::int64_t diagonal = 0) {
  EMBER_CHECK(x.defined(), "ember: triu: an undefined Var");
  return ops::triangle<Var<T>>(x, x.shape(), x.value().device(), diagonal, false, "triu");
}

template <FloatingElement T>
Var<T> cumsum(const Var<T>& x, std::int64_t dim) {
  EMBER_CHECK(x.defined(), "ember: cumsum: an undefined Var");
  if (x.shape().rank() == 0) return x.reshape(Shape{});
  const int d = normalize_axis(dim, x.shape().rank(), "cumsum");
  return Var<T>::from_node(autograd::record_op<T>(
      "cumsum", ops::cumsum_along<T>(x.value(), d, false), {x.node()}, {}, [d](const Tensor<T>& g) {
        return std::vector<Tensor<T>>{ops::cumsum_along<T>(g, d, true)};
      }));
}

template <FloatingElement T>
SortResult<Var<T>> sort(const Var<T>& x, std::int64_t dim = -1, bool descending = false) {
  EMBER_CHECK(x.defined(), "ember: sort: an undefined Var");
  if (x.shape().rank() == 0) {
    return {x.reshape(Shape{}), zeros<std::int64_t>(Shape{}, x.value().device())};
  }
  const int d = normalize_axis(dim, x.shape().rank(), "sort");
  SortResult<Tensor<T>> r = sort<T>(x.value(), d, descending);
  const Tensor<std::int64_t> idx = r.indices;
  Var<T> values = Var<T>::from_node(
      autograd::record_op<T>("sort", r.values, {x.node()}, {}, [d, idx](const Tensor<T>& g) {
        // values[j] = x[idx[j]] along d, a permutation: x's gradient is g at the inverse one.
        const Tensor<std::int64_t> inverse = ops::sort_indices<std::int64_t>(idx, d, false);
        return std::vector<Tensor<T>>{gather<T>(g, d, inverse)};
      }));
  return {values, idx};
}

template <FloatingElement T>
SortResult<Var<T>> topk(const Var<T>& x, std::int64_t k, std::int64_t dim = -1,
                        bool largest = true) {
  EMBER_CHECK(x.defined(), "ember: topk: an undefined Var");
  const SortResult<Tensor<T>> r = topk<T>(x.value(), k, dim, largest);
  if (x.shape().rank() == 0) return {x.reshape(Shape{}), r.indices};
  return {gather<T>(x, normalize_axis(dim, x.shape().rank(), "topk"), r.indices), r.indices};
}
}  // namespace ember::inline EMBER_UNIT_KIND
