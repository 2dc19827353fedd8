// ember::Var<T>: a tensor that may require grad.
//
// A Var is itself an expression leaf (its plan is a LeafPlan over its value), so every operator
// and function of the core builds the same lazy expression types over Vars, mixing Vars,
// tensors and numbers. Materialising `Var<T> y = expr;` evaluates the expression in one launch
// and records ONE tape node for the whole expression (fused_backward.hpp). Views of a Var are
// Vars (their members below, recorded by views.hpp); reductions of expressions over Vars are
// recorded with their own backward rules (reductions.hpp); users add operations with ember::apply
// (function.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../exec/assign.hpp"
#include "../exec/generate.hpp"
#include "fused_backward.hpp"
#include "grad_mode.hpp"
#include "tape.hpp"
#include "var_node.hpp"
#include "views.hpp"

namespace ember {

template <Storable T>
class Var {
 public:
  using value_type = T;
  using plan_type = expr::LeafPlan<T>;
  static constexpr std::size_t max_element_size = sizeof(T);
  static constexpr bool is_ember_expression = true;
  static constexpr bool is_scalar_node = false;

  /// An undefined Var.
  Var() = default;
  /// A constant (does not require grad) holding `value` (shared, not copied).
  explicit Var(Tensor<T> value, bool requires_grad = false)
      : n_(std::make_shared<autograd::VarNode<T>>()) {
    EMBER_CHECK(value.defined(), "ember: Var made from an undefined tensor");
    EMBER_CHECK(!requires_grad || FloatingElement<T>,
                "ember: only floating-point Vars can require grad");
    n_->value = std::move(value);
    n_->requires_grad = requires_grad;
  }
  /// Evaluates `e` (one launch) and, unless under no_grad or no operand requires grad, records
  /// one tape node for the whole expression.
  template <Expression E, class Mode = exec::mode>
  requires(!std::is_same_v<std::remove_cvref_t<E>, Var>)
      Var(const E& e)        // NOLINT(google-explicit-constructor): `Var<float> y = a * b;`
      : Var(Tensor<T>(e)) {  // evaluated by this unit's kind (core/config.hpp)
    if (grad_enabled() && autograd::any_requires_grad(e)) {
      n_->record(std::make_shared<autograd::FusedNode<E, T, autograd::ScaledRule>>(
          e, n_.get(), autograd::ScaledRule{""}));
    }
  }

  /// Internal: a result Var recorded by a non-elementwise op.
  static Var from_node(std::shared_ptr<autograd::VarNode<T>> n) {
    Var v;
    v.n_ = std::move(n);
    return v;
  }

  bool defined() const { return n_ != nullptr; }
  const Tensor<T>& value() const { return node_ref().value; }
  /// The accumulated gradient (undefined until a backward reached this Var).
  const Tensor<T>& grad() const { return node_ref().grad; }
  bool requires_grad() const { return node_ref().requires_grad; }
  /// The value of a one-element Var (a loss), as PyTorch's .item(); an Error otherwise.
  template <class Mode = exec::mode>
  T item() const {
    return node_ref().value.item();
  }
  bool is_leaf() const { return node_ref().is_leaf(); }
  const Shape& shape() const { return node_ref().value.shape(); }
  Device device() const { return node_ref().value.device(); }

  /// Backward from a one-element Var (seed 1). The 1 is never materialised: the node that
  /// made this Var folds it into its own launch.
  template <class Mode = exec::mode>
  void backward(bool retain_graph = false) const {
    EMBER_CHECK(value().numel() == 1,
                "ember: backward() without a seed needs a one-element Var, "
                "this one has shape ",
                shape().str(), "; pass a seed tensor of that shape");
    auto& n = node_ref();
    check_can_backward();
    if (!n.is_leaf() && !n.has_grad()) {
      n.unit_grad = true;
    } else {
      autograd::accumulate_grad<T, T>(n, ones<T>(shape(), value().device()), true);
    }
    autograd::run_backward(n, retain_graph);
  }
  /// Backward with d(loss)/d(this) = seed (same shape as this Var). The seed is read, never
  /// written, and not copied unless this Var is a leaf (which keeps its gradient).
  template <class Mode = exec::mode>
  void backward(const Tensor<T>& seed, bool retain_graph = false) const {
    EMBER_CHECK(seed.defined(), "ember: backward: undefined seed");
    check_can_backward();
    EMBER_CHECK(seed.shape() == shape(), "ember: backward: seed of shape ", seed.shape().str(),
                " for a Var of shape ", shape().str());
    autograd::accumulate_grad<T, T>(node_ref(), seed, false);
    autograd::run_backward(node_ref(), retain_graph);
  }
  /// Forgets the accumulated gradient.
  void zero_grad() const { node_ref().drop_grad(); }
  /// Calls `hook(grad())` in every backward that reaches this leaf, right after the last
  /// gradient of that backward has been accumulated into it (PyTorch's hook of the same name;
  /// the backward goes on when the hook returns). Hooks run in the order registered; the
  /// handle's remove() unregisters this one. Only on leaves that require grad.
  autograd::HookHandle register_post_accumulate_grad_hook(
      std::function<void(const Tensor<T>&)> hook) const {
    EMBER_CHECK(is_leaf() && requires_grad(),
                "ember: register_post_accumulate_grad_hook on a Var that is ",
                is_leaf() ? "a leaf that does not require grad" : "not a leaf",
                ": gradients are accumulated only into leaves that require grad");
    EMBER_CHECK(hook != nullptr, "ember: register_post_accumulate_grad_hook: empty hook");
    autograd::VarNode<T>* n = n_.get();  // the hook lives in the node: no owning pointer back
    const std::uint64_t id = autograd::HookHandle::next_id();
    n->grad_ready_hooks.emplace_back(id, [n, hook = std::move(hook)] {
      if (n->grad.defined()) hook(n->grad);
    });
    return autograd::HookHandle(n_, id);
  }
  /// The same value, cut from the graph: does not require grad.
  Var detach() const { return Var(value(), false); }

  // ---- expression-leaf protocol ----
  std::tuple<const Var&> leaves() const { return {*this}; }
  template <class F>
  void for_each_leaf(F&& f) const {
    expr::Leaf<T>(value()).for_each_leaf(f);
  }
  plan_type plan(expr::PlanBuilder& b) const { return expr::Leaf<T>(value()).plan(b); }

  // ---- views: Vars sharing this Var's value, each with its gradient's way back (views.hpp) ----
  template <class Mode = exec::mode>
  Var view(const Shape& shape) const {
    return autograd::reshaped_view_of(*this, "view", value().view(shape));
  }
  template <class Mode = exec::mode>
  Var reshape(const Shape& shape) const {
    return autograd::reshaped_view_of(*this, "reshape", value().reshape(shape));
  }
  template <class Mode = exec::mode>
  Var flatten() const {
    return reshape(Shape{value().numel()});
  }
  template <class Mode = exec::mode>
  Var permute(const Dims& order) const {
    Tensor<T> v = value().permute(order);  // validates the order
    Dims inverse = order;
    for (int i = 0; i < order.rank(); ++i) {
      inverse[normalize_axis(order[i], order.rank(), "permute")] = i;
    }
    return autograd::view_of(*this, "permute", std::move(v),
                             [inverse](const Tensor<T>& g) { return g.permute(inverse); });
  }
  template <class Mode = exec::mode>
  Var transpose(int d0, int d1) const {
    return autograd::view_of(*this, "transpose", value().transpose(d0, d1),
                             [d0, d1](const Tensor<T>& g) { return g.transpose(d0, d1); });
  }
  template <class Mode = exec::mode>
  Var t() const {
    return autograd::view_of(*this, "t", value().t(), [](const Tensor<T>& g) { return g.t(); });
  }
  template <class Mode = exec::mode>
  Var slice(int dim, std::int64_t start, std::int64_t stop, std::int64_t step = 1) const {
    return autograd::injective_view_of(
        *this, "slice", value().slice(dim, start, stop, step),
        [dim, start, stop, step](const Tensor<T>& z) { return z.slice(dim, start, stop, step); });
  }
  template <class Mode = exec::mode>
  Var narrow(int dim, std::int64_t start, std::int64_t length) const {
    return autograd::injective_view_of(
        *this, "narrow", value().narrow(dim, start, length),
        [dim, start, length](const Tensor<T>& z) { return z.narrow(dim, start, length); });
  }
  template <class Mode = exec::mode>
  Var select(int dim, std::int64_t index) const {
    return autograd::injective_view_of(
        *this, "select", value().select(dim, index),
        [dim, index](const Tensor<T>& z) { return z.select(dim, index); });
  }
  template <class Mode = exec::mode>
  Var squeeze() const {
    return autograd::reshaped_view_of(*this, "squeeze", value().squeeze());
  }
  template <class Mode = exec::mode>
  Var squeeze(int dim) const {
    return autograd::reshaped_view_of(*this, "squeeze", value().squeeze(dim));
  }
  template <class Mode = exec::mode>
  Var unsqueeze(int dim) const {
    return autograd::reshaped_view_of(*this, "unsqueeze", value().unsqueeze(dim));
  }
  template <class Mode = exec::mode>
  Var expand(const Shape& shape) const {
    return autograd::view_of(*this, "expand", value().expand(shape),
                             [in = this->shape()](const Tensor<T>& g) { return sum_to<T>(g, in); });
  }
  template <class Mode = exec::mode>
  Var broadcast_to(const Shape& shape) const {
    return expand(shape);
  }
  template <class Mode = exec::mode>
  Var contiguous(MemoryFormat format = MemoryFormat::contiguous) const {
    return autograd::view_of(*this, "contiguous", value().contiguous(format),
                             [](const Tensor<T>& g) { return g; });
  }
  /// The value on `device` (this Var when already there); the gradient goes back.
  template <class Mode = exec::mode>
  Var to(Device device) const {
    if (value().device() == device) return *this;
    return autograd::view_of(*this, "to", value().to(device),
                             [from = value().device()](const Tensor<T>& g) { return g.to(from); });
  }

  const std::shared_ptr<autograd::VarNode<T>>& node() const { return n_; }

 private:
  autograd::VarNode<T>& node_ref() const {
    EMBER_CHECK(n_ != nullptr, "ember: use of an undefined Var");
    return *n_;
  }
  void check_can_backward() const {
    EMBER_CHECK(node_ref().requires_grad,
                "ember: backward() on a Var that does not require grad (made "
                "from constants, under no_grad, or detached)");
  }
  std::shared_ptr<autograd::VarNode<T>> n_;
};

/// A leaf Var that requires grad, holding `value` (shared, not copied).
template <Storable T>
Var<T> param(Tensor<T> value) {
  return Var<T>(std::move(value), true);
}

}  // namespace ember
