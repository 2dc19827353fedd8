// How views of Vars are recorded: reshape, permute, transpose, slice, select, squeeze, expand, ...
//
// A view of a Var is a Var whose value is the same view of the input's value (no copy), and
// whose tape node maps the view's gradient back to the input's shape. Var's view members
// (var.hpp) each state their rule and record it here:
//   reshape, view, flatten, squeeze, unsqueeze:  the gradient reshaped back (no launch when dense)
//   permute, transpose, t:                       the inverse permutation (a view; no launch)
//   slice, narrow, select:                       zeros, with the gradient copied into the same view
//   expand:                                      a sum over the broadcast axes
//   contiguous, to(device) (copies, recorded the same way): the gradient as it is, or moved back
// Each is recorded as an OpNode (op_node.hpp). A gradient that comes back as a view of the
// upstream gradient is not copied; var_node.hpp makes sure nobody writes into it.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "../tensor/factories.hpp"
#include "op_node.hpp"

namespace ember {
template <Storable T>
class Var;
}  // namespace ember

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

/// A view of x with another shape (view, reshape, flatten, squeeze, unsqueeze): its gradient is
/// reshaped back to x's shape.
template <Storable T>
Var<T> reshaped_view_of(const Var<T>& x, const char* name, Tensor<T> value) {
  return view_of(x, name, std::move(value),
                 [in = x.shape()](const Tensor<T>& g) { return g.reshape(in); });
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
