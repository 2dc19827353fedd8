// Generated: an expression whose element i (row-major) is g(i): iota, linspace, Philox noise.
// Factories materialise these on any device with the same executor as every expression.
#pragma once

#include <cstdint>
#include <tuple>

#include "../core/device.hpp"
#include "../core/dtype.hpp"
#include "../core/philox.hpp"
#include "math.hpp"
#include "plan.hpp"

namespace ember::expr {

/// Elements a generator's block draw produces at once (see GeneratedPlan::elements).
inline constexpr int kGenBlock = 4;

/// A generator that can also draw elements first .. first + kGenBlock - 1 at once (first a
/// multiple of kGenBlock), with the values of drawing them one by one.
template <class Gen>
concept BlockGenerator = requires(const Gen& g, float (&four)[kGenBlock]) {
  g.block(std::int64_t{}, four);
};

template <class Gen>
struct GeneratedPlan {
  using acc_type = decltype(Gen{}(std::int64_t{}));
  Gen gen;
  PlanStrides strides;
  EMBER_HD EMBER_FORCEINLINE acc_type at(LinearIndex ix) const { return gen(ix.i); }
  EMBER_HD EMBER_FORCEINLINE acc_type at(const CoordIndex& ix) const {
    return gen(strides.offset(ix));
  }
  template <int V>
  EMBER_HD EMBER_FORCEINLINE void at_vec(std::int64_t base, acc_type (&out)[V]) const {
    elements<V>(base, 1, out);
  }
  template <int V>
  EMBER_HD EMBER_FORCEINLINE void at_vec(const RowBlock& b, acc_type (&out)[V]) const {
    elements<V>(strides.offset(b.ix), strides.inner(), out);
  }
  // Elements base, base + s, ...: a generator with whole-block draws (BlockGenerator: Philox
  // gives four elements per evaluation) serves runs of consecutive, block-aligned elements a
  // block at a time, with the values its per-element draw gives.
  template <int V>
  EMBER_HD EMBER_FORCEINLINE void elements(std::int64_t base, std::int64_t s,
                                           acc_type (&out)[V]) const {
    if constexpr (V % kGenBlock == 0 && BlockGenerator<Gen>) {
      if (s == 1 && base % kGenBlock == 0) {
        for (int k = 0; k < V; k += kGenBlock) {
          acc_type four[kGenBlock];
          gen.block(base + k, four);
          for (int w = 0; w < kGenBlock; ++w) out[k + w] = four[w];
        }
        return;
      }
    }
    for (int k = 0; k < V; ++k) out[k] = gen(base + k * s);
  }
  // ---- reverse mode: a generated operand is a leaf (it has a slot) with no gradient ----
  static constexpr int num_leaves = 1;
  struct Trace {
    acc_type y;
  };
  template <class Ix>
  EMBER_HD EMBER_FORCEINLINE Trace trace(const Ix& ix) const {
    return Trace{at(ix)};
  }
  template <int Base, class Sink>
  EMBER_HD EMBER_FORCEINLINE void backprop(const Trace&, acc_type, Sink&) const {}
  template <int V>
  struct TraceVec {
    acc_type y[V];
  };
  template <int V, class Block>
  EMBER_HD EMBER_FORCEINLINE void trace_vec(const Block& base, TraceVec<V>& t) const {
    at_vec<V>(base, t.y);
  }
  template <int Base, int V, class Sink>
  EMBER_HD EMBER_FORCEINLINE void backprop_vec(const TraceVec<V>&, const acc_type (&)[V],
                                               Sink&) const {}
};

template <Storable T, class Gen>
class Generated {
 public:
  using value_type = T;
  using plan_type = GeneratedPlan<Gen>;
  static constexpr std::size_t max_element_size = 0;  // reads no memory
  static constexpr bool is_ember_expression = true;
  static constexpr bool is_scalar_node = false;

  Generated(Shape shape, Device device, Gen gen) : shape_(shape), device_(device), gen_(gen) {}
  const Shape& shape() const { return shape_; }
  Device device() const { return device_; }

  std::tuple<const Generated&> leaves() const { return {*this}; }
  template <class F>
  void for_each_leaf(F&& f) const {
    LeafInfo info;
    info.shape = shape_;
    info.strides = contiguous_strides(shape_);
    info.device = device_;
    f(info);
  }
  plan_type plan(PlanBuilder& b) const { return plan_type{gen_, PlanStrides(b.next(), b.ndim())}; }

 private:
  Shape shape_;
  Device device_;
  Gen gen_;
};

/// start + i * step, computed in double and rounded once.
struct ArangeGen {
  double start = 0, step = 1;
  EMBER_HD double operator()(std::int64_t i) const {
    return math::fma(static_cast<double>(i), step, start);
  }
};

/// n points from start to end inclusive; the second half counts back from `end` so both
/// ends are exact.
struct LinspaceGen {
  double start = 0, end = 0, step = 0;
  std::int64_t n = 0;
  EMBER_HD double operator()(std::int64_t i) const {
    return 2 * i < n ? math::fma(step, static_cast<double>(i), start)
                     : math::fma(-step, static_cast<double>(n - 1 - i), end);
  }
};

// Generators use explicit fma so nvcc's contraction cannot make the GPU differ from the CPU.

/// Uniform in [low, high) from Philox (seed, offset, element index).
struct UniformGen {
  std::uint64_t seed = 0, offset = 0;
  float low = 0, high = 1;
  EMBER_HD float operator()(std::int64_t i) const {
    const float u = philox_uniform(seed, offset, static_cast<std::uint64_t>(i));
    return math::fma(high - low, u, low);
  }
  /// Elements first .. first + 3 (first a multiple of 4): one Philox block.
  EMBER_HD void block(std::int64_t first, float (&out)[kGenBlock]) const {
    philox_uniform_block(seed, offset, static_cast<std::uint64_t>(first) / 4, out);
    for (float& u : out) u = math::fma(high - low, u, low);
  }
};

/// Normal(mean, std) from Philox (seed, offset, element index).
struct NormalGen {
  std::uint64_t seed = 0, offset = 0;
  float mean = 0, stddev = 1;
  EMBER_HD float operator()(std::int64_t i) const {
    return math::fma(stddev, philox_normal(seed, offset, static_cast<std::uint64_t>(i)), mean);
  }
  /// Elements first .. first + 3 (first a multiple of 4): one Philox block, two Box-Muller pairs.
  EMBER_HD void block(std::int64_t first, float (&out)[kGenBlock]) const {
    philox_normal_block(seed, offset, static_cast<std::uint64_t>(first) / 4, out);
    for (float& z : out) z = math::fma(stddev, z, mean);
  }
};

}  // namespace ember::expr
