// VarNode<T>: what a Var shares with the tape: its value, its gradient, and the node that made it.
//
// Gradients arrive through accumulate_grad. A gradient that arrives as someone else's tensor
// (a view of the upstream gradient, or of the user's seed) is kept without a copy when nothing
// else will read it, and marked shared: the next accumulation then writes a new tensor instead
// of adding in place, so the tensor it came from is never modified.
#pragma once

#include <memory>
#include <type_traits>

#include "../core/compiled_once.hpp"
#include "../exec/assign.hpp"
#include "../exec/generate.hpp"
#include "../expr/leaf.hpp"
#include "../expr/map.hpp"
#include "../expr/operators.hpp"
#include "../tensor/factories.hpp"
#include "anomaly.hpp"
#include "tape.hpp"

namespace ember::autograd {

template <Storable T>
struct VarNode final : VarNodeBase {
  Tensor<T> value;
  Tensor<T> grad;            // undefined until a gradient arrives
  bool grad_shared = false;  // `grad` aliases a tensor this node does not own
  /// Records `fn` as the operation that made `value`: the value now requires grad and, with
  /// anomaly detection on, is checked for NaN and infinity (naming `fn`). Every kind of tape
  /// node is recorded through here. (It evaluates, for the check: it takes the kind's tag.)
  template <class Mode = exec::mode>
  void record(std::shared_ptr<TapeNode> fn) {
    requires_grad = true;
    grad_fn = std::move(fn);
    detail::check_anomaly(value, *grad_fn);
  }
  void drop_grad() override {
    grad = Tensor<T>();
    grad_shared = false;
    unit_grad = false;
  }
  /// Whether a gradient has arrived (a tensor, or the implicit 1 of loss.backward()).
  bool has_grad() const { return grad.defined() || unit_grad; }
  /// The gradient as a tensor, materialising the implicit 1 when that is what arrived.
  template <class Mode = exec::mode>
  Tensor<T> grad_or_ones() const {
    if (grad.defined()) return grad;
    return ones<T>(value.shape(), value.device());
  }
  /// A gradient this node may write into: the shared one is copied first.
  template <class Mode = exec::mode>
  void own_grad() {
    if (grad.defined() && grad_shared) {
      grad = grad.clone();
      grad_shared = false;
    }
  }
};

}  // namespace ember::autograd

namespace ember::autograd::inline EMBER_UNIT_KIND {
/// Adds `g` (the Var's shape, any layout) into v's gradient. `owned`: nobody else holds g, so
/// it may become the gradient as it is.
template <Storable T, Storable G>
void accumulate_grad(VarNode<T>& v, const Tensor<G>& g, bool owned) {
  if (!v.grad.defined()) {
    if constexpr (std::is_same_v<T, G>) {
      // A dense gradient is kept in its layout: contiguous, or the value's own dense layout
      // (channels-last images; attention's output and the heads of a projection, heads after
      // rows). Copying it to contiguous would cost a pass and leave every layer after it
      // reading the other layout.
      const bool dense = g.is_contiguous() || (v.value.defined() && g.is_dense_like(v.value));
      if (!dense) {
        v.grad = g.clone();
        v.grad_shared = false;
      } else if (owned || !v.is_leaf()) {
        // An intermediate's gradient is read once by its node and dropped: an alias is safe.
        v.grad = g;
        v.grad_shared = !owned;
      } else {
        v.grad = g.clone();  // a leaf keeps its gradient: it must own it
        v.grad_shared = false;
      }
    } else {
      v.grad = Tensor<T>(expr::Cast<T, expr::Leaf<G>>(expr::Leaf<G>(g)));
      v.grad_shared = false;
    }
  } else if (v.grad_shared) {
    Tensor<T> sum = empty<T>(v.grad.shape(), v.grad.device(), v.grad.memory_format());
    sum = expr::Leaf<T>(v.grad) + expr::Leaf<G>(g);  // never into the alias; in its layout
    v.grad = sum;
    v.grad_shared = false;
  } else {
    v.grad += expr::Leaf<G>(g);
  }
}

}  // namespace ember::autograd::inline EMBER_UNIT_KIND

/// Compiled once in ember::kernels (core/compiled_once.hpp): a gradient's accumulation.
#define EMBER_GRADIENT_INSTANCES(EXPLICIT, T)                               \
  namespace ember::autograd {                                               \
  EXPLICIT void accumulate_grad<T, T>(VarNode<T>&, const Tensor<T>&, bool); \
  }
EMBER_EXTERN_INSTANCES(EMBER_GRADIENT_INSTANCES)
