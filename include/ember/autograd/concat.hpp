// cat, stack, split and chunk of Vars: ops/indexing/concat.hpp's, recorded. cat's backward hands
// each input the part of the gradient it filled (a view of it: no copy); stack is cat of unsqueezed
// views; split's and chunk's pieces are narrow views, whose backward (views.hpp) writes each
// piece's gradient into zeros of the input's shape. A Tensor joins a list as a constant:
// `cat({x, Var<float>(t)}, 1)`.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "../ops/indexing/concat.hpp"
#include "op_node.hpp"
#include "var.hpp"
#include "views.hpp"

namespace ember::inline EMBER_UNIT_KIND {

template <Storable T>
Var<T> cat(const std::vector<Var<T>>& list, std::int64_t dim = 0) {
  std::vector<Tensor<T>> values;
  std::vector<std::shared_ptr<autograd::VarNode<T>>> nodes;
  values.reserve(list.size());
  for (const Var<T>& v : list) {
    EMBER_CHECK(v.defined(), "ember: cat: an undefined Var in the list");
    values.push_back(v.value());
    nodes.push_back(v.node());
  }
  const ops::CatLayout layout = ops::cat_layout(values, dim, "cat");
  // Where each input's part of the output starts, and its extent (-1: skipped, no gradient).
  std::vector<std::int64_t> starts, extents;
  std::int64_t at = 0;
  for (const Tensor<T>& t : values) {
    const bool skipped = ops::cat_skips(t) && layout.shape.rank() > 1;
    starts.push_back(at);
    extents.push_back(skipped ? -1 : t.size(layout.dim));
    if (!skipped) at += t.size(layout.dim);
  }
  const int d = layout.dim;
  return Var<T>::from_node(autograd::record_op<T>(
      "cat", cat<T>(values, d), std::move(nodes), {},
      [d, starts = std::move(starts), extents = std::move(extents)](const Tensor<T>& g) {
        std::vector<Tensor<T>> grads;
        for (std::size_t i = 0; i < starts.size(); ++i)
          grads.push_back(extents[i] < 0 ? Tensor<T>() : g.narrow(d, starts[i], extents[i]));
        return grads;
      }));
}
template <Storable T>
Var<T> cat(std::initializer_list<Var<T>> list, std::int64_t dim = 0) {
  return cat<T>(std::vector<Var<T>>(list), dim);
}

template <Storable T>
Var<T> stack(const std::vector<Var<T>>& list, std::int64_t dim = 0) {
  const int d = ops::stack_dim(list, dim);
  std::vector<Var<T>> parts;
  parts.reserve(list.size());
  for (const Var<T>& v : list) parts.push_back(v.unsqueeze(d));
  return cat<T>(parts, d);
}
template <Storable T>
Var<T> stack(std::initializer_list<Var<T>> list, std::int64_t dim = 0) {
  return stack<T>(std::vector<Var<T>>(list), dim);
}

template <Storable T>
std::vector<Var<T>> split(const Var<T>& x, const std::vector<std::int64_t>& sizes,
                          std::int64_t dim = 0) {
  EMBER_CHECK(x.defined() && x.shape().rank() > 0, "ember: split: needs a Var of rank 1 or more");
  const int d = normalize_axis(dim, x.shape().rank(), "split");
  std::vector<Var<T>> out;
  std::int64_t at = 0;
  for (const std::int64_t s : ops::split_sizes(x.shape()[d], sizes, "split")) {
    out.push_back(x.narrow(d, at, s));
    at += s;
  }
  return out;
}
template <Storable T>
std::vector<Var<T>> split(const Var<T>& x, std::int64_t size, std::int64_t dim = 0) {
  EMBER_CHECK(x.defined() && x.shape().rank() > 0, "ember: split: needs a Var of rank 1 or more");
  const int d = normalize_axis(dim, x.shape().rank(), "split");
  return split<T>(x, ops::split_even(x.shape()[d], size, "split"), d);
}

template <Storable T>
std::vector<Var<T>> chunk(const Var<T>& x, std::int64_t chunks, std::int64_t dim = 0) {
  EMBER_CHECK(x.defined() && x.shape().rank() > 0, "ember: chunk: needs a Var of rank 1 or more");
  const int d = normalize_axis(dim, x.shape().rank(), "chunk");
  return split<T>(x, ops::chunk_size(x.shape()[d], chunks), d);
}
}  // namespace ember::inline EMBER_UNIT_KIND
