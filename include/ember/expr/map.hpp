// Map: an elementwise operation F applied to child expressions, with NumPy broadcasting.
// Unary, binary and ternary operations (and where) are all Maps; only the functor differs.
#pragma once

#include <algorithm>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/concepts.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"
#include "functors.hpp"
#include "leaf.hpp"
#include "leaves.hpp"
#include "pack.hpp"
#include "plan.hpp"

namespace ember::expr {

// ---- typing ----
namespace detail {
template <class E>
inline constexpr bool is_scalar_node_v = std::remove_cvref_t<E>::is_scalar_node;

// Promoted element type of the non-scalar children; scalars only lift integers to float
// (an int tensor times 0.5 is float) and bool to int64, as in PyTorch.
template <class... Es>
struct operand_type;
template <>
struct operand_type<> {
  using tensors = void;
  static constexpr bool has_float_scalar = false;
  static constexpr bool has_int_scalar = false;
};
template <class E, class... Es>
struct operand_type<E, Es...> {
  using rest = operand_type<Es...>;
  using mine = typename E::value_type;
  static constexpr bool scalar = is_scalar_node_v<E>;
  using tensors = std::conditional_t<
      scalar, typename rest::tensors,
      std::conditional_t<std::is_void_v<typename rest::tensors>, mine,
                         promote_t<mine, std::conditional_t<std::is_void_v<typename rest::tensors>,
                                                            mine, typename rest::tensors>>>>;
  static constexpr bool has_float_scalar =
      rest::has_float_scalar || (scalar && std::is_same_v<mine, double>);
  static constexpr bool has_int_scalar =
      rest::has_int_scalar || (scalar && std::is_same_v<mine, std::int64_t>);
};

template <class... Es>
struct promoted {
  using info = operand_type<Es...>;
  using tensors = typename info::tensors;
  static_assert(!std::is_void_v<tensors>, "ember: an expression needs at least one tensor");
  using type =
      std::conditional_t<info::has_float_scalar && !FloatingElement<tensors>, float,
                         std::conditional_t<info::has_int_scalar && std::is_same_v<tensors, bool>,
                                            std::int64_t, tensors>>;
};

template <class F, class... Es>
struct map_types;

template <class F, class... Es>
requires(F::kind == fn::Kind::arithmetic ||
         F::kind == fn::Kind::floating) struct map_types<F, Es...> {
  using operand = typename promoted<Es...>::type;
  static_assert(F::kind != fn::Kind::floating || FloatingElement<operand>,
                "ember: this function is defined for floating-point operands only; convert "
                "integer or bool tensors first, e.g. ember::exp(ember::cast<float>(x))");
  using value_type = operand;
  using compute = acc_t<operand>;
  template <std::size_t I>
  using arg = compute;
};

template <class F, class... Es>
requires(F::kind == fn::Kind::predicate) struct map_types<F, Es...> {
  using operand = typename promoted<Es...>::type;
  using value_type = bool;
  using compute = acc_t<operand>;
  template <std::size_t I>
  using arg = compute;
};

template <class F, class C, class A, class B>
requires(F::kind == fn::Kind::select) struct map_types<F, C, A, B> {
  using operand = typename promoted<A, B>::type;
  using value_type = operand;
  using compute = acc_t<operand>;
  template <std::size_t I>
  using arg = std::conditional_t<I == 0, bool, compute>;
};

/// The device of an expression's operands (none for numbers alone). Every node knows its own:
/// a tensor, Var or generated operand has one, and a Map found its children's when it was
/// built, so asking costs no walk over the leaves (nor an instantiation of one per node type).
template <class E>
std::optional<Device> device_of(const E& e) {
  if constexpr (is_scalar_node_v<E>) {
    return std::nullopt;
  } else {
    return e.device();
  }
}

/// The device of an operation whose operands so far are on `found`, given the next one's: the
/// same, or an error naming the operation.
inline std::optional<Device> join_devices(std::optional<Device> found, std::optional<Device> next,
                                          const char* op) {
  if (found && next && !(*found == *next)) {
    fail("ember: ", op, ": operands are on different devices (", found->str(), " and ", next->str(),
         "); move them with .to(device) first");
  }
  return next ? next : found;
}
}  // namespace detail

// ---- plan ----
// A plan names what its loops need, the functor, the compute type, the result type and the
// child plans, and not the node's child expression types, which repeated every subtree at each
// level of a chain; and expressions with the same plan (over tensors or over Vars) share their
// loops.
template <class F, class Compute, class Result, class... Children>
struct MapPlan {
  using acc_type = Result;
  F f;
  Pack<Children...> children;

  /// The type the functor takes operand I as (map_types' arg<I>): the compute type, except a
  /// select's condition, which is bool.
  template <std::size_t I>
  using arg_type = std::conditional_t<F::kind == fn::Kind::select && I == 0, bool, Compute>;

  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE acc_type at(const Ix& ix) const {
    return at_impl(ix, std::index_sequence_for<Children...>{});
  }

  template <int V, class Block>
  EMBER_HD EMBER_FORCEINLINE void at_vec(const Block& base, acc_type (&out)[V]) const {
    at_vec_impl<V>(base, out, std::index_sequence_for<Children...>{});
  }

  // ---- reverse mode (autograd/) ----
  /// Leaves below this node, in for_each_leaf order (scalars are not leaves).
  static constexpr int num_leaves = (0 + ... + Children::num_leaves);

  /// The values of this node and of every node below it at one element: the forward pass of
  /// reverse mode, computed once so that backprop costs one visit per node.
  struct Trace {
    acc_type y;
    Pack<typename Children::Trace...> kids;
  };
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE Trace trace(const Ix& ix) const {
    return trace_impl(ix, std::index_sequence_for<Children...>{});
  }

  /// Given d(out)/d(this node) = g at the element traced in `t`, applies the functor's local
  /// derivative to the traced values and pushes the adjoints down; leaf k below this node adds
  /// its adjoint to sink slot Base + k. Predicates and integer nodes pass nothing down.
  template <int Base, class Sink>
  EMBER_HD EMBER_FORCEINLINE void backprop(const Trace& t, acc_type g, Sink& sink) const {
    if constexpr (std::is_floating_point_v<acc_type> && F::kind != fn::Kind::predicate) {
      backprop_impl<Base>(t, g, sink, std::index_sequence_for<Children...>{});
    }
  }

  /// trace and backprop for a block of V elements (the dense path's, or a row block of the
  /// strided path): every node holds its V values as one array and each step is one fixed-length
  /// loop, so the whole backward vectorises as the forward's at_vec does (the scalar trace per
  /// element did not).
  template <int V>
  struct TraceVec {
    acc_type y[V];
    Pack<typename Children::template TraceVec<V>...> kids;
  };
  template <int V, class Block>
  EMBER_HD EMBER_FORCEINLINE void trace_vec(const Block& base, TraceVec<V>& t) const {
    trace_vec_impl<V>(base, t, std::index_sequence_for<Children...>{});
  }
  template <int Base, int V, class Sink>
  EMBER_HD EMBER_FORCEINLINE void backprop_vec(const TraceVec<V>& t, const acc_type (&g)[V],
                                               Sink& sink) const {
    if constexpr (std::is_floating_point_v<acc_type> && F::kind != fn::Kind::predicate) {
      backprop_vec_impl<Base, V>(t, g, sink, std::index_sequence_for<Children...>{});
    }
  }

 private:
  template <std::size_t I>
  static constexpr int leaf_offset() {
    constexpr int counts[] = {Children::num_leaves..., 0};
    int o = 0;
    for (std::size_t k = 0; k != I; ++k) o += counts[k];
    return o;
  }
  template <int I, class... A>
  EMBER_HD EMBER_FORCEINLINE auto local_partial(const A&... a) const {
    if constexpr (sizeof...(Children) == 1) {
      return f.derivative(a...);
    } else {
      return f.template partial<I>(a...);
    }
  }
  template <class Ix, std::size_t... I>
  EMBER_HD EMBER_FORCEINLINE Trace trace_impl(const Ix& ix, std::index_sequence<I...>) const {
    Trace t;
    ((get<I>(t.kids) = get<I>(children).trace(ix)), ...);
    t.y = static_cast<acc_type>(f(arg<I>(get<I>(t.kids).y)...));
    return t;
  }
  template <int Base, class Sink, std::size_t... I>
  EMBER_HD EMBER_FORCEINLINE void backprop_impl(const Trace& t, acc_type g, Sink& sink,
                                                std::index_sequence<I...>) const {
    const Pack<arg_type<I>...> xs(arg<I>(get<I>(t.kids).y)...);
    const auto y = static_cast<Compute>(t.y);
    (
        [&] {
          using Child = std::tuple_element_t<I, std::tuple<Children...>>;
          if constexpr (Child::num_leaves > 0 && !std::is_same_v<arg_type<I>, bool>) {
            const auto d = local_partial<static_cast<int>(I)>(get<I>(xs)..., y);
            get<I>(children).template backprop<Base + leaf_offset<I>()>(
                get<I>(t.kids), static_cast<typename Child::acc_type>(g * d), sink);
          }
        }(),
        ...);
  }

  template <int V, class Block, std::size_t... I>
  EMBER_HD EMBER_FORCEINLINE void trace_vec_impl(const Block& base, TraceVec<V>& t,
                                                 std::index_sequence<I...>) const {
    (get<I>(children).template trace_vec<V>(base, get<I>(t.kids)), ...);
    for (int k = 0; k < V; ++k) {
      t.y[k] = static_cast<acc_type>(f(arg<I>(get<I>(t.kids).y[k])...));
    }
  }
  // d(this node)/d(child I) at lane k of a traced block.
  template <std::size_t I, int V, std::size_t... J>
  EMBER_HD EMBER_FORCEINLINE auto lane_partial(const TraceVec<V>& t, int k,
                                               std::index_sequence<J...>) const {
    return local_partial<static_cast<int>(I)>(arg<J>(get<J>(t.kids).y[k])...,
                                              static_cast<Compute>(t.y[k]));
  }
  // Member functions rather than a fold over lambdas: a lambda cannot be forced inline, and
  // one left out of line keeps the block's lane arrays in memory.
  template <int Base, int V, class Sink, std::size_t... I>
  EMBER_HD EMBER_FORCEINLINE void backprop_vec_impl(const TraceVec<V>& t, const acc_type (&g)[V],
                                                    Sink& sink, std::index_sequence<I...>) const {
    (backprop_vec_child<I, Base, V>(t, g, sink), ...);
  }
  template <std::size_t I, int Base, int V, class Sink>
  EMBER_HD EMBER_FORCEINLINE void backprop_vec_child(const TraceVec<V>& t, const acc_type (&g)[V],
                                                     Sink& sink) const {
    using Child = std::tuple_element_t<I, std::tuple<Children...>>;
    if constexpr (Child::num_leaves > 0 && !std::is_same_v<arg_type<I>, bool>) {
      typename Child::acc_type gc[V];
      for (int k = 0; k < V; ++k) {
        const auto d = lane_partial<I>(t, k, std::index_sequence_for<Children...>{});
        gc[k] = static_cast<typename Child::acc_type>(g[k] * d);
      }
      get<I>(children).template backprop_vec<Base + leaf_offset<I>(), V>(get<I>(t.kids), gc, sink);
    }
  }

  template <std::size_t I, class X>
  EMBER_HD static EMBER_FORCEINLINE auto arg(X x) {
    return static_cast<arg_type<I>>(x);
  }
  template <class Ix, std::size_t... I>
  EMBER_HD EMBER_FORCEINLINE acc_type at_impl(const Ix& ix, std::index_sequence<I...>) const {
    return static_cast<acc_type>(f(arg<I>(get<I>(children).at(ix))...));
  }
  template <class T, int V>
  struct Buf {
    T v[V];
  };
  template <int V, class Block, std::size_t... I>
  EMBER_HD EMBER_FORCEINLINE void at_vec_impl(const Block& base, acc_type (&out)[V],
                                              std::index_sequence<I...>) const {
    Pack<Buf<typename Children::acc_type, V>...> bufs;
    (get<I>(children).template at_vec<V>(base, get<I>(bufs).v), ...);
#if defined(__CUDACC__)
#pragma unroll
#endif
    for (int k = 0; k < V; ++k) out[k] = static_cast<acc_type>(f(arg<I>(get<I>(bufs).v[k])...));
  }
};

// A child's plan; a scalar child is converted to the compute type `C` once, here.
template <class C, class E>
auto plan_child(const E& e, PlanBuilder& b) {
  if constexpr (detail::is_scalar_node_v<E>) {
    return ScalarPlan<C>{static_cast<C>(e.value())};
  } else {
    return e.plan(b);
  }
}
template <class C, class E>
using child_plan_t =
    decltype(plan_child<C>(std::declval<const E&>(), std::declval<PlanBuilder&>()));

// ---- node ----
template <class F, class... Es>
class Map {
  using types = detail::map_types<F, Es...>;
  template <std::size_t... I>
  static auto plan_type_of(std::index_sequence<I...>)
      -> MapPlan<F, typename types::compute, acc_t<typename types::value_type>,
                 child_plan_t<typename types::template arg<I>, Es>...>;

 public:
  using value_type = typename types::value_type;
  using functor = F;
  using plan_type = decltype(plan_type_of(std::index_sequence_for<Es...>{}));
  static constexpr std::size_t max_element_size =
      std::max({std::size_t{0}, Es::max_element_size...});
  static constexpr bool is_ember_expression = true;
  static constexpr bool is_scalar_node = false;

  explicit Map(F f, Es... children) : f_(f), children_(std::move(children)...) {
    std::apply(
        [&](const auto&... c) {
          ((shape_ = broadcast_shapes(shape_, c.shape(), F::name)), ...);
          ((device_ = detail::join_devices(device_, detail::device_of(c), F::name)), ...);
        },
        children_);
  }

  const Shape& shape() const { return shape_; }
  /// The operands' device (none when every operand is a number).
  std::optional<Device> device() const { return device_; }
  const F& functor_value() const { return f_; }
  const std::tuple<Es...>& children() const { return children_; }

  /// The leaves below this node, left to right (expr/leaves.hpp).
  auto leaves() const {
    return std::apply([](const auto&... c) { return std::tuple_cat(c.leaves()...); }, children_);
  }
  template <class V>
  void for_each_leaf(V&& visit) const {
    std::apply([&](const auto&... leaf) { (leaf.for_each_leaf(visit), ...); }, leaves());
  }

  plan_type plan(PlanBuilder& b) const { return plan_impl(b, std::index_sequence_for<Es...>{}); }

 private:
  template <std::size_t... I>
  plan_type plan_impl(PlanBuilder& b, std::index_sequence<I...>) const {
    // Children are planned left to right, the order for_each_leaf visited them in.
    plan_type p{f_, {}};
    ((get<I>(p.children) = plan_child<typename types::template arg<I>>(std::get<I>(children_), b)),
     ...);
    return p;
  }

  F f_;
  std::tuple<Es...> children_;
  Shape shape_;
  std::optional<Device> device_;
};

// ---- cast ----
template <Storable U, class Child>
struct CastPlan {
  using acc_type = acc_t<U>;
  Child child;
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE acc_type at(const Ix& ix) const {
    return to_acc(to_storage<U>(child.at(ix)));
  }
  template <int V, class Block>
  EMBER_HD EMBER_FORCEINLINE void at_vec(const Block& base, acc_type (&out)[V]) const {
    typename Child::acc_type in[V];
    child.template at_vec<V>(base, in);
    for (int k = 0; k < V; ++k) out[k] = to_acc(to_storage<U>(in[k]));
  }
  // ---- reverse mode: the cast passes the adjoint through (none into integer children) ----
  static constexpr int num_leaves = Child::num_leaves;
  struct Trace {
    acc_type y;
    typename Child::Trace kid;
  };
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE Trace trace(const Ix& ix) const {
    Trace t;
    t.kid = child.trace(ix);
    t.y = to_acc(to_storage<U>(t.kid.y));
    return t;
  }
  template <int Base, class Sink>
  EMBER_HD EMBER_FORCEINLINE void backprop(const Trace& t, acc_type g, Sink& sink) const {
    if constexpr (std::is_floating_point_v<acc_type> &&
                  std::is_floating_point_v<typename Child::acc_type>) {
      child.template backprop<Base>(t.kid, static_cast<typename Child::acc_type>(g), sink);
    }
  }
  template <int V>
  struct TraceVec {
    acc_type y[V];
    typename Child::template TraceVec<V> kid;
  };
  template <int V, class Block>
  EMBER_HD EMBER_FORCEINLINE void trace_vec(const Block& base, TraceVec<V>& t) const {
    child.template trace_vec<V>(base, t.kid);
    for (int k = 0; k < V; ++k) t.y[k] = to_acc(to_storage<U>(t.kid.y[k]));
  }
  template <int Base, int V, class Sink>
  EMBER_HD EMBER_FORCEINLINE void backprop_vec(const TraceVec<V>& t, const acc_type (&g)[V],
                                               Sink& sink) const {
    if constexpr (std::is_floating_point_v<acc_type> &&
                  std::is_floating_point_v<typename Child::acc_type>) {
      typename Child::acc_type gc[V];
      for (int k = 0; k < V; ++k) gc[k] = static_cast<typename Child::acc_type>(g[k]);
      child.template backprop_vec<Base, V>(t.kid, gc, sink);
    }
  }
};

/// The child's values converted to U (rounded to nearest even when U is narrower).
template <Storable U, class E>
class Cast {
 public:
  using value_type = U;
  using plan_type = CastPlan<U, typename E::plan_type>;
  static constexpr std::size_t max_element_size = E::max_element_size;
  static constexpr bool is_ember_expression = true;
  static constexpr bool is_scalar_node = false;

  explicit Cast(E child) : child_(std::move(child)) {}
  const Shape& shape() const { return child_.shape(); }
  std::optional<Device> device() const { return detail::device_of(child_); }
  const E& child() const { return child_; }
  auto leaves() const { return child_.leaves(); }
  template <class V>
  void for_each_leaf(V&& visit) const {
    child_.for_each_leaf(visit);
  }
  plan_type plan(PlanBuilder& b) const { return plan_type{child_.plan(b)}; }

 private:
  E child_;
};

}  // namespace ember::expr
