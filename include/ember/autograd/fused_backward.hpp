// The fused backward of one expression, and the tape node that runs it.
//
// Materialising `Var<T> y = expr;` (or reducing an expression of Vars) records ONE FusedNode
// for the whole expression. The node keeps the expression (its leaves hold their tensors, so
// they are the saved tensors) and a seed rule (seed_rules.hpp). Its backward is one
// multi-output launch that writes the gradient of every leaf Var needing one, plus one
// reduction per leaf that was broadcast (and the small reductions some seed rules need).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../exec/assign.hpp"
#include "../exec/launch.hpp"
#include "../exec/layout.hpp"
#include "../exec/reduce.hpp"
#include "../expr/generator.hpp"
#include "../expr/leaves.hpp"
#include "../expr/operators.hpp"
#include "backward_plan.hpp"
#include "seed_rules.hpp"
#include "tape.hpp"
#include "var_node.hpp"

namespace ember {

template <Storable T>
class Var;

namespace autograd {

// The leaves of an expression are expr::leaf_types_t<E>, in the order of e.leaves()
// (expr/leaves.hpp): the backward's slots are indexed as the plan's leaves are.
template <class E>
using leaves_t = expr::leaf_types_t<E>;

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

/// Calls f(std::integral_constant<std::size_t, K>{}, leaf) for every leaf of `e` that is a Var.
template <class E, class F>
void for_each_var_leaf(const E& e, F&& f) {
  expr::for_each_indexed_leaf(e, [&](auto k, const auto& leaf) {
    if constexpr (is_var<std::remove_cvref_t<decltype(leaf)>>::value) f(k, leaf);
  });
}

template <class E>
bool any_requires_grad(const E& e) {
  bool any = false;
  for_each_var_leaf(e, [&](auto, const auto& v) {
    using T = typename std::remove_cvref_t<decltype(v)>::value_type;
    if constexpr (FloatingElement<T>) any = any || v.requires_grad();
  });
  return any;
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
  template <class A, class Fwd, class Seed>
  using type = BackwardPlan<A, Fwd, Seed, typename slot_out<Ns>::type...>;
};

/// The gradient outputs of a backward plan, one per leaf.
template <class Leaves, class = std::make_index_sequence<std::tuple_size_v<Leaves>>>
struct slot_outs;
template <class Leaves, std::size_t... K>
struct slot_outs<Leaves, std::index_sequence<K...>> {
  using type = expr::Pack<typename slot_out<std::tuple_element_t<K, Leaves>>::type...>;
};

namespace detail {
/// The widest element among the tensors a seed rule reads (a tuple of Tensor<X>).
template <class Tuple>
struct max_operand_bytes;
template <class... X>
struct max_operand_bytes<std::tuple<Tensor<X>...>> {
  static constexpr std::size_t value = std::max({std::size_t{0}, sizeof(X)...});
};
}  // namespace detail

/// What a fused tape node does whatever its expression's type (compiled once, not per
/// expression): it remembers the version of every storage its backward reads, the operands'
/// and then the seed rule's, and refuses a backward after one was modified in place.
class SavedStorages {
 public:
  SavedStorages(const expr::LeafInfos& leaves, std::vector<const Storage*> extra)
      : operands_(leaves.size()) {
    for (const expr::LeafInfo& leaf : leaves) saved_.push_back(leaf.storage);
    saved_.insert(saved_.end(), extra.begin(), extra.end());
    for (const Storage* s : saved_) versions_.push_back(s ? s->version() : 0);
  }
  /// Throws, naming operation `op`, when a saved storage changed since it was saved.
  void check(const std::string& op) const {
    for (std::size_t k = 0; k < saved_.size(); ++k) {
      const Storage* s = saved_[k];
      if (s && s->version() != versions_[k]) {
        fail("ember: backward of ", op, ": a tensor saved for backward (",
             k < operands_ ? "operand " + std::to_string(k) : std::string("its result"),
             ") was modified in place after it was used (version ", versions_[k], ", now ",
             s->version(), "); clone it before modifying it");
      }
    }
  }
  void clear() {
    saved_.clear();
    versions_.clear();
  }

 private:
  std::size_t operands_;
  std::vector<const Storage*> saved_;
  std::vector<std::uint64_t> versions_;
};

/// A fused node's name: the expression's top function (`op`), inside the seed rule's when it
/// has one: "sum(mul)".
inline std::string fused_node_name(std::string_view op, std::string_view rule) {
  return rule.empty() ? std::string(op) : ember::detail::concat(rule, "(", op, ")");
}

template <class Rule>
std::vector<const Storage*> rule_storages(const Rule& rule) {
  std::vector<const Storage*> saved;
  rule.saved(saved);
  return saved;
}

// The evaluating parts live in the translation unit's executor namespace (core/config.hpp), so
// that .cpp and .cu instantiations of the same node never collide at link time.
inline namespace EMBER_UNIT_KIND {

/// Points `slot` at where Var `vn`'s adjoint goes in a backward over `shape`: its gradient when
/// it has that shape (added to, or written fresh), else a temporary of that shape, reduced into
/// its gradient by a function added to `reductions`, called after the launch. A template of the
/// element type only: every expression's backward shares it.
template <Storable T>
void gradient_target(SlotOut<T>& slot, VarNode<T>* vn, const Shape& shape, Device device,
                     std::vector<std::function<void()>>& reductions) {
  if (vn->value.shape() == shape) {
    vn->own_grad();
    slot.add = vn->grad.defined();  // else the launch writes a fresh gradient
    if (!slot.add) vn->grad = empty<T>(shape, device);
    EMBER_CHECK(vn->grad.is_contiguous(), "ember: internal: non-contiguous gradient");
    slot.direct = vn->grad.data();
    return;
  }
  Tensor<acc_t<T>> temp = empty<acc_t<T>>(shape, device);
  slot.wide = temp.data();
  reductions.push_back([temp, vn, shape] {
    const Shape leaf = vn->value.shape();
    Tensor<T> r = exec::reduce_expression<T>(expr::Leaf<acc_t<T>>(temp),
                                             reduce::Bound<reduce::Sum<acc_t<T>>>{}, "sum",
                                             broadcast_axes(leaf, shape), true, true);
    accumulate_grad<T, T>(*vn, r.reshape(leaf), true);
  });
}

/// Where the fused backward of `e` writes: for each slot (leaf) of e, the gradient its adjoint
/// goes to. A Var of e's shape takes it directly (added to its gradient, or written as a fresh
/// one); a broadcast Var gets a temporary of e's shape, reduced into its gradient after the
/// launch.
template <class E>
class GradientTargets {
 public:
  using Leaves = leaves_t<E>;
  static constexpr std::size_t N = expr::leaf_count_v<E>;
  using Outs = typename slot_outs<Leaves>::type;

  GradientTargets(const E& e, const Shape& shape, Device device) {
    dst_.fill(-1);
    std::array<const VarNodeBase*, N ? N : 1> slot_var{};
    for_each_var_leaf(e, [&](auto k, const auto& var) {
      constexpr std::size_t K = decltype(k)::value;
      using T = typename std::remove_cvref_t<decltype(var)>::value_type;
      if constexpr (FloatingElement<T>) {
        VarNode<T>* vn = var.node().get();
        slot_var[K] = vn;
        if (!vn->requires_grad) return;
        for (std::size_t j = 0; j != K; ++j) {
          if (dst_[j] == static_cast<int>(j) && slot_var[j] == vn) {
            dst_[K] = static_cast<int>(j);  // x * x: both adjoints go to the first slot
            return;
          }
        }
        dst_[K] = static_cast<int>(K);
        gradient_target(expr::get<K>(outs_), vn, shape, device, reductions_);
      }
    });
  }

  /// Whether any slot wants a gradient.
  bool any() const {
    return std::any_of(dst_.begin(), dst_.end(), [](int d) { return d >= 0; });
  }
  const Outs& outs() const { return outs_; }
  /// dst[k]: k itself, an earlier slot holding the same Var, or -1 (no gradient wanted).
  const std::array<int, N ? N : 1>& dst() const { return dst_; }

  /// The gradients' pointers, for the GPU's alignment check.
  void touch(exec::LaunchSpace& space) const {
    [&]<std::size_t... K>(std::index_sequence<K...>) { (touch(space, expr::get<K>(outs_)), ...); }
    (std::make_index_sequence<N>{});
  }

  /// After the launch: the written gradients' versions, and the broadcast slots' reductions.
  void finish(const E& e) {
    for_each_var_leaf(e, [&](auto k, const auto& var) {
      if (dst_[decltype(k)::value] == static_cast<int>(decltype(k)::value) &&
          var.node()->grad.defined()) {
        var.node()->grad.storage()->bump_version();
      }
    });
    for (auto& reduce : reductions_) reduce();
  }

 private:
  template <Storable T>
  static void touch(exec::LaunchSpace& space, const SlotOut<T>& slot) {
    space.touches(slot.direct, sizeof(T));
    space.touches(slot.wide, sizeof(acc_t<T>));
  }
  static void touch(exec::LaunchSpace&, const NoOut&) {}

  Outs outs_{};
  std::array<int, N ? N : 1> dst_{};
  std::vector<std::function<void()>> reductions_;
};

/// A constant 1 in host memory: the implicit upstream gradient of `loss.backward()` on the CPU.
template <Storable G>
const G* host_one() {
  static const G one = to_storage<G>(acc_t<G>(1));
  return &one;
}

/// The seed reads the upstream gradient and the rule's operands, each broadcast to the shape (an
/// undefined tensor: an all-zero stride, planned as a null pointer or host_one).
template <Storable X>
void add_seed_array(exec::LaunchSpace& space, const Tensor<X>& t) {
  if (!t.defined()) {
    space.add(Strides::filled(space.shape().rank(), 0));
    return;
  }
  space.add(broadcast_strides(t.shape(), t.strides(), space.shape()), t.data(), sizeof(X));
}

/// A seed operand one element broadcast over everything keeps the dense path when every other
/// array is dense (SeedOperand::step reads it with stride 0): arrays [first, end) are the seed's.
inline void allow_broadcast_seeds(exec::IterLayout& L, std::size_t first, std::size_t end) {
  if (L.ndim() != 1) return;
  bool dense = true;
  for (std::size_t i = 0; i < L.arrays.size(); ++i) {
    const std::int64_t st = L.arrays[i][0];
    dense = dense && (st == 1 || (i >= first && i < end && st == 0));
  }
  L.dense = dense;
}

/// The plan of a tensor read by the seed: an undefined tensor plans as a null pointer, or as
/// `fallback` (host_one for the upstream gradient on the CPU).
template <Storable X>
SeedOperand<X> seed_operand_plan(const Tensor<X>& t, expr::PlanBuilder& b, std::int64_t step,
                                 const X* fallback = nullptr) {
  return SeedOperand<X>{t.defined() ? t.data() : fallback, expr::PlanStrides(b.next(), b.ndim()),
                        step};
}

/// The fused backward of expression `e`: the seed `rule` applied to the upstream gradient `up`
/// (broadcastable to e's shape, or undefined for an implicit 1), pushed to every leaf Var that
/// requires grad. One launch, plus one reduction per broadcast leaf.
template <class E, Storable GT, class Rule>
void fused_backward(const E& e, const Tensor<GT>& up, const Rule& rule) {
  using A = acc_t<typename E::value_type>;
  if constexpr (!std::is_floating_point_v<A>) {
    return;  // integer and bool expressions are not differentiable
  } else {
    const Shape shape = e.shape();
    const Device device =
        up.defined() ? up.device() : expr::detail::device_of(e).value_or(Device::cpu());
    GradientTargets<E> targets(e, shape, device);
    if (!targets.any()) return;

    // The arrays: the gradients (contiguous, e's shape), the upstream gradient, the seed
    // rule's operands, the leaves; planned in that order.
    const auto operands = rule.operands(e);
    constexpr std::size_t kSeedEnd = 2 + std::tuple_size_v<std::remove_cvref_t<decltype(operands)>>;
    exec::LaunchSpace space(shape, device);
    space.add(contiguous_strides(shape));
    targets.touch(space);
    add_seed_array(space, up);
    std::apply([&](const auto&... t) { (add_seed_array(space, t), ...); }, operands);
    space.add_leaves(expr::leaves_of(e), "backward");
    exec::IterLayout& L = space.collapse();
    allow_broadcast_seeds(L, 1, kSeedEnd);

    expr::PlanBuilder b = space.planner(1, L.arrays.size());
    std::size_t next_seed = 1;
    const auto step = [&] { return L.ndim() == 1 ? L.arrays[next_seed++][0] : std::int64_t{0}; };
    // The implicit 1 is a null pointer for nvcc's device code, which tests for it, and host_one
    // where the kernels are host code: the CPU's loops, and every kernel of an emulated build.
#if defined(EMBER_CUDA_EMULATION)
    const bool kernels_are_host_code = true;
#else
    const bool kernels_are_host_code = device.is_cpu();
#endif
    const SeedOperand<GT> up_plan =
        seed_operand_plan(up, b, step(), kernels_are_host_code ? host_one<GT>() : nullptr);
    const auto operand_plans = std::apply(
        [&](const auto&... t) { return std::tuple{seed_operand_plan(t, b, step())...}; }, operands);
    auto seed = std::apply([&](const auto&... p) { return rule.template seed<A>(up_plan, p...); },
                           operand_plans);
    using Plan = typename backward_plan_of<leaves_t<E>>::template type<A, typename E::plan_type,
                                                                       decltype(seed)>;
    Plan plan{e.plan(b), seed, space.plan_strides(0), targets.outs(), {}};
    for (std::size_t k = 0; k < GradientTargets<E>::N; ++k) plan.dst[k] = targets.dst()[k];

    // The CPU's blocks have lanes of the compute type (BackwardPlan::at_vec); the GPU moves 16
    // bytes of the widest element per access, as the forward does.
    constexpr std::size_t kMaxBytes =
        std::max({sizeof(GT), sizeof(A), E::max_element_size,
                  detail::max_operand_bytes<std::remove_cvref_t<decltype(operands)>>::value});
    space.template run<exec::cpu_width<sizeof(A)>, exec::gpu_width<kMaxBytes>>(plan);
    targets.finish(e);
  }
}

/// The tape node of one materialised expression, optionally followed by one reduction.
template <class E, Storable T, class Rule>
class FusedNode final : public TapeNode {
 public:
  /// `kept`: for a reduction, the result's shape with the reduced axes kept as size 1.
  FusedNode(E e, VarNode<T>* out, Rule rule, std::optional<Shape> kept = std::nullopt)
      : e_(std::move(e)),
        out_(out),
        rule_(std::move(rule)),
        kept_(std::move(kept)),
        saved_(expr::leaves_of(*e_), rule_storages(rule_)) {}

  void backward() override {
    if (!e_) return;
    saved_.check(name());
    if (!out_->has_grad()) return;
    Tensor<T> g = out_->grad;  // undefined for the implicit 1 of loss.backward()
    if (kept_ && g.defined()) g = g.reshape(*kept_);
    fused_backward(*e_, g, rule_);
    out_->drop_grad();  // an intermediate gradient is used once
  }
  void release() override {
    e_.reset();
    saved_.clear();
  }
  void inputs(std::vector<VarNodeBase*>& out) const override {
    if (!e_) return;
    for_each_var_leaf(*e_, [&](auto, const auto& v) {
      if (v.node()->requires_grad) out.push_back(v.node().get());
    });
  }
  std::string name() const override {
    if constexpr (requires { E::functor::name; }) {
      return fused_node_name(E::functor::name, rule_.name);
    } else if constexpr (requires { std::declval<const E&>().child(); }) {
      return fused_node_name("cast", rule_.name);
    } else {
      return fused_node_name("identity", rule_.name);
    }
  }

 private:
  std::optional<E> e_;
  VarNode<T>* out_;  // owns this node
  Rule rule_;
  std::optional<Shape> kept_;
  SavedStorages saved_;
};

}  // namespace EMBER_UNIT_KIND
}  // namespace autograd
}  // namespace ember
