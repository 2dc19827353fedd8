// Leaf: a tensor inside an expression. It holds the tensor handle by value (refcounted), so an
// expression stays valid after the tensors it was built from go out of scope.
#pragma once

#include <cstdint>
#include <cstring>
#include <tuple>

#include "../core/dtype.hpp"
#include "../tensor/tensor.hpp"
#include "plan.hpp"

namespace ember::expr {

template <Storable T>
struct LeafPlan {
  using acc_type = acc_t<T>;
  const T* data;
  PlanStrides strides;

  EMBER_HD EMBER_FORCEINLINE acc_type at(LinearIndex ix) const { return to_acc(data[ix.i]); }
  EMBER_HD EMBER_FORCEINLINE acc_type at(const CoordIndex& ix) const {
    return to_acc(data[strides.offset(ix)]);
  }
  template <int V>
  EMBER_HD EMBER_FORCEINLINE void at_vec(std::int64_t base, acc_type (&out)[V]) const {
#if defined(EMBER_DEVICE_CODE)
    T p[V];
    packed_load<V>(data + base, p);
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = to_acc(p[k]);
#else
    // Plain loads: the compiler turns the fixed-size loop into vector loads itself.
    for (int k = 0; k < V; ++k) out[k] = to_acc(data[base + k]);
#endif
  }
  template <int V>
  EMBER_HD EMBER_FORCEINLINE void at_vec(const RowBlock& b, acc_type (&out)[V]) const {
    const T* p = data + strides.offset(b.ix);
    const std::int64_t s = strides.inner();
    // Separate loops for the common strides, so each one vectorises.
    if (s == 1) {
      for (int k = 0; k < V; ++k) out[k] = to_acc(p[k]);
    } else if (s == 0) {
      const acc_type v = to_acc(*p);
      for (int k = 0; k < V; ++k) out[k] = v;
    } else {
      for (int k = 0; k < V; ++k) out[k] = to_acc(p[k * s]);
    }
  }
  // ---- reverse mode: a leaf hands its adjoint to the sink's slot Base ----
  static constexpr int num_leaves = 1;
  struct Trace {
    acc_type y;
  };
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE Trace trace(const Ix& ix) const {
    return Trace{at(ix)};
  }
  template <int Base, class Sink>
  EMBER_HD EMBER_FORCEINLINE void backprop(const Trace&, acc_type g, Sink& sink) const {
    sink.template push<Base>(g);
  }
  // The same for V consecutive elements of the dense path, lane arrays instead of scalars.
  template <int V>
  struct TraceVec {
    acc_type y[V];
  };
  template <int V, class Block>
  EMBER_HD EMBER_FORCEINLINE void trace_vec(const Block& base, TraceVec<V>& t) const {
    at_vec<V>(base, t.y);
  }
  template <int Base, int V, class Sink>
  EMBER_HD EMBER_FORCEINLINE void backprop_vec(const TraceVec<V>&, const acc_type (&g)[V],
                                               Sink& sink) const {
    sink.template push_vec<Base>(g);
  }
};

/// What the executor needs to know of tensor `t` (defined) as an operand or an output.
template <Storable T>
LeafInfo leaf_info(const Tensor<T>& t) {
  LeafInfo info;
  info.shape = t.shape();
  info.strides = t.strides();
  info.data = t.data();
  info.storage = t.storage().get();
  info.element_size = sizeof(T);
  info.device = t.device();
  return info;
}

template <Storable T>
class Leaf {
 public:
  using value_type = T;
  using plan_type = LeafPlan<T>;
  static constexpr std::size_t max_element_size = sizeof(T);
  static constexpr bool is_ember_expression = true;
  static constexpr bool is_scalar_node = false;

  explicit Leaf(Tensor<T> t) : t_(std::move(t)) {
    EMBER_CHECK(t_.defined(), "ember: an undefined tensor was used in an expression");
  }

  const Shape& shape() const { return t_.shape(); }
  Device device() const { return t_.device(); }
  const Tensor<T>& tensor() const { return t_; }

  std::tuple<const Leaf&> leaves() const { return {*this}; }
  template <class F>
  void for_each_leaf(F&& f) const {
    f(leaf_info(t_));
  }

  plan_type plan(PlanBuilder& b) const {
    return plan_type{t_.data(), PlanStrides(b.next(), b.ndim())};
  }

 private:
  Tensor<T> t_;
};

/// A number inside an expression, held as double, int64 or bool. It takes the element type of
/// the tensors around it (`bf16_tensor * 0.5` stays bf16), as in PyTorch; the parent node
/// converts it to its compute type once, when planning.
template <class S>
struct ScalarPlan {
  using acc_type = S;
  S value;
  EMBER_HD EMBER_FORCEINLINE S at(LinearIndex) const { return value; }
  EMBER_HD EMBER_FORCEINLINE S at(const CoordIndex&) const { return value; }
  template <int V, class Block>
  EMBER_HD EMBER_FORCEINLINE void at_vec(const Block&, S (&out)[V]) const {
    for (int k = 0; k < V; ++k) out[k] = value;
  }
  // ---- reverse mode: a number is a constant, and not a leaf ----
  static constexpr int num_leaves = 0;
  struct Trace {
    S y;
  };
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE Trace trace(const Ix&) const {
    return Trace{value};
  }
  template <int Base, class Sink>
  EMBER_HD EMBER_FORCEINLINE void backprop(const Trace&, S, Sink&) const {}
  template <int V>
  struct TraceVec {
    S y[V];
  };
  template <int V, class Block>
  EMBER_HD EMBER_FORCEINLINE void trace_vec(const Block&, TraceVec<V>& t) const {
    for (int k = 0; k < V; ++k) t.y[k] = value;
  }
  template <int Base, int V, class Sink>
  EMBER_HD EMBER_FORCEINLINE void backprop_vec(const TraceVec<V>&, const S (&)[V], Sink&) const {}
};

template <class S>
class ScalarNode {
 public:
  using value_type = S;
  using plan_type = ScalarPlan<S>;
  static constexpr std::size_t max_element_size = 0;
  static constexpr bool is_ember_expression = true;
  static constexpr bool is_scalar_node = true;

  static_assert(std::is_same_v<S, double> || std::is_same_v<S, std::int64_t> ||
                    std::is_same_v<S, bool>,
                "ember: scalar nodes hold double, int64 or bool");
  explicit ScalarNode(S v) : v_(v) {}
  const Shape& shape() const {
    static const Shape rank0;
    return rank0;
  }
  S value() const { return v_; }
  std::tuple<> leaves() const { return {}; }
  template <class F>
  void for_each_leaf(F&&) const {}
  plan_type plan(PlanBuilder&) const { return plan_type{v_}; }

 private:
  S v_;
};

}  // namespace ember::expr
