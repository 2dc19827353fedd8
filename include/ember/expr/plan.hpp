// The evaluation protocol shared by every expression node.
//
// An expression (what to compute) is turned into a plan (how to compute one element) at
// assignment. A plan is plain data, copied by value into a CUDA kernel or used by the CPU
// loop, and answers three questions for the executor (where it runs):
//   at(LinearIndex)       element i when every operand is dense and unbroadcast;
//   at(CoordIndex)        element at collapsed coordinates (broadcast or strided operands);
//   at_vec<V>(base, out)  V consecutive elements from `base` on the dense path.
// Leaves are visited twice, in the order of the node's leaves() (expr/leaves.hpp): once by
// for_each_leaf (so the executor can see every operand's layout and collapse the iteration
// space), then by plan (each leaf takes its collapsed strides from the PlanBuilder).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../core/shape.hpp"

namespace ember {
class Storage;
}

namespace ember::expr {

struct LinearIndex {
  std::int64_t i;
};

struct CoordIndex {
  std::int64_t c[kMaxRank];
};

/// V consecutive elements along the innermost iteration dimension, starting at coordinates
/// `ix` (the CPU's strided path): each operand advances by its own innermost stride, which for
/// broadcast operands is 0 and for dense ones 1, so the block loops still vectorise.
struct RowBlock {
  CoordIndex ix;
};

/// V consecutive elements moved as one aligned access: in device code one packed load or store
/// (16 bytes, LDG.128/STG.128, for 4 floats or 8 bf16 values); the executor checked that every
/// pointer is aligned to V elements before it took the dense path. The host's dense loops use
/// plain element loops instead, which the compiler vectorises without the staging copy.
template <int V, class T>
EMBER_HD EMBER_FORCEINLINE void packed_load(const T* p, T (&out)[V]) {
  struct alignas(sizeof(T) * V) Pack {
    T v[V];
  };
  const Pack pack = *reinterpret_cast<const Pack*>(p);
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 0; k < V; ++k) out[k] = pack.v[k];
}
template <int V, class T>
EMBER_HD EMBER_FORCEINLINE void packed_store(T* p, const T (&in)[V]) {
  struct alignas(sizeof(T) * V) Pack {
    T v[V];
  };
  Pack pack;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int k = 0; k < V; ++k) pack.v[k] = in[k];
  *reinterpret_cast<Pack*>(p) = pack;
}

/// What the executor needs to know about one leaf before planning.
struct LeafInfo {
  Shape shape;
  Strides strides;             // in elements
  const void* data = nullptr;  // element 0 (nullptr for generated leaves)
  const Storage* storage = nullptr;
  std::size_t element_size = 0;
  bool has_device = true;
  Device device;
};

/// Every leaf of an expression, in visiting order.
using LeafInfos = std::vector<LeafInfo>;

/// The one visitor every walk over leaves uses: a node type's for_each_leaf is then compiled
/// once, where a lambda per caller compiled it (and every node below it) once per caller.
struct LeafCollector {
  LeafInfos& leaves;
  void operator()(const LeafInfo& leaf) const { leaves.push_back(leaf); }
};

/// Hands each leaf its strides in the collapsed iteration space, in visiting order.
class PlanBuilder {
 public:
  PlanBuilder(int ndim, std::vector<Strides> leaf_strides)
      : ndim_(ndim), strides_(std::move(leaf_strides)) {}
  int ndim() const { return ndim_; }
  const Strides& next() { return strides_[next_++]; }

 private:
  int ndim_;
  std::vector<Strides> strides_;
  std::size_t next_ = 0;
};

/// Strides of one operand in the collapsed iteration space, as plain data for kernels.
struct PlanStrides {
  std::int64_t s[kMaxRank] = {};
  int ndim = 0;

  PlanStrides() = default;
  PlanStrides(const Strides& strides, int n) : ndim(n) {
    for (int d = 0; d < n; ++d) s[d] = strides[d];
  }
  /// The offset of element k of a block: linear (dense path) or along the innermost dimension.
  EMBER_HD EMBER_FORCEINLINE std::int64_t inner() const { return ndim > 0 ? s[ndim - 1] : 0; }

  EMBER_HD EMBER_FORCEINLINE std::int64_t offset(const CoordIndex& ix) const {
    std::int64_t off = 0;
#if defined(__CUDACC__)
#pragma unroll
#endif
    for (int d = 0; d < kMaxRank; ++d) {
      if (d < ndim) off += ix.c[d] * s[d];
    }
    return off;
  }
};

}  // namespace ember::expr
