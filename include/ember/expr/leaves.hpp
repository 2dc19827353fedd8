// The leaves of an expression as a typed, indexed list. Every node type has `leaves()`: a tuple
// of references to the leaves below it (expr::Leaf, expr::Generated, autograd's Var), left to
// right. That order is the one every walk uses: for_each_leaf (the executor's view of the
// operands), planning (each leaf takes the next strides from the PlanBuilder), and the fused
// backward's gradient slots. A number (ScalarNode) is not a leaf.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "plan.hpp"

namespace ember::expr {

namespace detail {
template <class Tuple>
struct decayed;
template <class... Ls>
struct decayed<std::tuple<Ls...>> {
  using type = std::tuple<std::remove_cvref_t<Ls>...>;
};
}  // namespace detail

/// The leaf types of expression E, in order: std::tuple<Leaf<float>, Var<float>, ...>.
template <class E>
using leaf_types_t = typename detail::decayed<
    decltype(std::declval<const std::remove_cvref_t<E>&>().leaves())>::type;

/// How many leaves E has.
template <class E>
inline constexpr std::size_t leaf_count_v = std::tuple_size_v<leaf_types_t<E>>;

/// What the executor needs to know of each leaf of `e` (LeafInfo), in order: one allocation.
template <class E>
LeafInfos leaves_of(const E& e) {
  LeafInfos leaves;
  leaves.reserve(leaf_count_v<E>);
  LeafCollector collect{leaves};
  e.for_each_leaf(collect);
  return leaves;
}

/// Calls f(std::integral_constant<std::size_t, K>{}, leaf) for every leaf of `e`, K its index.
template <class E, class F>
void for_each_indexed_leaf(const E& e, F&& f) {
  const auto leaves = e.leaves();
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    (f(std::integral_constant<std::size_t, K>{}, std::get<K>(leaves)), ...);
  }
  (std::make_index_sequence<std::tuple_size_v<decltype(leaves)>>{});
}

}  // namespace ember::expr
