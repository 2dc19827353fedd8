// Assignment: where fusion happens. `y = expr`, `y += expr` and `assign(std::tie(y1, y2), e1,
// e2)` check shapes, devices and types, collapse the iteration space over every operand, plan
// each expression and run the whole thing as one launch on the outputs' device.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/compiled_once.hpp"
#include "../core/concepts.hpp"
#include "../core/cuda.hpp"
#include "../expr/leaf.hpp"
#include "../expr/leaves.hpp"
#include "../expr/operators.hpp"
#include "../tensor/copy.hpp"
#include "../tensor/factories.hpp"
#include "../tensor/tensor.hpp"
#include "assign_plan.hpp"
#include "cpu_executor.hpp"
#include "launch.hpp"
#include "layout.hpp"

namespace ember {

namespace exec {

template <Storable T, class V>
constexpr void check_assignable() {
  static_assert(!(IntegralElement<T> && FloatingElement<V>),
                "ember: a floating-point expression cannot be stored in an integer or bool "
                "tensor; convert it explicitly with ember::cast<T>(expression)");
}

namespace detail::inline EMBER_UNIT_KIND {
/// An output as the checks see it, whatever its element type.
template <Storable T>
expr::LeafInfo output_info(const Tensor<T>& o) {
  EMBER_CHECK(o.defined(), "ember: assignment to an undefined tensor");
  return expr::leaf_info(o);
}

/// One expression of an assignment: its shape and its leaves in planning order.
struct AssignOperand {
  Shape shape;
  expr::LeafInfos leaves;
};

/// The launch space of an assignment, every check made: the outputs first (one shape, one
/// device, no broadcast view: several elements would share one memory location), then the
/// leaves of each expression (broadcastable to that shape, on that device), expression k's
/// from array begin[k] (begin[es.size()] is the end). Sets `aliased` when a leaf reads an
/// output's memory other than the element being written: with the work split over threads,
/// another may already have overwritten it. Not a template: each assignment's types only
/// gather what it checks.
inline LaunchSpace assign_space(std::span<const expr::LeafInfo> outs,
                                std::span<const AssignOperand> es, std::span<std::size_t> begin,
                                bool& aliased) {
  const expr::LeafInfo& first = outs.front();
  LaunchSpace space(first.shape, first.device);
  const Shape& shape = space.shape();
  for (const expr::LeafInfo& o : outs) {
    EMBER_CHECK(o.shape == shape, "ember: assign: outputs have different shapes (", shape.str(),
                " and ", o.shape.str(), ")");
    EMBER_CHECK(o.device == space.device(), "ember: assign: outputs are on different devices (",
                space.device().str(), " and ", o.device.str(), ")");
    for (int d = 0; d < shape.rank(); ++d) {
      EMBER_CHECK(shape[d] <= 1 || o.strides[d] != 0,
                  "ember: assign: the output is a broadcast view (stride 0 on dimension ", d,
                  " of shape ", shape.str(), "); several elements would share one memory location");
    }
    space.add(o.strides, o.data, o.element_size);
  }
  aliased = false;
  for (std::size_t k = 0; k < es.size(); ++k) {
    if (!broadcastable_to(es[k].shape, shape)) {
      fail("ember: assign: an expression of shape ", es[k].shape.str(),
           " cannot be written to a tensor of shape ", shape.str());
    }
    begin[k] = space.size();
    space.add_leaves(es[k].leaves, "assign");
    for (std::size_t i = 0; i < es[k].leaves.size(); ++i) {
      const expr::LeafInfo& leaf = es[k].leaves[i];
      const Strides& s = space.arrays()[begin[k] + i];
      for (const expr::LeafInfo& o : outs) {
        aliased = aliased || (leaf.storage && leaf.storage == o.storage &&
                              (leaf.data != o.data || !(s == o.strides)));
      }
    }
  }
  begin[es.size()] = space.size();
  return space;
}

/// An expression type as evaluate() holds it: by value, or by reference (evaluate_into).
template <class E>
using node_of = std::remove_cvref_t<E>;

/// The plan of outputs `outs` and expressions `es`: expression I reads the collapsed arrays
/// [begin[I], begin[I + 1]) of the space.
template <StoreOp Op, Storable... Ts, class... Es, std::size_t... I>
auto assign_plan(const std::tuple<Tensor<Ts>...>& outs, const std::tuple<Es...>& es,
                 const LaunchSpace& space, const std::array<std::size_t, sizeof...(Es) + 1>& begin,
                 std::index_sequence<I...>) {
  const auto slot = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
    expr::PlanBuilder b = space.planner(begin[K], begin[K + 1]);
    using Slot =
        OutputSlot<Op, std::tuple_element_t<K, std::tuple<Ts...>>,
                   typename node_of<std::tuple_element_t<K, std::tuple<Es...>>>::plan_type>;
    return Slot{std::get<K>(outs).data(), space.plan_strides(K), std::get<K>(es).plan(b)};
  };
  return AssignPlan<OutputSlot<Op, Ts, typename node_of<Es>::plan_type>...>{
      expr::Pack<OutputSlot<Op, Ts, typename node_of<Es>::plan_type>...>(
          slot(std::integral_constant<std::size_t, I>{})...)};
}
}  // namespace detail::inline EMBER_UNIT_KIND

inline namespace EMBER_UNIT_KIND {

/// Evaluates es[k] into outs[k] for every k in one launch. Outputs must share one shape and
/// device; each expression must broadcast to that shape. `es` holds the expressions or
/// references to them.
template <StoreOp Op, Storable... Ts, class... Es>
void evaluate(const std::tuple<Tensor<Ts>...>& outs, const std::tuple<Es...>& es) {
  static_assert(sizeof...(Ts) == sizeof...(Es), "ember: assign needs one expression per output");
  (check_assignable<Ts, typename detail::node_of<Es>::value_type>(), ...);
  const auto out_infos =
      std::apply([](const auto&... o) { return std::array{detail::output_info(o)...}; }, outs);
  const auto operands = std::apply(
      [](const auto&... e) {
        return std::array{detail::AssignOperand{e.shape(), expr::leaves_of(e)}...};
      },
      es);
  std::array<std::size_t, sizeof...(Es) + 1> begin{};
  bool aliased = false;
  LaunchSpace space = detail::assign_space(out_infos, operands, begin, aliased);

  if (aliased) {
    // Materialise every expression first, then store: two launches instead of a wrong answer.
    auto temps = std::make_tuple(empty<Ts>(space.shape(), space.device())...);
    evaluate<StoreOp::set>(temps, es);
    auto leaves =
        std::apply([](const auto&... t) { return std::make_tuple(expr::Leaf(t)...); }, temps);
    evaluate<Op>(outs, leaves);
    return;
  }

  space.collapse();
  constexpr std::size_t kMaxBytes =
      std::max({sizeof(Ts)..., detail::node_of<Es>::max_element_size...});
  space.template run<cpu_width<kMaxBytes>, gpu_width<kMaxBytes>>(
      detail::assign_plan<Op>(outs, es, space, begin, std::index_sequence_for<Ts...>{}));
  std::apply([](const auto&... o) { (o.storage()->bump_version(), ...); }, outs);
}

/// The memory format a new result of `e` takes: that of its first operand of the result's
/// (rank-4) shape, so elementwise work on channels-last tensors stays channels-last, as in
/// PyTorch, instead of transposing into NCHW on the way.
inline MemoryFormat result_format(const Shape& shape, const expr::LeafInfos& leaves) {
  if (shape.rank() != 4) return MemoryFormat::contiguous;
  for (const expr::LeafInfo& leaf : leaves) {
    if (leaf.data && leaf.shape == shape) return memory_format_of(shape, leaf.strides);
  }
  return MemoryFormat::contiguous;
}
template <class E>
MemoryFormat result_format(const E& e) {
  if (e.shape().rank() != 4) return MemoryFormat::contiguous;
  return result_format(e.shape(), expr::leaves_of(e));
}

/// Evaluates `e` into `out` (allocating `out` when undefined, in result_format(e)).
template <StoreOp Op, Storable T, class E>
void evaluate_into(Tensor<T>& out, const E& e) {
  if (!out.defined()) {
    std::optional<Device> dev = expr::detail::device_of(e);
    out = empty<T>(e.shape(), dev.value_or(Device::cpu()), result_format(e));
  }
  evaluate<Op>(std::tuple<Tensor<T>>(out), std::tuple<const E&>(e));  // no copy of the tree
}

}  // namespace EMBER_UNIT_KIND
}  // namespace exec

}  // namespace ember

namespace ember::inline EMBER_UNIT_KIND {
/// Evaluates several expressions into several outputs of one shape in a single launch:
/// `ember::assign(std::tie(y1, y2), e1, e2)`.
template <Storable... Ts, ArrayOperand... Es>
requires(sizeof...(Ts) == sizeof...(Es)) void assign(std::tuple<Tensor<Ts>&...> outs,
                                                     const Es&... es) {
  auto copies = std::apply([](auto&... o) { return std::make_tuple(o...); }, outs);
  exec::evaluate<exec::StoreOp::set>(copies, std::make_tuple(expr::as_node(es)...));
}
}  // namespace ember::inline EMBER_UNIT_KIND

namespace ember::exec::inline EMBER_UNIT_KIND {

// ---- What Tensor's evaluating members call (declared in tensor/tensor.hpp) ----

template <StoreOp Op, Storable T, class E>
void update(Tensor<T>& out, const E& operand) {
  evaluate_into<Op>(out, expr::as_node(operand));
}

template <Storable T, Scalar S>
void fill(Tensor<T>& out, S value) {
  evaluate_into<StoreOp::set>(out, expr::Cast<T, expr::node_t<S>>(expr::as_node(value)));
}

template <Storable T, Storable U>
void copy_values(Tensor<T>& out, const Tensor<U>& src) {
  const Tensor<U> here = src.to(out.device());
  evaluate_into<StoreOp::set>(out, expr::Cast<T, expr::Leaf<U>>(expr::Leaf<U>(here)));
}

template <Storable T>
Tensor<T> copy_of(const Tensor<T>& t, MemoryFormat format) {
  Tensor<T> out = empty<T>(t.shape(), t.device(), format);
  out = expr::Leaf<T>(t);
  return out;
}

template <Storable T>
Tensor<T> pinned_copy(const Tensor<T>& t) {
  Tensor<T> out = empty_pinned<T>(t.shape());
  if (t.numel() != 0) out = expr::Leaf<T>(t);
  return out;
}

/// The host copy of a view of device memory: copies the span of storage the view covers, then
/// gathers on the CPU, so it works from any translation unit.
template <Storable T>
Tensor<T> gather_to_host(const Tensor<T>& t) {
  std::int64_t span = 1;
  for (int i = 0; i < t.rank(); ++i) span += (t.shape()[i] - 1) * t.strides()[i];
  Tensor<T> raw = empty<T>(Shape{span}, Device::cpu());
  ember::detail::copy_bytes(raw.data(), Device::cpu(), t.data(), t.device(),
                            static_cast<std::size_t>(span) * sizeof(T));
  Tensor<T> view(raw.storage(), 0, t.shape(), t.strides());
  return view.contiguous();
}

template <Storable T>
Tensor<T> copy_to(const Tensor<T>& t, Device target, bool non_blocking) {
  if (t.numel() == 0) return empty<T>(t.shape(), target);
  const bool channels_last =
      t.rank() == 4 && !t.is_contiguous() && t.is_contiguous(MemoryFormat::channels_last);
  if (!t.is_contiguous() && !channels_last) {
    if (target.is_cpu() && !t.device().is_cpu()) return gather_to_host(t);
    return t.contiguous().to(target);
  }
  // Dense either way: the bytes as they are, in the same memory format.
  Tensor<T> out = empty<T>(t.shape(), target,
                           channels_last ? MemoryFormat::channels_last : MemoryFormat::contiguous);
  const auto bytes = static_cast<std::size_t>(t.numel()) * sizeof(T);
  if (non_blocking && t.is_pinned() && target.is_cuda()) {
    ember::detail::copy_pinned_to_device_async(out.data(), target, t.data(), t.storage()->data(),
                                               bytes);
  } else {
    ember::detail::copy_bytes(out.data(), target, t.data(), t.device(), bytes);
  }
  return out;
}

}  // namespace ember::exec::inline EMBER_UNIT_KIND

// ---- Compiled once in ember::kernels (core/compiled_once.hpp): what every program copies ----

/// Evaluating `__VA_ARGS__` (an expression type) into a Tensor<T> with store `Op`, as a tensor's
/// `=` and `+=` do: `evaluate_into`, and with it the `evaluate` it calls.
#define EMBER_EVALUATION_INSTANCE(EXPLICIT, Op, T, ...)                     \
  namespace ember::exec {                                                   \
  EXPLICIT void evaluate_into<StoreOp::Op>(Tensor<T>&, const __VA_ARGS__&); \
  }

/// A store of a Tensor<T> through `evaluate` by value: every evaluation whose operands alias its
/// output makes one (it materialises the expression first, then stores that).
#define EMBER_LEAF_STORE_INSTANCE(EXPLICIT, Op, T)                       \
  namespace ember::exec {                                                \
  EXPLICIT void evaluate<StoreOp::Op>(const std::tuple<Tensor<T>>&,      \
                                      const std::tuple<expr::Leaf<T>>&); \
  }

/// What every element type needs: the copies behind a Tensor<T>'s copying members (contiguous,
/// clone, to, pin_memory, to_vector, copy_ from its own type, and the gather to the host that `to`
/// makes of a view), what they evaluate (copies and the aliasing fallback's store), and fills.
#define EMBER_COPY_INSTANCES(EXPLICIT, T)                        \
  namespace ember::exec {                                        \
  EXPLICIT Tensor<T> copy_of<T>(const Tensor<T>&, MemoryFormat); \
  EXPLICIT Tensor<T> copy_to<T>(const Tensor<T>&, Device, bool); \
  EXPLICIT Tensor<T> pinned_copy<T>(const Tensor<T>&);           \
  EXPLICIT void copy_values<T, T>(Tensor<T>&, const Tensor<T>&); \
  EXPLICIT Tensor<T> gather_to_host<T>(const Tensor<T>&);        \
  }                                                              \
  EMBER_LEAF_STORE_INSTANCE(EXPLICIT, set, T)                    \
  EMBER_EVALUATION_INSTANCE(EXPLICIT, set, T, expr::Leaf<T>)     \
  EMBER_EVALUATION_INSTANCE(EXPLICIT, set, T, expr::Cast<T, expr::ScalarNode<double>>)

/// For a floating Tensor<T> also: `+=` of one tensor (gradient accumulation), casts from each
/// floating type (copy_, the master weights, checkpoints), and the sum of two tensors (a gradient
/// that two paths reach).
#define EMBER_FLOATING_COPY_INSTANCES(EXPLICIT, T)                                    \
  EMBER_COPY_INSTANCES(EXPLICIT, T)                                                   \
  EMBER_LEAF_STORE_INSTANCE(EXPLICIT, add, T)                                         \
  EMBER_EVALUATION_INSTANCE(EXPLICIT, add, T, expr::Leaf<T>)                          \
  EMBER_EVALUATION_INSTANCE(EXPLICIT, set, T, expr::Cast<T, expr::Leaf<float>>)       \
  EMBER_EVALUATION_INSTANCE(EXPLICIT, set, T, expr::Cast<T, expr::Leaf<double>>)      \
  EMBER_EVALUATION_INSTANCE(EXPLICIT, set, T, expr::Cast<T, expr::Leaf<ember::bf16>>) \
  EMBER_EVALUATION_INSTANCE(EXPLICIT, set, T, expr::Cast<T, expr::Leaf<ember::half>>) \
  EMBER_EVALUATION_INSTANCE(EXPLICIT, set, T, expr::Map<fn::Add, expr::Leaf<T>, expr::Leaf<T>>)

/// For the element types that are not floating (labels, indices, masks, pixels: what data
/// pipelines, losses and checkpoints copy) also copy_'s cast from its own type.
#define EMBER_INTEGER_COPY_INSTANCES(EXPLICIT, T) \
  EMBER_COPY_INSTANCES(EXPLICIT, T)               \
  EMBER_EVALUATION_INSTANCE(EXPLICIT, set, T, expr::Cast<T, expr::Leaf<T>>)

// Every element type, in both kinds of unit (double's copies too: checkpoints and metrics make
// them in nvcc's units as well).
#if defined(EMBER_KERNELS)
EMBER_FLOATING_TYPES(EMBER_FLOATING_COPY_INSTANCES, extern template)
EMBER_INTEGER_TYPES(EMBER_INTEGER_COPY_INSTANCES, extern template)
#endif
