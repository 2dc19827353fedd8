// Views of Vars: reshape, permute, transpose, slice, select, squeeze, expand, ...
//
// A view of a Var is a Var whose value is the same view of the input's value (no copy), and
// whose tape node maps the view's gradient back to the input's shape:
//   reshape, view, flatten, squeeze, unsqueeze:  the gradient reshaped back (no launch when dense)
//   permute, transpose, t:                       the inverse permutation (a view; no launch)
//   slice, narrow, select:                       zeros, with the gradient copied into the same view
//   expand:                                      a sum over the broadcast axes
//   contiguous, to(device) (copies, recorded the same way): the gradient as it is, or moved back
// Each is recorded as an OpNode (op_node.hpp). A gradient that comes back as a view of the
// upstream gradient is not copied; var_node.hpp makes sure nobody writes into it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "../exec/generate.hpp"
#include "../exec/reduce.hpp"
#include "fused_backward.hpp"
#include "op_node.hpp"
#include "var.hpp"

namespace ember::autograd {
// In the translation unit's executor namespace, like every evaluating part (core/config.hpp).
inline namespace EMBER_UNIT_KIND {

/// Maps the gradient of a view (its shape) to the gradient of its input (the input's shape).
template <Storable T>
using ViewBackward = std::function<Tensor<T>(const Tensor<T>&)>;

/// The Var holding `value` (a view of x's value), recorded with `back` when x requires grad.
template <Storable T>
Var<T> view_of(const Var<T>& x, const char* name, Tensor<T> value,
               std::type_identity_t<ViewBackward<T>> back) {
  return Var<T>::from_node(record_op<T>(
      name, std::move(value), {x.node()}, {},
      [back = std::move(back)](const Tensor<T>& g) { return std::vector<Tensor<T>>{back(g)}; }));
}

/// The gradient of an injective view (slice, narrow, select): zeros of the input's shape with
/// `g` copied into the elements the view selected.
template <Storable T, class View>
Tensor<T> scatter_into_zeros(const Tensor<T>& g, const Shape& in_shape, const View& view) {
  Tensor<T> z = zeros<T>(in_shape, g.device());
  view(z).copy_(g);
  return z;
}

/// An injective view of x (slice, narrow, select: `view` applied to x's value gave `value`),
/// recorded so that its gradient is added into the elements it selected of x's gradient where x
/// already owns one (OpNode::add_into_with), else scattered into zeros of x's shape.
template <Storable T, class View>
Var<T> injective_view_of(const Var<T>& x, const char* name, Tensor<T> value, View view) {
  const Shape in = x.shape();
  auto node = record_op<T>(name, std::move(value), {x.node()}, {}, [in, view](const Tensor<T>& g) {
    return std::vector<Tensor<T>>{scatter_into_zeros(g, in, view)};
  });
  if (auto* op = dynamic_cast<OpNode<T>*>(node->grad_fn.get())) {
    op->add_into_with([view](const Tensor<T>& input_grad, const Tensor<T>& g) {
      Tensor<T> part = view(input_grad);
      part += expr::Leaf<T>(g);
    });
  }
  return Var<T>::from_node(std::move(node));
}

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::autograd

namespace ember {

template <Storable T>
template <class Mode>
Var<T> Var<T>::view(const Shape& shape) const {
  const Shape in = this->shape();
  return autograd::view_of(*this, "view", value().view(shape),
                           [in](const Tensor<T>& g) { return g.reshape(in); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::reshape(const Shape& shape) const {
  const Shape in = this->shape();
  return autograd::view_of(*this, "reshape", value().reshape(shape),
                           [in](const Tensor<T>& g) { return g.reshape(in); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::flatten() const {
  return reshape(Shape{value().numel()});
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::permute(const Dims& order) const {
  Tensor<T> v = value().permute(order);  // validates the order
  Dims inverse = order;
  for (int i = 0; i < order.rank(); ++i)
    inverse[normalize_axis(order[i], order.rank(), "permute")] = i;
  return autograd::view_of(*this, "permute", std::move(v),
                           [inverse](const Tensor<T>& g) { return g.permute(inverse); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::transpose(int d0, int d1) const {
  return autograd::view_of(*this, "transpose", value().transpose(d0, d1),
                           [d0, d1](const Tensor<T>& g) { return g.transpose(d0, d1); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::t() const {
  return autograd::view_of(*this, "t", value().t(), [](const Tensor<T>& g) { return g.t(); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::slice(int dim, std::int64_t start, std::int64_t stop, std::int64_t step) const {
  return autograd::injective_view_of(
      *this, "slice", value().slice(dim, start, stop, step),
      [dim, start, stop, step](const Tensor<T>& z) { return z.slice(dim, start, stop, step); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::narrow(int dim, std::int64_t start, std::int64_t length) const {
  return autograd::injective_view_of(
      *this, "narrow", value().narrow(dim, start, length),
      [dim, start, length](const Tensor<T>& z) { return z.narrow(dim, start, length); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::select(int dim, std::int64_t index) const {
  return autograd::injective_view_of(
      *this, "select", value().select(dim, index),
      [dim, index](const Tensor<T>& z) { return z.select(dim, index); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::squeeze() const {
  const Shape in = shape();
  return autograd::view_of(*this, "squeeze", value().squeeze(),
                           [in](const Tensor<T>& g) { return g.reshape(in); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::squeeze(int dim) const {
  const Shape in = shape();
  return autograd::view_of(*this, "squeeze", value().squeeze(dim),
                           [in](const Tensor<T>& g) { return g.reshape(in); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::unsqueeze(int dim) const {
  const Shape in = shape();
  return autograd::view_of(*this, "unsqueeze", value().unsqueeze(dim),
                           [in](const Tensor<T>& g) { return g.reshape(in); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::expand(const Shape& shape) const {
  const Shape in = this->shape();
  Tensor<T> v = value().expand(shape);
  return autograd::view_of(*this, "expand", v,
                           [in](const Tensor<T>& g) { return sum_to<T>(g, in); });
}
template <Storable T>
template <class Mode>
Var<T> Var<T>::contiguous(MemoryFormat format) const {
  return autograd::view_of(*this, "contiguous", value().contiguous(format),
                           [](const Tensor<T>& g) { return g; });
}

template <Storable T>
template <class Mode>
Var<T> Var<T>::to(Device device) const {
  if (value().device() == device) return *this;
  const Device from = value().device();
  return autograd::view_of(*this, "to", value().to(device),
                           [from](const Tensor<T>& g) { return g.to(from); });
}

}  // namespace ember
