// What one evaluation writes: for each output, its pointer, its strides in the iteration space,
// the plan of the expression it receives, and how the value is stored (store_op.hpp).
// Both executors drive this same object; only the loop around it differs.
#pragma once

#include <cstdint>
#include <utility>

#include "../core/dtype.hpp"
#include "../expr/pack.hpp"
#include "../expr/plan.hpp"
#include "store_op.hpp"

namespace ember::exec {

template <StoreOp Op, Storable T, class Plan>
struct OutputSlot {
  using acc = acc_t<T>;
  T* data;
  expr::PlanStrides strides;
  Plan plan;

  using value_type = typename Plan::acc_type;

  EMBER_HD EMBER_FORCEINLINE void store(T* p, value_type v) const {
    if constexpr (Op == StoreOp::set) {
      *p = to_storage<T>(v);
    } else {
      *p = to_storage<T>(combine<Op>(to_acc(*p), static_cast<acc>(v)));
    }
  }
  EMBER_HD EMBER_FORCEINLINE void store_at(expr::LinearIndex ix, value_type v) const {
    store(data + ix.i, v);
  }
  EMBER_HD EMBER_FORCEINLINE void store_at(const expr::CoordIndex& ix, value_type v) const {
    store(data + strides.offset(ix), v);
  }
  template <int V>
  EMBER_HD EMBER_FORCEINLINE void store_vec(std::int64_t base, const value_type (&vals)[V]) const {
#if defined(EMBER_DEVICE_CODE)
    // One packed store (and load, for += and friends) of V elements.
    T out[V];
    if constexpr (Op != StoreOp::set) expr::packed_load<V>(data + base, out);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      if constexpr (Op == StoreOp::set) {
        out[k] = to_storage<T>(vals[k]);
      } else {
        out[k] = to_storage<T>(combine<Op>(to_acc(out[k]), static_cast<acc>(vals[k])));
      }
    }
    expr::packed_store<V>(data + base, out);
#else
    // Plain stores, which the compiler vectorises; staging a block in a local copy stalls
    // store forwarding on the CPU.
    for (int k = 0; k < V; ++k) store(data + base + k, vals[k]);
#endif
  }
  template <int V>
  EMBER_HD EMBER_FORCEINLINE void store_vec(const expr::RowBlock& b,
                                            const value_type (&vals)[V]) const {
    T* p = data + strides.offset(b.ix);
    const std::int64_t s = strides.inner();
    if (s == 1) {
      for (int k = 0; k < V; ++k) store(p + k, vals[k]);
    } else {
      for (int k = 0; k < V; ++k) store(p + k * s, vals[k]);
    }
  }
};

/// All outputs of one launch. Every output's value is computed before any is stored, so an
/// expression may read (at the same element) a tensor that another output overwrites.
template <class... Slots>
struct AssignPlan {
  expr::Pack<Slots...> slots;

  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE void at(const Ix& ix) const {
    at_impl(ix, std::index_sequence_for<Slots...>{});
  }
  template <int V, class Block>
  EMBER_HD EMBER_FORCEINLINE void at_vec(const Block& base) const {
    at_vec_impl<V>(base, std::index_sequence_for<Slots...>{});
  }

 private:
  template <class T, int V>
  struct Buf {
    T v[V];
  };
  template <class Ix, std::size_t... I>
  EMBER_HD EMBER_FORCEINLINE void at_impl(const Ix& ix, std::index_sequence<I...>) const {
    const expr::Pack<typename Slots::value_type...> vals(expr::get<I>(slots).plan.at(ix)...);
    (expr::get<I>(slots).store_at(ix, expr::get<I>(vals)), ...);
  }
  template <int V, class Block, std::size_t... I>
  EMBER_HD EMBER_FORCEINLINE void at_vec_impl(const Block& base, std::index_sequence<I...>) const {
    expr::Pack<Buf<typename Slots::value_type, V>...> vals;
    (expr::get<I>(slots).plan.template at_vec<V>(base, expr::get<I>(vals).v), ...);
    (expr::get<I>(slots).template store_vec<V>(base, expr::get<I>(vals).v), ...);
  }
};

}  // namespace ember::exec
