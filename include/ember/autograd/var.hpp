// ember::Var<T>: a tensor that may require grad, and the fused tape node of an expression.
//
// A Var is itself an expression leaf (its plan is a LeafPlan over its value), so every operator
// and function of the core builds the same lazy expression types over Vars, mixing Vars,
// tensors and numbers. Materialising `Var<T> y = expr;` evaluates the expression in one launch
// and records ONE tape node for the whole expression, which keeps the expression (its leaves
// hold their tensors, so they are the saved tensors) and runs the fused backward in one launch
// (plus one reduction per broadcast leaf that needs a gradient).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../exec/assign.hpp"
#include "../exec/generate.hpp"
#include "../exec/reduce.hpp"
#include "../expr/generator.hpp"
#include "../expr/operators.hpp"
#include "backward_plan.hpp"
#include "grad_mode.hpp"
#include "tape.hpp"

namespace ember {

template <Storable T>
class Var;

namespace autograd {

template <Storable T>
struct VarNode final : VarNodeBase {
  Tensor<T> value;
  Tensor<T> grad;  // undefined until a gradient arrives
  void drop_grad() override { grad = Tensor<T>(); }
};

// ---- the leaves of an expression type, in for_each_leaf / planning order ----
template <class E>
struct leaves_of {
  using type = std::tuple<E>;  // Leaf, Var, Generated
};
template <class S>
struct leaves_of<expr::ScalarNode<S>> {
  using type = std::tuple<>;
};
template <class F, class... Es>
struct leaves_of<expr::Map<F, Es...>> {
  using type = decltype(std::tuple_cat(std::declval<typename leaves_of<Es>::type>()...));
};
template <Storable U, class E>
struct leaves_of<expr::Cast<U, E>> {
  using type = typename leaves_of<E>::type;
};
template <class E>
using leaves_t = typename leaves_of<std::remove_cvref_t<E>>::type;

template <class N>
struct is_var : std::false_type {};
template <class T>
struct is_var<Var<T>> : std::true_type {};

template <class Tuple>
struct any_var;
template <class... Ns>
struct any_var<std::tuple<Ns...>> : std::bool_constant<(false || ... || is_var<Ns>::value)> {};
template <class E>
inline constexpr bool contains_var_v = any_var<leaves_t<E>>::value;

/// Pointers to the leaf nodes of `e`, in slot order.
template <class E>
void collect_leaves(const E& e, std::vector<const void*>& out) {
  if constexpr (requires { e.children(); }) {
    std::apply([&](const auto&... c) { (collect_leaves(c, out), ...); }, e.children());
  } else if constexpr (requires { e.child(); }) {
    collect_leaves(e.child(), out);
  } else if constexpr (!std::remove_cvref_t<E>::is_scalar_node) {
    out.push_back(&e);
  }
}

template <class N>
struct slot_out {
  using type = NoOut;
};
template <class T>
requires FloatingElement<T>
struct slot_out<Var<T>> {
  using type = SlotOut<T>;
};
template <class Tuple>
struct backward_plan_of;
template <class... Ns>
struct backward_plan_of<std::tuple<Ns...>> {
  template <class A, class Fwd, class GT>
  using type = BackwardPlan<A, Fwd, GT, typename slot_out<Ns>::type...>;
};

/// Axes (of `shape`) over which a leaf of shape `leaf` was broadcast.
inline Dims broadcast_axes(const Shape& leaf, const Shape& shape) {
  Dims axes;
  const int lead = shape.rank() - leaf.rank();
  for (int d = 0; d < shape.rank(); ++d) {
    if (d < lead || (leaf[d - lead] == 1 && shape[d] != 1)) axes.push_back(d);
  }
  return axes;
}

/// Adds `g` (the leaf's shape, any layout) into v's gradient.
template <Storable T, Storable G>
void accumulate_grad(VarNode<T>& v, const Tensor<G>& g) {
  if (!v.grad.defined()) {
    if constexpr (std::is_same_v<T, G>) {
      v.grad = g.is_contiguous() ? g : g.clone();
    } else {
      v.grad = Tensor<T>(expr::Cast<T, expr::Leaf<G>>(expr::Leaf<G>(g)));
    }
  } else {
    v.grad += expr::Leaf<G>(g);
  }
}

/// The fused backward of expression `e`: upstream `up` (broadcastable to e's shape), times
/// `scale`, pushed to every leaf Var that requires grad. One launch, plus one reduction per
/// broadcast leaf.
template <class E, Storable GT>
void fused_backward(const E& e, const Tensor<GT>& up, double scale) {
  using Leaves = leaves_t<E>;
  constexpr int N = static_cast<int>(std::tuple_size_v<Leaves>);
  using V = typename E::value_type;
  using A = acc_t<V>;
  if constexpr (!std::is_floating_point_v<A>) {
    return;  // integer and bool expressions are not differentiable
  } else {
    const Shape shape = e.shape();
    const Device device = up.device();
    std::vector<const void*> nodes;
    collect_leaves(e, nodes);
    EMBER_CHECK(static_cast<int>(nodes.size()) == N, "ember: internal: leaf count mismatch");

    using Plan = typename backward_plan_of<Leaves>::template type<A, typename E::plan_type, GT>;
    Plan plan{};
    bool any = false;
    // The Var node of each slot (null for other leaves), to find repeated Vars.
    std::vector<const VarNodeBase*> slot_var(static_cast<std::size_t>(N), nullptr);
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (
          [&] {
            using Node = std::tuple_element_t<K, Leaves>;
            if constexpr (is_var<Node>::value) {
              slot_var[K] = static_cast<const Node*>(nodes[K])->node().get();
            }
          }(),
          ...);
    }
    (std::make_index_sequence<static_cast<std::size_t>(N)>{});
    // Per broadcast slot: reduce temp into the var's gradient after the launch.
    std::vector<std::function<void()>> finish;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (
          [&] {
            using Node = std::tuple_element_t<K, Leaves>;
            plan.dst[K] = -1;
            if constexpr (is_var<Node>::value && FloatingElement<typename Node::value_type>) {
              using T = typename Node::value_type;
              const Node& var = *static_cast<const Node*>(nodes[K]);
              VarNode<T>* vn = var.node().get();
              if (!vn->requires_grad) return;
              // The same Var at an earlier slot: add into that slot.
              for (std::size_t j = 0; j != K; ++j) {
                if (plan.dst[j] == static_cast<int>(j) && slot_var[j] == vn) {
                  plan.dst[K] = static_cast<int>(j);
                  return;
                }
              }
              any = true;
              plan.dst[K] = static_cast<int>(K);
              auto& slot = expr::get<K>(plan.outs);
              if (vn->value.shape() == shape) {
                if (!vn->grad.defined()) {
                  vn->grad = empty<T>(shape, device);
                  slot.add = false;
                } else {
                  slot.add = true;
                }
                EMBER_CHECK(vn->grad.is_contiguous(), "ember: internal: non-contiguous gradient");
                slot.direct = vn->grad.data();
              } else {
                Tensor<acc_t<T>> temp = empty<acc_t<T>>(shape, device);
                slot.wide = temp.data();
                finish.push_back([temp, vn, shape] {
                  const Shape leaf = vn->value.shape();
                  Tensor<acc_t<T>> r = exec::reduce_expression<acc_t<T>>(
                      expr::Leaf<acc_t<T>>(temp), reduce::Bound<reduce::Sum<acc_t<T>>>{}, "sum",
                      broadcast_axes(leaf, shape), true, true);
                  accumulate_grad(*vn, r.reshape(leaf));
                });
              }
            }
          }(),
          ...);
    }
    (std::make_index_sequence<static_cast<std::size_t>(N)>{});
    if (!any) return;

    std::vector<Strides> arrays;
    arrays.push_back(contiguous_strides(shape));
    arrays.push_back(broadcast_strides(up.shape(), up.strides(), shape));
    e.for_each_leaf([&](const expr::LeafInfo& leaf) {
      arrays.push_back(broadcast_strides(leaf.shape, leaf.strides, shape));
    });
    const exec::IterLayout L = exec::make_layout(shape, arrays);
    const int nd = L.ndim();
    expr::PlanBuilder b(nd, std::vector<Strides>(L.arrays.begin() + 2, L.arrays.end()));
    plan.fwd = e.plan(b);
    plan.up = expr::LeafPlan<GT>{up.data(), expr::PlanStrides(L.arrays[1], nd)};
    plan.out_strides = expr::PlanStrides(L.arrays[0], nd);
    plan.scale = static_cast<A>(scale);
    if (device.is_cpu()) {
      exec::cpu::run<1>(plan, L, false);
    } else {
      exec::require_runnable(device);
#if defined(EMBER_CUDA_KERNELS)
      exec::gpu::run<1>(plan, L, false, device.index());
#endif
    }
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (
          [&] {
            using Node = std::tuple_element_t<K, Leaves>;
            if constexpr (is_var<Node>::value) {
              if (plan.dst[K] == static_cast<int>(K)) {
                const Node& var = *static_cast<const Node*>(nodes[K]);
                if (var.node()->grad.defined()) var.node()->grad.storage()->bump_version();
              }
            }
          }(),
          ...);
    }
    (std::make_index_sequence<static_cast<std::size_t>(N)>{});
    for (auto& f : finish) f();
  }
}

enum class Reduction { none, sum, mean };

/// The tape node of one materialised expression (optionally followed by a sum or mean).
template <class E, Storable T>
class FusedNode final : public TapeNode {
 public:
  FusedNode(E e, VarNode<T>* out, Reduction red, Shape keep_shape, double scale)
      : e_(std::move(e)), out_(out), red_(red), keep_shape_(keep_shape), scale_(scale) {
    e_->for_each_leaf([&](const expr::LeafInfo& leaf) {
      saved_.push_back({leaf.storage, leaf.storage ? leaf.storage->version() : 0});
    });
  }

  void backward() override {
    if (!e_) return;
    std::size_t k = 0;
    e_->for_each_leaf([&](const expr::LeafInfo& leaf) {
      const Saved& s = saved_[k++];
      if (s.storage && s.storage->version() != s.version) {
        fail("ember: backward of ", name(), ": a tensor saved for backward (operand ", k - 1,
             ", shape ", leaf.shape.str(), ") was modified in place after it was used (version ",
             s.version, ", now ", s.storage->version(), "); clone it before modifying it");
      }
    });
    if (!out_->grad.defined()) return;
    Tensor<T> g = out_->grad;
    if (red_ != Reduction::none) g = g.reshape(keep_shape_);
    fused_backward(*e_, g, scale_);
    out_->drop_grad();  // an intermediate gradient is used once
  }
  void release() override {
    e_.reset();
    saved_.clear();
  }
  void inputs(std::vector<VarNodeBase*>& out) const override {
    if (!e_) return;
    std::vector<const void*> nodes;
    collect_leaves(*e_, nodes);
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (
          [&] {
            using Node = std::tuple_element_t<K, leaves_t<E>>;
            if constexpr (is_var<Node>::value) {
              auto* vn = static_cast<const Node*>(nodes[K])->node().get();
              if (vn->requires_grad) out.push_back(vn);
            }
          }(),
          ...);
    }
    (std::make_index_sequence<std::tuple_size_v<leaves_t<E>>>{});
  }
  std::string name() const override {
    std::string n;
    if constexpr (requires { E::functor::name; }) {
      n = E::functor::name;
    } else if constexpr (requires { std::declval<const E&>().child(); }) {
      n = "cast";
    } else {
      n = "identity";
    }
    if (red_ == Reduction::sum) return "sum(" + n + ")";
    if (red_ == Reduction::mean) return "mean(" + n + ")";
    return n;
  }

 private:
  struct Saved {
    const Storage* storage;
    std::uint64_t version;
  };
  std::optional<E> e_;
  VarNode<T>* out_;  // owns this node
  Reduction red_;
  Shape keep_shape_;
  double scale_;
  std::vector<Saved> saved_;
};

template <class E>
bool any_requires_grad(const E& e) {
  bool any = false;
  std::vector<const void*> nodes;
  collect_leaves(e, nodes);
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (
        [&] {
          using Node = std::tuple_element_t<K, leaves_t<E>>;
          if constexpr (is_var<Node>::value && FloatingElement<typename Node::value_type>) {
            if (static_cast<const Node*>(nodes[K])->requires_grad()) any = true;
          }
        }(),
        ...);
  }
  (std::make_index_sequence<std::tuple_size_v<leaves_t<E>>>{});
  return any;
}

}  // namespace autograd

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
  template <Expression E>
  requires(!std::is_same_v<std::remove_cvref_t<E>, Var>)
      Var(const E& e)  // NOLINT(google-explicit-constructor): `Var<float> y = a * b;`
      : Var(Tensor<T>(e)) {
    if (grad_enabled() && autograd::any_requires_grad(e)) {
      n_->requires_grad = true;
      n_->grad_fn = std::make_shared<autograd::FusedNode<E, T>>(
          e, n_.get(), autograd::Reduction::none, Shape(), 1.0);
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
  bool is_leaf() const { return node_ref().is_leaf(); }
  const Shape& shape() const { return node_ref().value.shape(); }

  /// Backward from a one-element Var (seed 1).
  template <class Mode = exec::mode>
  void backward(bool retain_graph = false) const {
    EMBER_CHECK(value().numel() == 1,
                "ember: backward() without a seed needs a one-element Var, "
                "this one has shape ",
                shape().str(), "; pass a seed tensor of that shape");
    run_from(ones<T, Mode>(shape(), value().device()), retain_graph);
  }
  /// Backward with d(loss)/d(this) = seed (same shape as this Var).
  template <class Mode = exec::mode>
  void backward(const Tensor<T>& seed, bool retain_graph = false) const {
    EMBER_CHECK(seed.defined(), "ember: backward: undefined seed");
    run_from(seed.template clone<Mode>(), retain_graph);  // the gradient must not alias the seed
  }
  /// Forgets the accumulated gradient.
  void zero_grad() const { node_ref().grad = Tensor<T>(); }
  /// The same value, cut from the graph: does not require grad.
  Var detach() const { return Var(value(), false); }

  // ---- expression-leaf protocol ----
  template <class F>
  void for_each_leaf(F&& f) const {
    expr::Leaf<T>(value()).for_each_leaf(f);
  }
  plan_type plan(expr::PlanBuilder& b) const { return expr::Leaf<T>(value()).plan(b); }

  const std::shared_ptr<autograd::VarNode<T>>& node() const { return n_; }

 private:
  autograd::VarNode<T>& node_ref() const {
    EMBER_CHECK(n_ != nullptr, "ember: use of an undefined Var");
    return *n_;
  }
  // `seed` is owned: it becomes (or is added to) this Var's gradient.
  void run_from(Tensor<T> seed, bool retain_graph) const {
    auto& n = node_ref();
    EMBER_CHECK(n.requires_grad,
                "ember: backward() on a Var that does not require grad (made "
                "from constants, under no_grad, or detached)");
    EMBER_CHECK(seed.shape() == shape(), "ember: backward: seed of shape ", seed.shape().str(),
                " for a Var of shape ", shape().str());
    autograd::accumulate_grad(n, seed);
    autograd::run_backward(n, retain_graph);
  }
  std::shared_ptr<autograd::VarNode<T>> n_;
};

/// A leaf Var that requires grad, holding `value` (shared, not copied).
template <Storable T>
Var<T> param(Tensor<T> value) {
  return Var<T>(std::move(value), true);
}

// ---- reductions over Vars and expressions of Vars: sum and mean ----
namespace autograd {
template <class E>
Shape keepdim_shape(const Shape& s, const Dims& axes) {
  Shape k = s;
  if (axes.rank() == 0) {
    for (int d = 0; d < k.rank(); ++d) k[d] = 1;
  } else {
    for (int i = 0; i < axes.rank(); ++i) k[normalize_axis(axes[i], s.rank(), "sum")] = 1;
  }
  return k;
}

template <Reduction R, class E>
auto reduce_var(const E& e, const Dims& axes, bool keepdim) {
  using V = typename E::value_type;
  static_assert(FloatingElement<V>, "ember: sum and mean of Vars need floating-point operands");
  using C = acc_t<V>;
  Tensor<V> r;
  if constexpr (R == Reduction::sum) {
    r = exec::reduce_expression<V>(e, reduce::Bound<reduce::Sum<C>>{}, "sum", axes, keepdim, true);
  } else {
    r = exec::reduce_expression<V>(e, reduce::Bound<reduce::Mean<C>>{}, "mean", axes, keepdim,
                                   true);
  }
  auto n = std::make_shared<VarNode<V>>();
  n->value = r;
  if (grad_enabled() && any_requires_grad(e)) {
    const Shape k = keepdim_shape<E>(e.shape(), axes);
    const double scale =
        R == Reduction::mean && r.numel() > 0
            ? static_cast<double>(r.numel()) / static_cast<double>(e.shape().numel())
            : 1.0;
    n->requires_grad = true;
    n->grad_fn = std::make_shared<FusedNode<E, V>>(e, n.get(), R, k, scale);
  }
  return Var<V>::from_node(std::move(n));
}
}  // namespace autograd

/// An operand whose expression has a Var among its leaves.
template <class X>
concept VarOperand = ArrayOperand<X> && autograd::contains_var_v<expr::node_t<X>>;

/// Sum over `axes` (all when empty) of an expression over Vars: recorded, with a fused backward.
template <VarOperand X, class Mode = exec::mode>
auto sum(const X& x, const Dims& axes, bool keepdim = false) {
  return autograd::reduce_var<autograd::Reduction::sum>(expr::as_node(x), axes, keepdim);
}
template <VarOperand X, class Mode = exec::mode>
auto sum(const X& x) {
  return autograd::reduce_var<autograd::Reduction::sum>(expr::as_node(x), Dims{}, false);
}
template <VarOperand X, class Mode = exec::mode>
auto mean(const X& x, const Dims& axes, bool keepdim = false) {
  return autograd::reduce_var<autograd::Reduction::mean>(expr::as_node(x), axes, keepdim);
}
template <VarOperand X, class Mode = exec::mode>
auto mean(const X& x) {
  return autograd::reduce_var<autograd::Reduction::mean>(expr::as_node(x), Dims{}, false);
}

// Reductions whose backward rule is not written yet refuse Vars at compile time rather than
// silently returning a tensor that drops the gradient.
namespace autograd {
template <class X>
inline constexpr bool backward_not_implemented = false;
}  // namespace autograd
// The same signatures as the Tensor reductions (exec/reduce.hpp), so that the more
// constrained VarOperand wins overload resolution.
#define EMBER_VAR_REDUCTION_NOT_YET(fname)                                   \
  template <VarOperand X, class Mode = exec::mode>                           \
  auto fname(const X&, const Dims&, bool = false) {                          \
    static_assert(autograd::backward_not_implemented<X>,                     \
                  "ember: " #fname                                           \
                  " over Vars has no backward rule yet; reduce .value() (a " \
                  "Tensor, no gradient) or use sum/mean");                   \
  }                                                                          \
  template <VarOperand X, class Mode = exec::mode>                           \
  auto fname(const X&) {                                                     \
    static_assert(autograd::backward_not_implemented<X>,                     \
                  "ember: " #fname                                           \
                  " over Vars has no backward rule yet; reduce .value() (a " \
                  "Tensor, no gradient) or use sum/mean");                   \
  }
EMBER_VAR_REDUCTION_NOT_YET(max)
EMBER_VAR_REDUCTION_NOT_YET(min)
EMBER_VAR_REDUCTION_NOT_YET(prod)
EMBER_VAR_REDUCTION_NOT_YET(logsumexp)
#undef EMBER_VAR_REDUCTION_NOT_YET
template <VarOperand X, class Mode = exec::mode>
auto var(const X&, const Dims&, bool = false, double = 1.0) {
  static_assert(autograd::backward_not_implemented<X>,
                "ember: var over Vars has no backward rule yet; reduce .value() (a Tensor, no "
                "gradient) or write it with mean");
}
template <VarOperand X, class Mode = exec::mode>
auto var(const X&) {
  static_assert(autograd::backward_not_implemented<X>,
                "ember: var over Vars has no backward rule yet; reduce .value() (a Tensor, no "
                "gradient) or write it with mean");
}
template <VarOperand X, class Mode = exec::mode>
auto norm(const X&, const Dims&, bool = false, double = 2.0) {
  static_assert(autograd::backward_not_implemented<X>,
                "ember: norm over Vars has no backward rule yet; reduce .value() (a Tensor, no "
                "gradient) or write it with sum");
}
template <VarOperand X, class Mode = exec::mode>
auto norm(const X&, double = 2.0) {
  static_assert(autograd::backward_not_implemented<X>,
                "ember: norm over Vars has no backward rule yet; reduce .value() (a Tensor, no "
                "gradient) or write it with sum");
}

}  // namespace ember
