// embedding on Tensors: a lookup of rows of a table, and the deterministic backward for the
// table.
//
//   embedding(weight [V, D], ids [...] int64) -> [..., D],  out[p, :] = weight[ids[p], :]
//
// ids outside [0, V) are an ember::Error (one small reduction checks them). Forward: one gather
// pass, one thread per output element; weight may be any strided view. With max_norm, the rows
// named are first renormalised in place (embedding_renorm_, PyTorch's), a thread per row.
//
// Backward (dweight = scatter-add of the output's gradient g at the ids) without atomics, so
// the same ids and gradient give the same bits every run, and the CPU and the GPU add in the
// same order:
//   1. order the positions p by id, stably (positions of one id stay increasing): a counting
//      sort on the CPU, CUB's radix sort (stable) of (id, p) pairs on the GPU;
//   2. find where each id's run starts (a prefix sum of the counts on the CPU, a binary search
//      in the sorted ids on the GPU);
//   3. dweight[v, d] = sum of g[p, d] over the positions p of id v in increasing p, in the
//      compute type (float for bf16/half), rounded once; 0 for ids that do not occur, and for
//      padding_idx when one is given (PyTorch's rule: that row is never trained). The sums are
//      added into a gradient the table already has (GPT-2's tied table: the LM head's), which
//      touches only the rows named, or into zeros.
// An id repeated very often is summed by one thread per column: correct, but serial.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/shape.hpp"
#include "../../exec/assign.hpp"
#include "../../exec/cpu_executor.hpp"
#include "../../exec/for_each.hpp"
#include "../../exec/generate.hpp"
#include "../../exec/launch_counter.hpp"
#include "../../exec/reduce.hpp"
#include "../../expr/math.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "indexing.hpp"
#if defined(EMBER_CUDA_KERNELS)
#include "embedding_cuda.cuh"
#endif

namespace ember::ops::inline EMBER_UNIT_KIND {

/// Output element i of embedding: weight[ids[i / D], i % D].
template <class T>
struct EmbeddingGather {
  const T* weight;
  std::int64_t ws0, ws1;    // weight's strides
  const std::int64_t* ids;  // dense
  T* out;                   // dense [M, D]
  std::int64_t D;

  EMBER_HD void operator()(std::int64_t i) const {
    const std::int64_t p = i / D, d = i - p * D;
    out[i] = weight[ids[p] * ws0 + d * ws1];
  }
};

/// Adds into dweight [V, D] the sum of g[p, d] over the positions p of each id (in increasing
/// p): element (k, d) of the sorted positions does row ids[order[k]]'s column d when k starts
/// that id's run, the other elements have nothing to do. The sum is rounded to T before it is
/// added, as adding a separately computed gradient would. Rows whose ids do not occur, and the
/// padding row, are not touched.
template <class T>
struct EmbeddingAddRuns {
  const T* g;                 // dense [M, D]
  const std::int64_t* ids;    // dense [M]
  const std::int32_t* order;  // positions sorted stably by id
  const std::int32_t* start;  // [V + 1]: where each id's run begins in `order`
  T* gw;                      // dense [V, D]
  std::int64_t D;
  std::int64_t padding;  // the row that gets no gradient, or -1

  EMBER_HD void operator()(std::int64_t i) const {
    using A = acc_t<T>;
    const std::int64_t k = i / D, d = i - k * D;
    const std::int64_t v = ids[order[k]];
    if (start[v] != k || v == padding) return;
    A s = A(0);
    for (std::int32_t j = start[v]; j < start[v + 1]; ++j) s += to_acc(g[order[j] * D + d]);
    T& out = gw[v * D + d];
    out = to_storage<T>(static_cast<A>(to_acc(out) + to_acc(to_storage<T>(s))));
  }
};

/// Row v of the table scaled in place to norm max_norm when v occurs in the ids (a nonempty run)
/// and its norm_type-norm exceeds max_norm: PyTorch's embedding_renorm_, scale
/// max_norm / (norm + 1e-7). One thread per row.
template <class T>
struct EmbeddingRenormRows {
  T* weight;
  std::int64_t ws0, ws1;      // weight's strides
  const std::int32_t* start;  // [V + 1], as EmbeddingSumRuns
  std::int64_t D;
  double max_norm, norm_type;  // norm_type: p > 0, or infinity for the largest magnitude

  EMBER_HD void operator()(std::int64_t v) const {
    if (start[v + 1] == start[v]) return;
    using A = acc_t<T>;
    T* row = weight + v * ws0;
    const A p = A(norm_type);
    A norm = A(0);
    for (std::int64_t d = 0; d < D; ++d) {
      const A a = math::fabs(to_acc(row[d * ws1]));
      if (norm_type == 2.0) {
        norm += a * a;
      } else if (norm_type == 1.0) {
        norm += a;
      } else if (p == math::infinity<A>()) {
        norm = a > norm ? a : norm;
      } else {
        norm += math::pow(a, p);
      }
    }
    if (norm_type == 2.0) {
      norm = math::sqrt(norm);
    } else if (norm_type != 1.0 && p != math::infinity<A>()) {
      norm = math::pow(norm, A(1) / p);
    }
    if (!(norm > A(max_norm))) return;
    const A scale = A(max_norm) / (norm + A(1e-7));
    for (std::int64_t d = 0; d < D; ++d) row[d * ws1] = to_storage<T>(to_acc(row[d * ws1]) * scale);
  }
};

/// Checks the operands of embedding (shapes, devices, the range of the ids).
template <FloatingElement T>
void check_embedding(const Tensor<T>& weight, const Tensor<std::int64_t>& ids) {
  EMBER_CHECK(weight.defined() && weight.rank() == 2,
              "ember: embedding: weight must be [V, D], got ",
              weight.defined() ? weight.shape().str() : std::string("undefined"));
  EMBER_CHECK(ids.defined() && ids.rank() < kMaxRank, "ember: embedding: ids of shape ",
              ids.defined() ? ids.shape().str() : std::string("undefined"), " (at most rank ",
              kMaxRank - 1, ")");
  EMBER_CHECK(weight.device() == ids.device(), "ember: embedding: weight is on ",
              weight.device().str(), " but ids are on ", ids.device().str());
  // The backward's sort keeps ids and positions in int32.
  EMBER_CHECK(ids.numel() <= std::numeric_limits<std::int32_t>::max() &&
                  weight.size(0) <= std::numeric_limits<std::int32_t>::max(),
              "ember: embedding: ", ids.numel(), " ids into ", weight.size(0),
              " rows: at most 2^31 - 1 of either");
  const std::int64_t V = weight.size(0);
  const std::optional<std::int64_t> bad = index_outside(ids, V);
  if (!bad) return;
  fail("ember: embedding: id ", *bad, " is outside [0, ", V, ") (weight ", weight.shape().str(),
       ", ids ", ids.shape().str(), ")");
}

/// padding_idx as a row of a table of V rows: PyTorch's range [-V, V), negatives counting from
/// the end; -1 for none.
inline std::int64_t padding_row(std::optional<std::int64_t> padding_idx, std::int64_t V) {
  if (!padding_idx) return -1;
  const std::int64_t p = *padding_idx;
  EMBER_CHECK(p >= -V && p < V, "ember: embedding: padding_idx ", p, " is outside [", -V, ", ", V,
              ") for a table of ", V, " rows");
  return p < 0 ? p + V : p;
}

/// The positions 0..M-1 ordered stably by id, and where each id's run starts ([V + 1]):
/// a counting sort on the CPU, CUB's radix sort on the GPU (embedding_cuda.cuh).
struct EmbeddingRuns {
  Tensor<std::int32_t> order, start;
};
/// embedding_runs' work for exec::launch.
template <class = void>  // compiled only where used (docs/design.md)
struct EmbeddingRunsSort {
  const std::int64_t* ids;
  std::int64_t M, V;
  EmbeddingRuns& out;

  void on_host() const {
    out = {empty<std::int32_t>(Shape{M}), empty<std::int32_t>(Shape{V + 1})};
    std::int32_t* start = out.start.data();
    std::int32_t* order = out.order.data();
    // One serial pass: counts, their prefix sum, then each position into its id's next slot.
    exec::count_launch();
    std::fill(start, start + V + 1, 0);
    for (std::int64_t p = 0; p < M; ++p) ++start[ids[p] + 1];
    for (std::int64_t v = 0; v < V; ++v) start[v + 1] += start[v];
    std::vector<std::int32_t> next(start, start + V);
    for (std::int64_t p = 0; p < M; ++p)
      order[next[static_cast<std::size_t>(ids[p])]++] = static_cast<std::int32_t>(p);
  }
#if defined(EMBER_CUDA_KERNELS)
  void on_cuda(int device) const { gpu::sort_runs(ids, M, V, device, out.order, out.start); }
#endif
};
template <class = void>  // compiled only where called (docs/design.md)
EmbeddingRuns embedding_runs(const Tensor<std::int64_t>& ids, std::int64_t V) {
  EmbeddingRuns r;
  exec::launch(EmbeddingRunsSort<>{ids.data(), ids.numel(), V, r}, ids.device());
  return r;
}

/// Adds the gradient of embedding's weight from the output's gradient g [..., D] and the ids
/// (already checked by the forward) into `gw` [V, D] (contiguous): only the rows the ids name
/// are touched, never row `padding` (from padding_row; -1: none). Deterministic: see the top of
/// this header. Bumps gw's version.
template <FloatingElement T>
void embedding_backward_add(const Tensor<T>& gw, const Tensor<T>& g,
                            const Tensor<std::int64_t>& ids, std::int64_t padding = -1) {
  const std::int64_t M = ids.numel(), V = gw.size(0), D = gw.size(1);
  EMBER_CHECK(g.numel() == M * D && g.rank() >= 1 && g.size(-1) == D,
              "ember: embedding: a gradient of shape ", g.shape().str(), " for ids of shape ",
              ids.shape().str(), " and ", D, " features");
  EMBER_CHECK(gw.is_contiguous(), "ember: internal: embedding's weight gradient is not dense");
  gw.storage()->bump_version();
  if (M == 0 || D == 0) return;
  const Tensor<T> gd = g.contiguous();
  const Tensor<std::int64_t> id = ids.contiguous();
  const EmbeddingRuns r = embedding_runs(id, V);
  const EmbeddingAddRuns<T> f{gd.data(), id.data(), r.order.data(), r.start.data(),
                              gw.data(), D,         padding};
  exec::for_each_index<EmbeddingAddRuns<T>>(f, M * D, 1, g.device());
}

/// The gradient of embedding's weight [V, D] from the output's gradient g [..., D] and the ids:
/// zeros, with embedding_backward_add's sums added.
template <FloatingElement T>
Tensor<T> embedding_backward(const Tensor<T>& g, const Tensor<std::int64_t>& ids, std::int64_t V,
                             std::int64_t D, std::int64_t padding = -1) {
  Tensor<T> gw = zeros<T>(Shape{V, D}, g.device());
  embedding_backward_add<T>(gw, g, ids, padding);
  return gw;
}

/// PyTorch's embedding_renorm_: every row of weight [V, D] that the ids name and whose
/// norm_type-norm exceeds max_norm is scaled in place to that norm (max_norm / (norm + 1e-7)),
/// under no gradient. The ids are checked first. Bumps weight's version: a recorded op that
/// saved the table before this and reads it in its backward throws there, as in PyTorch.
template <FloatingElement T>
void embedding_renorm_(const Tensor<T>& weight, const Tensor<std::int64_t>& ids, double max_norm,
                       double norm_type = 2.0) {
  check_embedding<T>(weight, ids);
  EMBER_CHECK(max_norm >= 0 && norm_type > 0, "ember: embedding: max_norm ", max_norm,
              " and norm_type ", norm_type, ": max_norm must be at least 0, norm_type above 0");
  const std::int64_t V = weight.size(0), D = weight.size(1);
  weight.storage()->bump_version();
  if (ids.numel() == 0 || V == 0 || D == 0) return;
  const EmbeddingRuns r = embedding_runs(ids.contiguous(), V);
  const EmbeddingRenormRows<T> f{
      weight.data(), weight.stride(0), weight.stride(1), r.start.data(), D, max_norm, norm_type};
  exec::for_each_index<EmbeddingRenormRows<T>>(f, V, D, weight.device());
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// Rows `ids` of `weight` (see the top of this header): shape ids.shape() + [D]. padding_idx
/// (in [-V, V)) changes only the backward: that row gets no gradient. (Its value is whatever the
/// table holds there; nn::Embedding starts it at zeros, as PyTorch.)
///
/// max_norm (PyTorch's): the rows the ids name are first scaled in place to at most that
/// norm_type-norm (ops::embedding_renorm_): this modifies `weight`.
template <FloatingElement T>
Tensor<T> embedding(const Tensor<T>& weight, const Tensor<std::int64_t>& ids,
                    std::optional<std::int64_t> padding_idx = std::nullopt,
                    std::optional<double> max_norm = std::nullopt, double norm_type = 2.0) {
  if (max_norm) {
    ops::embedding_renorm_<T>(weight, ids, *max_norm, norm_type);  // checks the ids too
  } else {
    ops::check_embedding<T>(weight, ids);
  }
  (void)ops::padding_row(padding_idx, weight.size(0));  // checked here, used by the backward
  const std::int64_t D = weight.size(1);
  Shape s = ids.shape();
  s.push_back(D);
  Tensor<T> out = empty<T>(s, weight.device());
  const Tensor<std::int64_t> flat = ids.contiguous();
  const ops::EmbeddingGather<T> f{weight.data(), weight.stride(0), weight.stride(1),
                                  flat.data(),   out.data(),       D};
  exec::for_each_index<ops::EmbeddingGather<T>>(f, out.numel(), 1, weight.device());
  return out;
}
}  // namespace ember::inline EMBER_UNIT_KIND
