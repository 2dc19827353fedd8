// The fused backward of one elementwise expression as a single multi-output launch.
//
// For each element, BackwardPlan traces the forward plan (every intermediate value, recomputed
// in registers instead of stored), asks the seed rule for d(loss)/d(root) there (the upstream
// gradient, or a reduction's local derivative times it: seed_rules.hpp), pushes it down the tree
// once (MapPlan::backprop), and writes the adjoint of every leaf k that needs one to slot k. Slots
// whose leaf is the same Var as an earlier slot add into that slot (x * x). An output slot is
// either the Var's gradient itself (same shape: stored with = or +=) or, for a broadcast leaf, a
// temporary in the compute type that one reduction folds back to the leaf's shape.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "../core/dtype.hpp"
#include "../expr/leaf.hpp"
#include "../expr/pack.hpp"
#include "../expr/plan.hpp"

namespace ember::autograd {

/// Where slot k's adjoint goes.
template <Storable T>
struct SlotOut {
  T* direct = nullptr;       // the gradient tensor itself (dense, expression shape)
  acc_t<T>* wide = nullptr;  // or a compute-type temporary (broadcast leaves)
  bool add = false;          // direct: accumulate into the existing gradient

  template <class A>
  EMBER_HD EMBER_FORCEINLINE void store(std::int64_t o, A v) const {
    using C = acc_t<T>;
    if (direct) {
      direct[o] = add ? to_storage<T>(static_cast<C>(to_acc(direct[o]) + static_cast<C>(v)))
                      : to_storage<T>(static_cast<C>(v));
    } else if (wide) {
      wide[o] = static_cast<C>(v);
    }
  }
  /// V consecutive elements from o: the branches are taken once, so each loop vectorises (in
  /// device code, packed accesses: the executor checked the alignment).
  template <int V, class A>
  EMBER_HD EMBER_FORCEINLINE void store_vec(std::int64_t o, const A (&v)[V]) const {
    using C = acc_t<T>;
#if defined(EMBER_DEVICE_CODE)
    if (direct) {
      T out[V];
      if (add) {
        expr::packed_load<V>(direct + o, out);
#pragma unroll
        for (int k = 0; k < V; ++k) {
          out[k] = to_storage<T>(static_cast<C>(to_acc(out[k]) + static_cast<C>(v[k])));
        }
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) out[k] = to_storage<T>(static_cast<C>(v[k]));
      }
      expr::packed_store<V>(direct + o, out);
    } else if (wide) {
      C out[V];
#pragma unroll
      for (int k = 0; k < V; ++k) out[k] = static_cast<C>(v[k]);
      expr::packed_store<V>(wide + o, out);
    }
#else
    if (direct && add) {
      // All loads before all stores: one vector load, add and store, with no aliasing question
      // between the lanes' reads and writes for the compiler to give up on.
      C sum[V];
      for (int k = 0; k < V; ++k)
        sum[k] = static_cast<C>(to_acc(direct[o + k]) + static_cast<C>(v[k]));
      for (int k = 0; k < V; ++k) direct[o + k] = to_storage<T>(sum[k]);
    } else if (direct) {
      for (int k = 0; k < V; ++k) direct[o + k] = to_storage<T>(static_cast<C>(v[k]));
    } else if (wide) {
      for (int k = 0; k < V; ++k) wide[o + k] = static_cast<C>(v[k]);
    }
#endif
  }
};

/// A slot whose leaf gets no gradient (constants, integer tensors, generated operands).
struct NoOut {
  template <class A>
  EMBER_HD EMBER_FORCEINLINE void store(std::int64_t, A) const {}
  template <int V, class A>
  EMBER_HD EMBER_FORCEINLINE void store_vec(std::int64_t, const A (&)[V]) const {}
};

template <class A, int N>
struct AdjointSink {
  A v[N > 0 ? N : 1];
  template <int K, class G>
  EMBER_HD EMBER_FORCEINLINE void push(G g) {
    v[K] += static_cast<A>(g);
  }
};

/// The adjoints of V consecutive elements, one array per slot.
template <class A, int N, int V>
struct AdjointLanes {
  A v[N > 0 ? N : 1][V];
  template <int K, class G>
  EMBER_HD EMBER_FORCEINLINE void push_vec(const G (&g)[V]) {
    for (int k = 0; k < V; ++k) v[K][k] += static_cast<A>(g[k]);
  }
};

template <class A, class Fwd, class Seed, class... Outs>
struct BackwardPlan {
  static constexpr int N = static_cast<int>(sizeof...(Outs));
  static_assert(Fwd::num_leaves == N, "ember: backward slots do not match the expression's leaves");
  Fwd fwd;
  Seed seed;                      // d(loss)/d(root) at an element, from the root's value
  expr::PlanStrides out_strides;  // every output slot is dense in the expression's shape
  expr::Pack<Outs...> outs;
  int dst[N > 0 ? N : 1];  // slot that receives slot k's adjoint (k itself, an earlier one, or -1)

  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE void at(const Ix& ix) const {
    AdjointSink<A, N> sink;
    for (int k = 0; k < N; ++k) sink.v[k] = A(0);
    const auto t = fwd.trace(ix);
    const A g = seed.at(ix, static_cast<A>(t.y));
    fwd.template backprop<0>(t, static_cast<typename Fwd::acc_type>(g), sink);
    std::int64_t o;
    if constexpr (std::is_same_v<Ix, expr::LinearIndex>) {
      o = ix.i;
    } else {
      o = out_strides.offset(ix);
    }
    store_all(o, sink, std::make_integer_sequence<int, N>{});
  }
  /// V consecutive elements of the dense path (the CPU's SIMD blocks): the forward is traced
  /// for the whole block (every node's V values as one array), the seed is applied lane by lane
  /// (its operands loaded for the block first, a broadcast one once), the adjoints are pushed
  /// down as arrays, and each slot stores V values. Every step is a fixed-length loop over the
  /// lanes, which the compiler turns into SIMD.
  template <int V>
  EMBER_HD EMBER_FORCEINLINE void at_vec(std::int64_t base) const {
    using F = typename Fwd::acc_type;
    typename Fwd::template TraceVec<V> t;
    fwd.template trace_vec<V>(base, t);
    F g[V];
    if constexpr (requires(A(&u)[V]) { seed.template preload<V>(base, u); }) {
      A u[V];
      seed.template preload<V>(base, u);
      for (int k = 0; k < V; ++k) {
        g[k] = static_cast<F>(seed.from_preloaded(u[k], static_cast<A>(t.y[k])));
      }
    } else {
      for (int k = 0; k < V; ++k) {
        g[k] = static_cast<F>(seed.at(expr::LinearIndex{base + k}, static_cast<A>(t.y[k])));
      }
    }
    backprop_and_store<V>(t, g, base);
  }
  /// V consecutive elements along the innermost dimension of the strided path, vectorised the
  /// same way: a broadcast operand (a bias under an activation) steps by 0 there and keeps the
  /// block loops SIMD, where element by element the backward of gelu(x W + b) cost five times
  /// its forward. For seeds that load a block's upstream values (a materialised expression's).
  template <int V>
  requires requires(const Seed& s, A (&u)[V]) { s.template preload<V>(expr::RowBlock{}, u); }
  EMBER_HD EMBER_FORCEINLINE void at_vec(const expr::RowBlock& b) const {
    if (out_strides.inner() != 1) {  // the outputs are dense, but the layout may have permuted
      expr::CoordIndex ix = b.ix;
      const int last = out_strides.ndim - 1;
      for (int k = 0; k < V; ++k, ++ix.c[last]) at(ix);
      return;
    }
    using F = typename Fwd::acc_type;
    typename Fwd::template TraceVec<V> t;
    fwd.template trace_vec<V>(b, t);
    A u[V];
    seed.template preload<V>(b, u);
    F g[V];
    for (int k = 0; k < V; ++k) {
      g[k] = static_cast<F>(seed.from_preloaded(u[k], static_cast<A>(t.y[k])));
    }
    backprop_and_store<V>(t, g, out_strides.offset(b.ix));
  }

 private:
  template <int V>
  EMBER_HD EMBER_FORCEINLINE void backprop_and_store(const typename Fwd::template TraceVec<V>& t,
                                                     const typename Fwd::acc_type (&g)[V],
                                                     std::int64_t o) const {
    AdjointLanes<A, N, V> sink;
    for (int s = 0; s < N; ++s) {
      for (int k = 0; k < V; ++k) sink.v[s][k] = A(0);
    }
    fwd.template backprop_vec<0, V>(t, g, sink);
    store_vec_all<V>(o, sink.v, std::make_integer_sequence<int, N>{});
  }
  template <int K, int... J>
  EMBER_HD EMBER_FORCEINLINE A gathered(const AdjointSink<A, N>& s,
                                        std::integer_sequence<int, J...>) const {
    return (A(0) + ... + (dst[J] == K ? s.v[J] : A(0)));
  }
  template <int V, int... K>
  EMBER_HD EMBER_FORCEINLINE void store_vec_all(std::int64_t o, const A (&adj)[N > 0 ? N : 1][V],
                                                std::integer_sequence<int, K...>) const {
    (store_vec_slot<K, V>(o, adj), ...);  // member calls, not lambdas: those may stay out of line
  }
  template <int K, int V>
  EMBER_HD EMBER_FORCEINLINE void store_vec_slot(std::int64_t o,
                                                 const A (&adj)[N > 0 ? N : 1][V]) const {
    if (dst[K] != K) return;
    A v[V];
    for (int k = 0; k < V; ++k) v[k] = adj[K][k];
    for (int j = K + 1; j < N; ++j) {
      if (dst[j] == K) {
        for (int k = 0; k < V; ++k) v[k] += adj[j][k];
      }
    }
    expr::get<K>(outs).template store_vec<V>(o, v);
  }
  template <int... K>
  EMBER_HD EMBER_FORCEINLINE void store_all(std::int64_t o, const AdjointSink<A, N>& s,
                                            std::integer_sequence<int, K...>) const {
    ((dst[K] == K
          ? expr::get<K>(outs).store(o, gathered<K>(s, std::make_integer_sequence<int, N>{}))
          : void()),
     ...);
  }
};

}  // namespace ember::autograd
