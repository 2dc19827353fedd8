// Seed rules: d(loss)/d(root) at each element of a fused expression, the start of its backward.
//
// A fused node is an elementwise expression e, optionally followed by one reduction r = R(e).
// Its backward launch needs, at every element of e, the adjoint of e there:
//   materialised e:  g                          (the upstream gradient, same shape as e)
//   sum / mean:      g * scale                  (g broadcast from the kept shape)
//   max / min:       g * [e == r] / count       (ties share the gradient evenly, as PyTorch)
//   logsumexp:       g * exp(e - r)
//   norm p:          g * sign(e) |e|^(p-1) / r^(p-1)   (0 where r == 0; p = inf as max |e|)
//   var:             g * 2 (e - mean) / (n - correction)
//   prod:            g * prod(others): nz / e with no zero in the slice, nz at the one zero, else 0
// Each rule is a host object (kept by the tape node) that computes, at backward time, the
// kept-shape tensors its seed reads (operands(e)), and the device-side seed plan (seed(...)):
// a small struct evaluated at every element with the traced value of e, inside the same launch.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "../core/dtype.hpp"
#include "../exec/reduce.hpp"
#include "../expr/leaf.hpp"
#include "../expr/math.hpp"
#include "../expr/operators.hpp"
#include "../memory/storage.hpp"

namespace ember::autograd {

/// A tensor the seed reads: the upstream gradient, or a reduction's result or statistics, in
/// the reduction's kept shape (broadcast over the reduced axes), or undefined (null).
template <Storable X>
struct SeedOperand {
  const X* data;
  expr::PlanStrides strides;
  // On the dense path: 1, or 0 for an operand with one element broadcast over everything (the
  // gradient of a full reduction such as the loss), which keeps that path dense.
  std::int64_t step;
  EMBER_HD EMBER_FORCEINLINE acc_t<X> at(expr::LinearIndex ix) const {
    return to_acc(data[ix.i * step]);
  }
  EMBER_HD EMBER_FORCEINLINE acc_t<X> at(const expr::CoordIndex& ix) const {
    return to_acc(data[strides.offset(ix)]);
  }
  /// V consecutive elements of the dense path; the branch is taken once per block.
  template <class A, int V>
  EMBER_HD EMBER_FORCEINLINE void load(std::int64_t base, A (&out)[V]) const {
#if defined(EMBER_DEVICE_CODE)
    if (!data) {  // the implicit 1 of `loss.backward()` (see upstream below)
      for (int k = 0; k < V; ++k) out[k] = A(1);
      return;
    }
#endif
    if (step == 0) {
      const A v = static_cast<A>(to_acc(data[0]));
      for (int k = 0; k < V; ++k) out[k] = v;
    } else {
#if defined(EMBER_DEVICE_CODE)
      X p[V];
      expr::packed_load<V>(data + base, p);
      for (int k = 0; k < V; ++k) out[k] = static_cast<A>(to_acc(p[k]));
#else
      for (int k = 0; k < V; ++k) out[k] = static_cast<A>(to_acc(data[base + k]));
#endif
    }
  }
  /// V consecutive elements along the innermost dimension of the strided path.
  template <class A, int V>
  EMBER_HD EMBER_FORCEINLINE void load(const expr::RowBlock& b, A (&out)[V]) const {
#if defined(EMBER_DEVICE_CODE)
    if (!data) {
      for (int k = 0; k < V; ++k) out[k] = A(1);
      return;
    }
#endif
    const X* p = data + strides.offset(b.ix);
    const std::int64_t s = strides.inner();
    if (s == 0) {
      const A v = static_cast<A>(to_acc(*p));
      for (int k = 0; k < V; ++k) out[k] = v;
    } else if (s == 1) {
      for (int k = 0; k < V; ++k) out[k] = static_cast<A>(to_acc(p[k]));
    } else {
      for (int k = 0; k < V; ++k) out[k] = static_cast<A>(to_acc(p[k * s]));
    }
  }
};

/// The upstream gradient at an element. An implicit 1 (the seed of `loss.backward()`, never
/// materialised) is a null pointer in device code, and a pointer to a constant 1 on the host,
/// where a branch-free read keeps the loop vectorisable.
template <class A, Storable G>
EMBER_HD EMBER_FORCEINLINE A upstream(const SeedOperand<G>& up, const auto& ix) {
#if defined(EMBER_DEVICE_CODE)
  return up.data ? static_cast<A>(up.at(ix)) : A(1);
#else
  return static_cast<A>(up.at(ix));
#endif
}

// ---- device-side seeds: at(ix, y) with y the value of the expression at ix ----

template <class A, Storable G>
struct ScaledSeed {
  SeedOperand<G> up;
  A scale;
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE A at(const Ix& ix, A) const {
    return upstream<A>(up, ix) * scale;
  }
  /// A block's upstream values (V elements, dense or a row block), loaded before the loop.
  template <int V, class Block>
  EMBER_HD EMBER_FORCEINLINE void preload(const Block& base, A (&u)[V]) const {
    up.template load<A, V>(base, u);
  }
  EMBER_HD EMBER_FORCEINLINE A from_preloaded(A u, A) const { return u * scale; }
};

template <class A, Storable G, Storable V>
struct ExtremumSeed {
  SeedOperand<G> up;
  SeedOperand<V> r;      // the result, in the stored type
  SeedOperand<A> count;  // elements equal to the result, per slice
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE A at(const Ix& ix, A y) const {
    // The result was rounded to V once; rounding is monotonic, so the winners are the elements
    // whose rounded value equals it (NaN wins when the result is NaN).
    const A yr = to_acc(to_storage<V>(y));
    const A m = static_cast<A>(r.at(ix));
    const bool hit = yr == m || (math::isnan(yr) && math::isnan(m));
    return hit ? upstream<A>(up, ix) / count.at(ix) : A(0);
  }
};

template <class A, Storable G>
struct LogSumExpSeed {
  SeedOperand<G> up;
  SeedOperand<A> r;  // the result before rounding to the stored type
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE A at(const Ix& ix, A y) const {
    const A m = static_cast<A>(r.at(ix));
    if (m == -math::infinity<A>()) return A(0);  // every element is -inf: nothing to push
    return upstream<A>(up, ix) * math::exp(y - m);
  }
};

template <class A, Storable G, Storable V>
struct NormSeed {
  SeedOperand<G> up;
  SeedOperand<A> r;      // the result before rounding to the stored type
  SeedOperand<A> count;  // p = inf only: elements with |e| equal to the norm
  A p;
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE A at(const Ix& ix, A y) const {
    const A n = static_cast<A>(r.at(ix));
    const A s = y > A(0) ? A(1) : (y < A(0) ? A(-1) : A(0));
    A d;
    if (p == A(1)) {
      d = s;
    } else if (n == A(0)) {
      d = A(0);  // the subgradient at 0, as PyTorch
    } else if (p == A(2)) {
      d = y / n;
    } else if (p == math::infinity<A>()) {
      // The winners: |e| equal to the result once both are rounded to V (see tie_count).
      const bool hit = to_acc(to_storage<V>(math::fabs(y))) == to_acc(to_storage<V>(n));
      d = hit ? s / count.at(ix) : A(0);
    } else {
      d = s * math::pow(math::fabs(y) / n, p - A(1));
    }
    return upstream<A>(up, ix) * d;
  }
};

template <class A, Storable G>
struct VarianceSeed {
  SeedOperand<G> up;
  SeedOperand<A> mean;
  A factor;  // 2 / (n - correction)
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE A at(const Ix& ix, A y) const {
    return upstream<A>(up, ix) * factor * (y - mean.at(ix));
  }
};

template <class A, Storable G>
struct ProdSeed {
  SeedOperand<G> up;
  SeedOperand<A> zeros;    // zero elements per slice
  SeedOperand<A> nonzero;  // product of the non-zero elements per slice
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE A at(const Ix& ix, A y) const {
    const A z = zeros.at(ix), p = nonzero.at(ix);
    A d;
    if (z == A(0)) {
      d = p / y;
    } else if (z == A(1)) {
      d = y == A(0) ? p : A(0);
    } else {
      d = A(0);
    }
    return upstream<A>(up, ix) * d;
  }
};

// ---- host-side rules ----

/// Shape of a reduction's result with the reduced axes kept as size 1 (all axes when empty).
inline Shape kept_shape(const Shape& s, const Dims& axes, const char* name) {
  Shape k = s;
  if (s.rank() == 0) return k;
  if (axes.rank() == 0) {
    for (int d = 0; d < k.rank(); ++d) k[d] = 1;
  } else {
    for (int i = 0; i < axes.rank(); ++i) k[normalize_axis(axes[i], s.rank(), name)] = 1;
  }
  return k;
}

// The host rules evaluate (operands() reduces), so they live in the translation unit's executor
// namespace (core/config.hpp), as the tape nodes that hold them do.
inline namespace EMBER_UNIT_KIND {

/// The plain rules: the root itself (scale 1), sum, mean (scale 1/n).
struct ScaledRule {
  const char* name;  // "" for a materialised expression
  double scale = 1.0;
  template <class E>
  std::tuple<> operands(const E&) const {
    return {};
  }
  template <class A, Storable G>
  ScaledSeed<A, G> seed(SeedOperand<G> up) const {
    return {up, static_cast<A>(scale)};
  }
  void saved(std::vector<const Storage*>&) const {}
};

// (Not `detail`: a namespace of that name inside this inline namespace would make every
// `detail::` in ember::autograd ambiguous once this header is included.)
namespace rule_detail {
// Sum over `axes` (kept) of `x`, in A.
template <class A, class X>
Tensor<A> kept_sum(const X& x, const Dims& axes, const char* name) {
  return exec::reduce_expression<A>(expr::as_node(x), reduce::Bound<reduce::Sum<A>>{}, name, axes,
                                    true, true);
}
// The number of elements of each slice of `x` equal to `r` (NaN equal to NaN).
template <class A, class X, Storable V>
Tensor<A> tie_count(const X& x, const Tensor<V>& r, const Dims& axes, const char* name) {
  const expr::Leaf<V> rl(r);
  return kept_sum<A>(ember::cast<A>(ember::logical_or(
                         x == rl, ember::logical_and(ember::isnan(x), ember::isnan(rl)))),
                     axes, name);
}
}  // namespace rule_detail

template <Storable V>
struct ExtremumRule {
  const char* name;  // "max" or "min"
  Tensor<V> r;       // the result, in the kept shape
  Dims axes;
  template <class E>
  auto operands(const E& e) const {
    using A = acc_t<V>;
    return std::tuple{r, rule_detail::tie_count<A>(ember::cast<V>(e), r, axes, name)};
  }
  template <class A, Storable G>
  ExtremumSeed<A, G, V> seed(SeedOperand<G> up, SeedOperand<V> rp, SeedOperand<A> count) const {
    return {up, rp, count};
  }
  void saved(std::vector<const Storage*>& out) const { out.push_back(r.storage().get()); }
};

// logsumexp and norm keep their result in the compute type: for bf16 and half, the rounded
// result would cost the gradient the type's precision a second time.
template <Storable V>
struct LogSumExpRule {
  static constexpr const char* name = "logsumexp";
  Tensor<acc_t<V>> r;
  template <class E>
  std::tuple<Tensor<acc_t<V>>> operands(const E&) const {
    return {r};
  }
  template <class A, Storable G>
  LogSumExpSeed<A, G> seed(SeedOperand<G> up, SeedOperand<A> rp) const {
    return {up, rp};
  }
  void saved(std::vector<const Storage*>& out) const { out.push_back(r.storage().get()); }
};

template <Storable V>
struct NormRule {
  static constexpr const char* name = "norm";
  Tensor<acc_t<V>> r;
  Dims axes;
  double p;
  template <class E>
  auto operands(const E& e) const {
    using A = acc_t<V>;
    Tensor<A> count;  // undefined (a null plan) unless p = inf
    if (p == std::numeric_limits<double>::infinity()) {
      count = rule_detail::tie_count<A>(ember::cast<V>(ember::abs(e)), Tensor<V>(ember::cast<V>(r)),
                                        axes, name);
    }
    return std::tuple{r, count};
  }
  template <class A, Storable G>
  NormSeed<A, G, V> seed(SeedOperand<G> up, SeedOperand<A> rp, SeedOperand<A> count) const {
    return {up, rp, count, static_cast<A>(p)};
  }
  void saved(std::vector<const Storage*>& out) const { out.push_back(r.storage().get()); }
};

template <Storable V>
struct VarianceRule {
  static constexpr const char* name = "var";
  Dims axes;
  double factor;  // 2 / (n - correction)
  template <class E>
  auto operands(const E& e) const {
    using A = acc_t<V>;
    return std::tuple{
        exec::reduce_expression<A>(e, reduce::Bound<reduce::Mean<A>>{}, name, axes, true, true)};
  }
  template <class A, Storable G>
  VarianceSeed<A, G> seed(SeedOperand<G> up, SeedOperand<A> mean) const {
    return {up, mean, static_cast<A>(factor)};
  }
  void saved(std::vector<const Storage*>&) const {}
};

template <Storable V>
struct ProdRule {
  static constexpr const char* name = "prod";
  Dims axes;
  template <class E>
  auto operands(const E& e) const {
    using A = acc_t<V>;
    Tensor<A> zeros = rule_detail::kept_sum<A>(ember::cast<A>(e == 0.0), axes, name);
    Tensor<A> nonzero = exec::reduce_expression<A>(
        ember::where(e == 0.0, 1.0, e), reduce::Bound<reduce::Prod<A>>{}, name, axes, true, true);
    return std::tuple{zeros, nonzero};
  }
  template <class A, Storable G>
  ProdSeed<A, G> seed(SeedOperand<G> up, SeedOperand<A> zeros, SeedOperand<A> nonzero) const {
    return {up, zeros, nonzero};
  }
  void saved(std::vector<const Storage*>&) const {}
};

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::autograd
