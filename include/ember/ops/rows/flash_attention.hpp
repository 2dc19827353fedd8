// Attention on the CPU without the score matrix (FlashAttention 2's algorithm): keys and values
// in tiles, an online softmax, memory O(Lq + Lk) per task instead of the Lq x Lk scores.
//
// Forward: one task per (batch entry, tile of 32 queries). The tile's queries, scaled and
// transposed (E x 32, so that the 32 queries are two vectors), meet the keys a tile at a time:
// S^T = K Q^T (keys x queries), masked, then the running max and sum of each query (vectors of
// 32), the probabilities P^T = exp(S^T - max), and O^T += V^T P^T with O^T rescaled when the max
// grows. The output O / sum and the logsumexp (max + log sum) are written once. The products run
// on tile_product.hpp's register-blocked kernel; causal tiles entirely above the diagonal are
// never visited. bf16 with head sizes that are multiples of 32 runs the forward on bf16 products
// instead where the CPU has them, AMX's tiles or else AVX512-BF16's dot products
// (flash_forward_task_bf16: the same steps with the queries as rows).
// Backward: one task per batch entry: for each tile of keys, the query tiles that may see it
// recompute P = exp(S - logsumexp) and give dV += P^T dO, dP = dO V^T, dS = P (dP - D) with
// D = rowsum(dO o O), dK += dS^T Q scale, dQ += dS K scale (dQ of the whole entry in a float
// buffer, which is why a task is a whole entry). bf16 on AMX or AVX512-BF16 runs the same steps
// with the five products in bf16 (flash_backward_task_bf16).
// Dropout draws the uniforms of the unfused path (element (b, i, j) of the scores is Philox
// index (b Lq + i) Lk + j), so both paths drop the same elements; the backward draws them again.
// A query whose every key is masked gives zeros (logsumexp -inf), as the unfused path does.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/philox.hpp"
#include "../../exec/cpu_executor.hpp"
#include "../../exec/launch_counter.hpp"
#include "../../expr/math.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "../dropout.hpp"
#include "../matmul/amx.hpp"
#include "../matmul/bf16_pairs.hpp"
#include "../matmul/tile_product.hpp"
#include "layer_norm_rows.hpp"

namespace ember::ops::inline EMBER_UNIT_KIND {

/// Queries a task holds (two 512-bit vectors of floats), and keys per tile in each direction.
inline constexpr std::int64_t kFlashQueryTile = 32;
inline constexpr std::int64_t kFlashKeyTile = 128;
inline constexpr std::int64_t kFlashBackwardKeyTile = 64;

/// e^x for the softmax's x <= 0 (differences from a running maximum or from the log-sum-exp):
/// in float fast::exp_nonpositive (exp's bits, but 0 from -87 down, without exp's overflow
/// clamp and subnormal scaling), in double math::exp.
template <class A>
EMBER_FORCEINLINE A softmax_exp(A x) {
  if constexpr (std::is_same_v<A, float>) {
    return fast::exp_nonpositive(x);
  } else {
    return math::exp(x);
  }
}

/// The element offset of every batch entry of an operand whose batch extents `sizes` (strides
/// `strides`) broadcast to `batch`, the entries in row-major order.
inline std::vector<std::int64_t> batch_offsets(const Shape& sizes, const Shape& strides,
                                               const Shape& batch) {
  const int lead = batch.rank() - sizes.rank();
  std::vector<std::int64_t> out(static_cast<std::size_t>(batch.numel()), 0);
  for (std::size_t b = 0; b < out.size(); ++b) {
    std::int64_t rest = static_cast<std::int64_t>(b), off = 0;
    for (int d = batch.rank() - 1; d >= lead; --d) {
      const std::int64_t i = rest % batch[d];
      rest /= batch[d];
      if (sizes[d - lead] != 1) off += i * strides[d - lead];
    }
    out[b] = off;
  }
  return out;
}

/// Asks for the cache lines of a row of `cols` elements ahead of reading it: an entry's rows may
/// lie a page or more apart (heads after rows), where the hardware's prefetcher stops.
template <class T>
inline void prefetch_row(const T* row, std::int64_t cols) {
  const auto* bytes = reinterpret_cast<const char*>(row);
  for (std::int64_t b = 0; b < cols * static_cast<std::int64_t>(sizeof(T)); b += 64) {
    __builtin_prefetch(bytes + b);
  }
}

/// A batch of [L, cols] matrices whose rows have their elements adjacent: entry b's row i starts
/// at data + at[b] + i * row. The flash kernels read q, k, v, the output and its gradient, and
/// write the output and the gradients, through these, so that an operand may be a view (the
/// heads of a [B, L, H * E] projection: rows H * E apart) as well as dense.
template <class T>
struct BatchRows {
  T* data = nullptr;
  std::vector<std::int64_t> at;
  std::int64_t row = 0;
  T* entry(std::int64_t b) const { return data + at[static_cast<std::size_t>(b)]; }
};

/// attention's operands as the flash kernels read them: row pointers by batch entry.
template <FloatingElement T>
struct FlashProblem {
  using A = acc_t<T>;
  Shape batch_shape;  // q's, k's and v's batch extents broadcast: the output's
  std::int64_t batch = 0, Lq = 0, Lk = 0, E = 0, Ev = 0;
  BatchRows<const T> q, k, v;
  std::vector<std::int64_t> mask_at, score_at;
  const bool* mask = nullptr;  // null: every key allowed
  std::int64_t mask_row = 0, mask_col = 0;
  bool causal = false;
  std::int64_t shift = 0;  // causal: key j is allowed for query i when j <= i + shift
  A scale = 1;
  RowDropout<A> dropout;

  /// Sets S^T[j][i] (keys j < nk from j0, queries i from q0) to -inf where the key is not allowed.
  EMBER_WIDE_VECTORS void mask_tile(std::int64_t b, std::int64_t q0, std::int64_t nq,
                                    std::int64_t j0, std::int64_t nk, A* st) const {
    constexpr std::int64_t Bq = kFlashQueryTile;
    const A masked = -std::numeric_limits<A>::infinity();
    if (causal && j0 + nk - 1 > q0 + shift) {
      for (std::int64_t j = 0; j < nk; ++j) {
        const std::int64_t first = j0 + j - shift - q0;  // the first query that sees key j
#pragma omp simd
        for (std::int64_t i = 0; i < Bq; ++i) st[j * Bq + i] = i < first ? masked : st[j * Bq + i];
      }
    }
    if (mask == nullptr) return;
    const bool* m = mask + mask_at[static_cast<std::size_t>(b)] + q0 * mask_row + j0 * mask_col;
    for (std::int64_t j = 0; j < nk; ++j) {
      if (mask_row == 0) {  // a key-padding mask: one flag for every query
        if (!m[j * mask_col]) std::fill_n(st + j * Bq, Bq, masked);
        continue;
      }
      for (std::int64_t i = 0; i < nq; ++i) {
        if (!m[i * mask_row + j * mask_col]) st[j * Bq + i] = masked;
      }
    }
  }

  /// keep[j][i]: dropout's factor (0 or 1 / (1 - p)) for the tile's elements.
  void dropout_tile(std::int64_t b, std::int64_t q0, std::int64_t nq, std::int64_t j0,
                    std::int64_t nk, A* keep) const {
    constexpr std::int64_t Bq = kFlashQueryTile;
    float u[kFlashKeyTile > kFlashBackwardKeyTile ? kFlashKeyTile : kFlashBackwardKeyTile];
    std::fill_n(keep, nk * Bq, A(0));  // the padding queries' too: they multiply zeros
    for (std::int64_t i = 0; i < nq; ++i) {
      const std::int64_t first = score_at[static_cast<std::size_t>(b)] + (q0 + i) * Lk + j0;
      philox_uniforms(dropout.options.seed, dropout.options.offset,
                      static_cast<std::uint64_t>(first), nk, u);
      for (std::int64_t j = 0; j < nk; ++j) keep[j * Bq + i] = dropout.apply(u[j], A(1));
    }
  }
};

/// One forward task: queries [q0, q0 + 32) of batch entry b.
template <FloatingElement T>
EMBER_WIDE_VECTORS void flash_forward_task(const FlashProblem<T>& p, std::int64_t b,
                                           std::int64_t q0, const BatchRows<T>& out,
                                           acc_t<T>* lse) {
  using A = acc_t<T>;
  constexpr std::int64_t Bq = kFlashQueryTile, Bk = kFlashKeyTile;
  const std::int64_t E = p.E, Ev = p.Ev, nq = std::min(Bq, p.Lq - q0);
  thread_local std::vector<A> buffer;
  buffer.resize(static_cast<std::size_t>((E + Ev + 2 * Bk) * Bq));
  A* qt = buffer.data();  // [E][Bq]: the queries, scaled
  A* ot = qt + E * Bq;    // [Ev][Bq]: the output, unnormalised
  A* st = ot + Ev * Bq;   // [Bk][Bq]: scores, then probabilities
  A* keep = st + Bk * Bq;
  const T* q = p.q.entry(b) + q0 * p.q.row;
  std::fill_n(qt, E * Bq, A(0));
  for (std::int64_t i = 0; i < nq; ++i) {
    for (std::int64_t e = 0; e < E; ++e) qt[e * Bq + i] = to_acc(q[i * p.q.row + e]) * p.scale;
  }
  std::fill_n(ot, Ev * Bq, A(0));
  const A inf = std::numeric_limits<A>::infinity();
  A m[Bq], l[Bq];
  std::fill_n(m, Bq, -inf);
  std::fill_n(l, Bq, A(0));
  const std::int64_t end = p.causal ? std::clamp<std::int64_t>(q0 + nq + p.shift, 0, p.Lk) : p.Lk;
  for (std::int64_t j0 = 0; j0 < end; j0 += Bk) {
    const std::int64_t nk = std::min(Bk, end - j0);
    tile::product<A, T>(nk, Bq, E, {p.k.entry(b) + j0 * p.k.row, p.k.row, 1}, qt, Bq, st, Bq,
                        false);
    p.mask_tile(b, q0, nq, j0, nk, st);
    A top[Bq], alpha[Bq], base[Bq], sum[Bq] = {};
    std::copy_n(m, Bq, top);
    for (std::int64_t j = 0; j < nk; ++j) {
#pragma omp simd
      for (std::int64_t i = 0; i < Bq; ++i)
        top[i] = st[j * Bq + i] > top[i] ? st[j * Bq + i] : top[i];
    }
#pragma omp simd
    for (std::int64_t i = 0; i < Bq; ++i) {
      base[i] = top[i] == -inf ? A(0) : top[i];  // nothing allowed yet: exp(-inf - 0) = 0
      alpha[i] = softmax_exp(m[i] - base[i]);
    }
    for (std::int64_t j = 0; j < nk; ++j) {
#pragma omp simd
      for (std::int64_t i = 0; i < Bq; ++i) {
        const A e = softmax_exp(st[j * Bq + i] - base[i]);
        st[j * Bq + i] = e;
        sum[i] += e;
      }
    }
#pragma omp simd
    for (std::int64_t i = 0; i < Bq; ++i) {
      l[i] = l[i] * alpha[i] + sum[i];
      m[i] = top[i];
    }
    if (p.dropout.active()) {
      p.dropout_tile(b, q0, nq, j0, nk, keep);
      for (std::int64_t x = 0; x < nk * Bq; ++x) st[x] *= keep[x];
    }
    for (std::int64_t c = 0; c < Ev; ++c) {
#pragma omp simd
      for (std::int64_t i = 0; i < Bq; ++i) ot[c * Bq + i] *= alpha[i];
    }
    tile::product<A, T>(Ev, Bq, nk, {p.v.entry(b) + j0 * p.v.row, 1, p.v.row}, st, Bq, ot, Bq,
                        true);
  }
  T* o = out.entry(b) + q0 * out.row;
  for (std::int64_t i = 0; i < nq; ++i) {
    const A inv = l[i] > 0 ? A(1) / l[i] : A(0);
    for (std::int64_t c = 0; c < Ev; ++c) o[i * out.row + c] = to_storage<T>(ot[c * Bq + i] * inv);
    lse[b * p.Lq + q0 + i] = l[i] > 0 ? m[i] + math::log(l[i]) : -inf;
  }
}

/// The products bf16 attention runs on this CPU: AMX where it has it, else AVX512-BF16, else none
/// (the float tile kernel).
enum class FlashProducts { none, amx, avx512_bf16 };
inline FlashProducts flash_bf16_products() {
  if (amx::usable()) return FlashProducts::amx;
  return pairs::avx512_bf16() ? FlashProducts::avx512_bf16 : FlashProducts::none;
}

/// Which bf16 products run p's forward and backward: bf16 with head sizes that are multiples of
/// 32 take flash_bf16_products(), everything else the tile kernel.
template <FloatingElement T>
FlashProducts flash_products(const FlashProblem<T>& p) {
  if (!std::is_same_v<T, bf16> || p.E % 32 != 0 || p.Ev % 32 != 0) return FlashProducts::none;
  return flash_bf16_products();
}

#if EMBER_HAVE_BF16_PAIRS
/// The products of the bf16 kernels, C (+)= A B with B packed in pairs (bf16_pairs.hpp): on AMX's
/// tiles, or on AVX512-BF16's dot products. The kernels are compiled for both instruction sets
/// (EMBER_AMX_TARGET); only the chosen engine's instructions run.
struct AmxProducts {
  static void begin() { amx::configure_tiles(); }
  static void end() { amx::release_tiles(); }
  EMBER_AMX_TARGET static void product(float* c, std::int64_t ldc, const std::uint16_t* a,
                                       std::int64_t lda, const std::uint32_t* b,
                                       std::int64_t b_block, std::int64_t b_chunk, std::int64_t M,
                                       std::int64_t N, std::int64_t chunks, bool accumulate) {
    amx::product(c, ldc, a, lda, b, b_block, b_chunk, M, N, chunks, accumulate);
  }
};
struct Avx512Bf16Products {
  static void begin() {}
  static void end() {}
  EMBER_BF16_PAIRS_TARGET static void product(float* c, std::int64_t ldc, const std::uint16_t* a,
                                              std::int64_t lda, const std::uint32_t* b,
                                              std::int64_t b_block, std::int64_t b_chunk,
                                              std::int64_t M, std::int64_t N, std::int64_t chunks,
                                              bool accumulate) {
    pairs::product(c, ldc, a, lda, b, b_block, b_chunk, M, N, chunks, accumulate);
  }
};

/// The forward in bf16 products (bf16 with E and Ev multiples of 32): kp and vp hold entry b's
/// keys and values packed in pairs (pairs::pack_transposed, padded to whole blocks of 32 keys, and
/// pairs::pack_pairs). The same task as flash_forward_task, with the queries as rows: S = Q K^T,
/// the online softmax a query row at a time, P rounded to bf16 (as PyTorch's and
/// the GPU's flash kernels do) and O += P V into the float rows of O.
inline constexpr std::int64_t kBf16KeyTile = 256;

template <class Products>
EMBER_AMX_TARGET EMBER_WIDE_VECTORS void flash_forward_task_bf16(
    const FlashProblem<bf16>& p, std::int64_t b, std::int64_t q0, const std::uint32_t* kp,
    const std::uint32_t* vp, const BatchRows<bf16>& out, float* lse) {
  constexpr std::int64_t Bq = kFlashQueryTile, Bk = kBf16KeyTile;
  const std::int64_t E = p.E, Ev = p.Ev, nq = std::min(Bq, p.Lq - q0);
  const std::int64_t chunks = E / 32, col_blocks = Ev / 16;
  const auto at = static_cast<std::size_t>(b);
  thread_local std::vector<float> buffer;
  buffer.resize(static_cast<std::size_t>(Bq * Bk + Bq * Ev + Bk + (Bq * E + Bq * Bk) / 2));
  float* s = buffer.data();                             // [Bq][Bk]: scores
  float* o = s + Bq * Bk;                               // [Bq][Ev]: the output, unnormalised
  float* u = o + Bq * Ev;                               // [Bk]: a row's uniforms
  auto* qb = reinterpret_cast<std::uint16_t*>(u + Bk);  // [Bq][E]: the queries, bf16
  std::uint16_t* pb = qb + Bq * E;                      // [Bq][Bk]: P, bf16
  const bf16* q = p.q.entry(b) + q0 * p.q.row;
  for (std::int64_t i = 0; i < Bq; ++i) {
    if (i < nq) {
      std::memcpy(qb + i * E, q + i * p.q.row, static_cast<std::size_t>(E) * 2);
    } else {
      std::fill_n(qb + i * E, E, std::uint16_t{0});
    }
  }
  std::fill_n(o, Bq * Ev, 0.0f);
  const float inf = std::numeric_limits<float>::infinity(), scale = p.scale;
  float m[Bq], l[Bq];
  std::fill_n(m, Bq, -inf);
  std::fill_n(l, Bq, 0.0f);
  const bool* mask_rows = p.mask == nullptr ? nullptr : p.mask + p.mask_at[at] + q0 * p.mask_row;
  const std::int64_t end = p.causal ? std::clamp<std::int64_t>(q0 + nq + p.shift, 0, p.Lk) : p.Lk;
  for (std::int64_t j0 = 0; j0 < end; j0 += Bk) {
    const std::int64_t nk = std::min(Bk, end - j0);
    // S = Q K^T over whole blocks of 32 keys (kp is padded to them with zeros).
    const std::int64_t nkp = (nk + 31) / 32 * 32;
    Products::product(s, Bk, qb, E, kp + j0 / 16 * chunks * 256, chunks * 256, 256, Bq, nkp, chunks,
                      false);
    for (std::int64_t i = 0; i < Bq; ++i) {
      float* row = s + i * Bk;
      // Keys j < allowed may be seen (the causal bound, the tile's end); then the mask.
      std::int64_t allowed = nk;
      if (p.causal) allowed = std::clamp<std::int64_t>(q0 + i + p.shift - j0 + 1, 0, nk);
      if (mask_rows != nullptr && i < nq) {
        const bool* mi = mask_rows + i * p.mask_row + j0 * p.mask_col;
        for (std::int64_t j = 0; j < allowed; ++j) {
          if (!mi[j * p.mask_col]) row[j] = -inf;
        }
      }
      float top = m[i];
#pragma omp simd reduction(max : top)
      for (std::int64_t j = 0; j < nkp; ++j) {
        const float x = j < allowed ? row[j] * scale : -inf;
        row[j] = x;
        top = x > top ? x : top;
      }
      const float base = top == -inf ? 0.0f : top;
      const float alpha = softmax_exp(m[i] - base);
      std::uint16_t* prow = pb + i * Bk;
      float sum = 0;
      if (p.dropout.active() && i < nq) {  // the sum before dropout, P after
        const std::int64_t first = p.score_at[at] + (q0 + i) * p.Lk + j0;
        std::fill_n(u, Bk, 1.0f);
        philox_uniforms(p.dropout.options.seed, p.dropout.options.offset,
                        static_cast<std::uint64_t>(first), nk, u);
        for (std::int64_t j = 0; j < nkp; ++j) {
          const float e = softmax_exp(row[j] - base);
          sum += e;
          row[j] = p.dropout.apply(u[j], e);
        }
      } else {
#pragma omp simd reduction(+ : sum)
        for (std::int64_t j = 0; j < nkp; ++j) {
          const float e = softmax_exp(row[j] - base);
          sum += e;
          row[j] = e;
        }
      }
      pairs::to_bf16(row, nkp, prow);  // the product reads P up to nkp
      l[i] = l[i] * alpha + sum;
      m[i] = top;
      float* orow = o + i * Ev;
#pragma omp simd
      for (std::int64_t c = 0; c < Ev; ++c) orow[c] *= alpha;
    }
    // O += P V over the tile's blocks of 32 keys.
    Products::product(o, Ev, pb, Bk, vp + j0 / 32 * col_blocks * 256, 256, col_blocks * 256, Bq, Ev,
                      (nk + 31) / 32, true);
  }
  bf16* dst = out.entry(b) + q0 * out.row;
  for (std::int64_t i = 0; i < nq; ++i) {
    const float inv = l[i] > 0 ? 1.0f / l[i] : 0.0f;
    for (std::int64_t c = 0; c < Ev; ++c) dst[i * out.row + c] = bf16(o[i * Ev + c] * inv);
    lse[b * p.Lq + q0 + i] = l[i] > 0 ? m[i] + math::log(l[i]) : -inf;
  }
}

/// The forward in bf16 products. With at least two entries per thread, a task is an entry: its keys
/// and values packed into the thread's buffer (in L2 while its query tiles read them), then its
/// tiles, the last (under a causal mask the longest) first. With fewer, every entry is packed first
/// and a task is a tile of queries, so that the threads share an entry's tiles.
template <class Products>
void flash_attention_forward_bf16(const FlashProblem<bf16>& p, const BatchRows<bf16>& out,
                                  float* lse) {
  const std::int64_t kp_words = (p.Lk + 31) / 32 * 32 * p.E / 2;  // whole blocks of 32 keys
  const std::int64_t vp_words = (p.Lk + 31) / 32 * 32 * p.Ev / 2;
  const auto pack = [&](std::int64_t b, std::uint32_t* kp, std::uint32_t* vp) {
    const std::int64_t written = (p.Lk + 15) / 16 * 16 * p.E / 2;
    std::fill(kp + written, kp + kp_words, 0u);  // a last half block of 16 keys
    pairs::pack_transposed(reinterpret_cast<const std::uint16_t*>(p.k.entry(b)), p.Lk, p.E, p.k.row,
                           kp);
    pairs::pack_pairs(reinterpret_cast<const std::uint16_t*>(p.v.entry(b)), p.Lk, p.Ev, p.v.row,
                      vp);
  };
  const bool parallel = p.batch * p.Lq * p.Lk * p.E >= exec::cpu::kParallelThreshold;
  const int threads = parallel ? omp_get_max_threads() : 1;
  const std::int64_t tiles = (p.Lq + kFlashQueryTile - 1) / kFlashQueryTile;
  const std::int64_t per_entry = kp_words + vp_words;
  if (p.batch >= 2 * threads) {
    Tensor<float> packed = empty<float>(Shape{threads, per_entry}, Device::cpu());
    auto* all = reinterpret_cast<std::uint32_t*>(packed.data());
#pragma omp parallel num_threads(threads) if (parallel)
    {
      std::uint32_t* kp = all + omp_get_thread_num() * per_entry;
      Products::begin();
#pragma omp for schedule(dynamic)
      for (std::int64_t b = 0; b < p.batch; ++b) {
        pack(b, kp, kp + kp_words);
        for (std::int64_t tile = tiles - 1; tile >= 0; --tile) {
          flash_forward_task_bf16<Products>(p, b, tile * kFlashQueryTile, kp, kp + kp_words, out,
                                            lse);
        }
      }
      Products::end();
    }
    return;
  }
  Tensor<float> packed = empty<float>(Shape{p.batch, per_entry}, Device::cpu());
  auto* all = reinterpret_cast<std::uint32_t*>(packed.data());
#pragma omp parallel for if (parallel)
  for (std::int64_t b = 0; b < p.batch; ++b) {
    pack(b, all + b * per_entry, all + b * per_entry + kp_words);
  }
  const std::int64_t tasks = p.batch * tiles;
#pragma omp parallel if (parallel)
  {
    Products::begin();
#pragma omp for schedule(dynamic)
    for (std::int64_t t = 0; t < tasks; ++t) {
      const std::int64_t b = t / tiles, tile = tiles - 1 - t % tiles;
      const std::uint32_t* kp = all + b * per_entry;
      flash_forward_task_bf16<Products>(p, b, tile * kFlashQueryTile, kp, kp + kp_words, out, lse);
    }
    Products::end();
  }
}
#endif

/// The forward: out [batch, Lq, Ev] (its rows where `out` says) and lse [batch, Lq] (dense).
template <FloatingElement T>
void flash_attention_forward(const FlashProblem<T>& p, const BatchRows<T>& out, acc_t<T>* lse) {
  exec::count_launch();
#if EMBER_HAVE_BF16_PAIRS
  if constexpr (std::is_same_v<T, bf16>) {
    switch (flash_products(p)) {
      case FlashProducts::amx:
        return flash_attention_forward_bf16<AmxProducts>(p, out, lse);
      case FlashProducts::avx512_bf16:
        return flash_attention_forward_bf16<Avx512Bf16Products>(p, out, lse);
      case FlashProducts::none:
        break;
    }
  }
#endif
  const std::int64_t tiles = (p.Lq + kFlashQueryTile - 1) / kFlashQueryTile;
  const std::int64_t tasks = p.batch * tiles;
  // The last tiles first: under a causal mask they are the longest.
#pragma omp parallel for schedule(dynamic) if (p.batch * p.Lq * p.Lk * p.E >= \
                                               exec::cpu::kParallelThreshold)
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t tile = tiles - 1 - t % tiles;
    flash_forward_task(p, t / tiles, tile * kFlashQueryTile, out, lse);
  }
}

/// Elements of A one backward task works in: the entry's q (twice), dout (twice) and dq as float
/// rows, two vectors of Lq, and the tiles.
template <FloatingElement T>
std::int64_t flash_backward_workspace(const FlashProblem<T>& p) {
  using A = acc_t<T>;
  constexpr std::int64_t Bq = kFlashQueryTile, Bk = kFlashBackwardKeyTile;
  const std::int64_t Ep = tile::padded<A>(p.E), Evp = tile::padded<A>(p.Ev);
  const std::int64_t Lqp = (p.Lq + Bq - 1) / Bq * Bq;
  return 3 * Lqp * Ep + 2 * Lqp * Evp + 2 * Lqp + 4 * Bk * Bq + Bk * (2 * Ep + Evp);
}

/// The rows flash_attention_backward reads and writes besides q, k and v: the output and its
/// gradient [batch, Lq, Ev], and the gradients of q [batch, Lq, E], k [batch, Lk, E] and
/// v [batch, Lk, Ev] (an entry each: broadcast operands' gradients are summed by the caller).
template <class T>
struct FlashGradients {
  BatchRows<const T> out, dout;
  BatchRows<T> dq, dk, dv;
};

/// One backward task: every gradient of batch entry b; `work` holds flash_backward_workspace
/// elements.
template <FloatingElement T>
EMBER_WIDE_VECTORS void flash_backward_task(const FlashProblem<T>& p, std::int64_t b,
                                            acc_t<T>* work, const FlashGradients<T>& io,
                                            const acc_t<T>* lse_all) {
  using A = acc_t<T>;
  constexpr std::int64_t Bq = kFlashQueryTile, Bk = kFlashBackwardKeyTile;
  const std::int64_t Lq = p.Lq, Lk = p.Lk, E = p.E, Ev = p.Ev;
  const std::int64_t Ep = tile::padded<A>(E), Evp = tile::padded<A>(Ev);
  const std::int64_t tiles = (Lq + Bq - 1) / Bq, Lqp = tiles * Bq;
  const A inf = std::numeric_limits<A>::infinity();
  // The entry's operands once, in float: rows padded to whole vectors, queries to whole tiles.
  std::fill_n(work, flash_backward_workspace(p), A(0));
  A* qs = work;              // [Lqp][Ep]: q scale
  A* qst = qs + Lqp * Ep;    // [tiles][E][Bq]: the same, each tile transposed
  A* dob = qst + Lqp * Ep;   // [Lqp][Evp]: dout
  A* dot = dob + Lqp * Evp;  // [tiles][Ev][Bq]: the same, each tile transposed
  A* dqa = dot + Lqp * Evp;  // [Lqp][Ep]: dq / scale
  A* dvec = dqa + Lqp * Ep;  // [Lqp]: rowsum(dout o out)
  A* lsev = dvec + Lqp;      // [Lqp]: lse, +inf where nothing is allowed (p = 0)
  A* st = lsev + Lqp;        // [Bk][Bq]: scores, then probabilities
  A* pd = st + Bk * Bq;      // [Bk][Bq]: probabilities after dropout
  A* ds = pd + Bk * Bq;      // [Bk][Bq]: dP, then dS
  A* keep = ds + Bk * Bq;    // [Bk][Bq]: dropout's factors
  A* dka = keep + Bk * Bq;   // [Bk][Ep]
  A* dva = dka + Bk * Ep;    // [Bk][Evp]
  A* kt = dva + Bk * Evp;    // [Bk][Ep]: the key tile
  const T* q = p.q.entry(b);
  const T* out = io.out.entry(b);
  const T* dout = io.dout.entry(b);
  const A* lse = lse_all + b * Lq;
  constexpr std::int64_t ahead = 8;  // rows prefetched ahead of the ones read
  for (std::int64_t i = 0; i < Lq; ++i) {
    if (i + ahead < Lq) {
      prefetch_row(q + (i + ahead) * p.q.row, E);
      prefetch_row(dout + (i + ahead) * io.dout.row, Ev);
      prefetch_row(out + (i + ahead) * io.out.row, Ev);
    }
    const std::int64_t t = i / Bq, ii = i % Bq;
    for (std::int64_t e = 0; e < E; ++e) {
      const A x = to_acc(q[i * p.q.row + e]) * p.scale;
      qs[i * Ep + e] = x;
      qst[(t * E + e) * Bq + ii] = x;
    }
    A d = 0;
    for (std::int64_t c = 0; c < Ev; ++c) {
      const A g = to_acc(dout[i * io.dout.row + c]);
      dob[i * Evp + c] = g;
      dot[(t * Ev + c) * Bq + ii] = g;
      d += g * to_acc(out[i * io.out.row + c]);
    }
    dvec[i] = d;
    lsev[i] = lse[i] == -inf ? inf : lse[i];
  }
  for (std::int64_t i = Lq; i < Lqp; ++i) lsev[i] = inf;  // the last tile's padding: p = 0
  const T* k = p.k.entry(b);
  const T* v = p.v.entry(b);
  for (std::int64_t j0 = 0; j0 < Lk; j0 += Bk) {
    const std::int64_t nk = std::min(Bk, Lk - j0);
    std::fill_n(dka, Bk * Ep, A(0));
    std::fill_n(dva, Bk * Evp, A(0));
    for (std::int64_t j = 0; j < nk; ++j) {
      for (std::int64_t e = 0; e < E; ++e) kt[j * Ep + e] = to_acc(k[(j0 + j) * p.k.row + e]);
    }
    // Causal: the queries before j0 - shift see none of these keys.
    const std::int64_t first = p.causal ? std::max<std::int64_t>(0, j0 - p.shift) / Bq : 0;
    for (std::int64_t t = first; t < tiles; ++t) {
      const std::int64_t q0 = t * Bq, nq = std::min(Bq, Lq - q0);
      tile::product<A, A>(nk, Bq, E, {kt, Ep, 1}, qst + t * E * Bq, Bq, st, Bq, false);
      p.mask_tile(b, q0, nq, j0, nk, st);
      for (std::int64_t j = 0; j < nk; ++j) {
#pragma omp simd
        for (std::int64_t i = 0; i < Bq; ++i)
          st[j * Bq + i] = softmax_exp(st[j * Bq + i] - lsev[q0 + i]);
      }
      const bool drop = p.dropout.active();
      if (drop) {
        p.dropout_tile(b, q0, nq, j0, nk, keep);
        for (std::int64_t x = 0; x < nk * Bq; ++x) pd[x] = st[x] * keep[x];
      }
      // dV += P^T dO; dP^T = V dO^T.
      tile::product<A, A>(nk, Evp, Bq, {drop ? pd : st, Bq, 1}, dob + q0 * Evp, Evp, dva, Evp,
                          true);
      tile::product<A, T>(nk, Bq, Ev, {v + j0 * p.v.row, p.v.row, 1}, dot + t * Ev * Bq, Bq, ds, Bq,
                          false);
      for (std::int64_t j = 0; j < nk; ++j) {
        const A* kj = keep + j * Bq;
#pragma omp simd
        for (std::int64_t i = 0; i < Bq; ++i) {
          const A dpre = drop ? ds[j * Bq + i] * kj[i] : ds[j * Bq + i];
          ds[j * Bq + i] = st[j * Bq + i] * (dpre - dvec[q0 + i]);
        }
      }
      // dK += dS^T (q scale); dQ += dS K.
      tile::product<A, A>(nk, Ep, Bq, {ds, Bq, 1}, qs + q0 * Ep, Ep, dka, Ep, true);
      tile::product<A, A>(nq, Ep, nk, {ds, 1, Bq}, kt, Ep, dqa + q0 * Ep, Ep, true);
    }
    T* dk = io.dk.entry(b) + j0 * io.dk.row;
    T* dv = io.dv.entry(b) + j0 * io.dv.row;
    for (std::int64_t j = 0; j < nk; ++j) {
      for (std::int64_t e = 0; e < E; ++e) dk[j * io.dk.row + e] = to_storage<T>(dka[j * Ep + e]);
      for (std::int64_t c = 0; c < Ev; ++c) dv[j * io.dv.row + c] = to_storage<T>(dva[j * Evp + c]);
    }
  }
  T* dq = io.dq.entry(b);
  for (std::int64_t i = 0; i < Lq; ++i) {
    for (std::int64_t e = 0; e < E; ++e) {
      dq[i * io.dq.row + e] = to_storage<T>(dqa[i * Ep + e] * p.scale);
    }
  }
}

#if EMBER_HAVE_BF16_PAIRS
/// 32-bit words of a bf16 backward task's workspace (flash_backward_task_bf16).
inline std::int64_t flash_backward_bf16_words(const FlashProblem<bf16>& p) {
  constexpr std::int64_t Bq = kFlashQueryTile, Bk = kFlashBackwardKeyTile;
  const std::int64_t Lqp = (p.Lq + Bq - 1) / Bq * Bq, E = p.E, Ev = p.Ev;
  return Lqp * (E + Ev) + 2 * Lqp + Lqp * E + Bk * (E + Ev) / 2 + E * Bk / 2 + Bk * (E + Ev) +
         3 * Bk * Bq + 3 * Bk * Bq / 2;
}

/// The backward in bf16 products (bf16 with E and Ev multiples of 32, as the forward):
/// flash_backward_task's steps with the five products in bf16 (Products::product). A tile of scores
/// is held transposed, keys as rows and the 32 queries as columns, as the float path holds it: the
/// softmax's and dS's arithmetic runs along the queries, and P^T and dS^T are the A operands of dV
/// and dK as they stand. P and dS are rounded to bf16 for the products, as PyTorch's and the GPU's
/// flash kernels do. The entry's queries and dout are packed once in both B layouts; each key tile
/// is copied to zero-padded bf16 rows, with K^T for dQ^T = K^T dS^T (dQ held transposed, per query
/// tile).
template <class Products>
EMBER_AMX_TARGET EMBER_WIDE_VECTORS void flash_backward_task_bf16(const FlashProblem<bf16>& p,
                                                                  std::int64_t b,
                                                                  std::uint32_t* work,
                                                                  const FlashGradients<bf16>& io,
                                                                  const float* lse_all) {
  constexpr std::int64_t Bq = kFlashQueryTile, Bk = kFlashBackwardKeyTile;
  const std::int64_t Lq = p.Lq, Lk = p.Lk, E = p.E, Ev = p.Ev;
  const std::int64_t tiles = (Lq + Bq - 1) / Bq, Lqp = tiles * Bq;
  const std::int64_t qe = E / 32, qv = Ev / 32;  // 32-wide chunks of a key's and a value's row
  const float inf = std::numeric_limits<float>::infinity(), scale = p.scale;
  std::fill_n(work, flash_backward_bf16_words(p), 0u);
  std::uint32_t* qpt = work;               // q as B tiles of Q^T (pack_transposed)
  std::uint32_t* qp = qpt + Lqp * E / 2;   // q as B tiles over the queries (pack_pairs)
  std::uint32_t* dopt = qp + Lqp * E / 2;  // dout, the same two ways
  std::uint32_t* dop = dopt + Lqp * Ev / 2;
  auto* dvec = reinterpret_cast<float*>(dop + Lqp * Ev / 2);  // [Lqp]: rowsum(dout o out)
  float* lsev = dvec + Lqp;  // [Lqp]: lse, +inf where nothing is allowed (p = 0)
  float* dqt = lsev + Lqp;   // [tiles][E][Bq]: dQ^T / scale
  auto* kb = reinterpret_cast<std::uint16_t*>(dqt + Lqp * E);    // [Bk][E]: the key tile
  std::uint16_t* vb = kb + Bk * E;                               // [Bk][Ev]: the value tile
  std::uint16_t* kt = vb + Bk * Ev;                              // [E][Bk]: K^T
  auto* dka = reinterpret_cast<float*>(kt + E * Bk);             // [Bk][E]: dK / scale
  float* dva = dka + Bk * E;                                     // [Bk][Ev]
  float* st = dva + Bk * Ev;                                     // [Bk][Bq]: S^T, then P^T
  float* dpt = st + Bk * Bq;                                     // [Bk][Bq]: dP^T
  float* keep = dpt + Bk * Bq;                                   // [Bk][Bq]: dropout's factors
  auto* pdt = reinterpret_cast<std::uint16_t*>(keep + Bk * Bq);  // [Bk][Bq]: P^T after dropout
  std::uint16_t* dst = pdt + Bk * Bq;                            // [Bk][Bq]: dS^T
  auto* dsp = reinterpret_cast<std::uint32_t*>(dst + Bk * Bq);   // dS^T as B tiles over keys
  const auto* q = reinterpret_cast<const std::uint16_t*>(p.q.entry(b));
  const auto* dout = reinterpret_cast<const std::uint16_t*>(io.dout.entry(b));  // bits
  pairs::pack_transposed(q, Lq, E, p.q.row, qpt);
  pairs::pack_pairs(q, Lq, E, p.q.row, qp);
  pairs::pack_transposed(dout, Lq, Ev, io.dout.row, dopt);
  pairs::pack_pairs(dout, Lq, Ev, io.dout.row, dop);
  const bf16* out = io.out.entry(b);
  const bf16* g = io.dout.entry(b);
  const float* lse = lse_all + b * Lq;
  constexpr std::int64_t ahead = 8;  // rows prefetched ahead of the ones read
  for (std::int64_t i = 0; i < Lq; ++i) {
    if (i + ahead < Lq) prefetch_row(out + (i + ahead) * io.out.row, Ev);
    float d = 0;
    for (std::int64_t c = 0; c < Ev; ++c) {
      d += to_acc(g[i * io.dout.row + c]) * to_acc(out[i * io.out.row + c]);
    }
    dvec[i] = d;
    lsev[i] = lse[i] == -inf ? inf : lse[i];
  }
  for (std::int64_t i = Lq; i < Lqp; ++i) lsev[i] = inf;  // the last tile's padding: p = 0
  const auto* k = reinterpret_cast<const std::uint16_t*>(p.k.entry(b));
  const auto* v = reinterpret_cast<const std::uint16_t*>(p.v.entry(b));
  const bool drop = p.dropout.active();
  for (std::int64_t j0 = 0; j0 < Lk; j0 += Bk) {
    const std::int64_t nk = std::min(Bk, Lk - j0), nkp = (nk + 31) / 32 * 32;
    for (std::int64_t j = 0; j < nkp; ++j) {
      if (j < nk) {
        std::memcpy(kb + j * E, k + (j0 + j) * p.k.row, static_cast<std::size_t>(E) * 2);
        std::memcpy(vb + j * Ev, v + (j0 + j) * p.v.row, static_cast<std::size_t>(Ev) * 2);
      } else {
        std::fill_n(kb + j * E, E, std::uint16_t{0});
        std::fill_n(vb + j * Ev, Ev, std::uint16_t{0});
      }
    }
    for (std::int64_t e = 0; e < E; ++e) {
      for (std::int64_t j = 0; j < nkp; ++j) kt[e * Bk + j] = kb[j * E + e];
    }
    std::fill_n(dka, Bk * E, 0.0f);
    std::fill_n(dva, Bk * Ev, 0.0f);
    // Causal: the queries before j0 - shift see none of these keys.
    const std::int64_t first = p.causal ? std::max<std::int64_t>(0, j0 - p.shift) / Bq : 0;
    for (std::int64_t t = first; t < tiles; ++t) {
      const std::int64_t q0 = t * Bq, nq = std::min(Bq, Lq - q0);
      // S^T = K Q^T, masked; P^T = exp(S^T scale - lse), zero on the padding keys.
      Products::product(st, Bq, kb, E, qpt + 2 * t * qe * 256, qe * 256, 256, nkp, Bq, qe, false);
      p.mask_tile(b, q0, nq, j0, nk, st);
      for (std::int64_t j = 0; j < nk; ++j) {
#pragma omp simd
        for (std::int64_t i = 0; i < Bq; ++i)
          st[j * Bq + i] = softmax_exp(st[j * Bq + i] * scale - lsev[q0 + i]);
      }
      std::fill(st + nk * Bq, st + nkp * Bq, 0.0f);
      if (drop) p.dropout_tile(b, q0, nq, j0, nk, keep);
      if (drop) {
        for (std::int64_t x = 0; x < nkp * Bq; ++x) dpt[x] = st[x] * keep[x];  // dpt: scratch
      }
      pairs::to_bf16(drop ? dpt : st, nkp * Bq, pdt);
      // dV += P^T dO; dP^T = V dO^T.
      Products::product(dva, Ev, pdt, Bq, dop + t * (Ev / 16) * 256, 256, 0, nkp, Ev, 1, true);
      Products::product(dpt, Bq, vb, Ev, dopt + 2 * t * qv * 256, qv * 256, 256, nkp, Bq, qv,
                        false);
      // dS^T = P^T o (dP^T - D), dropout's factors on dP^T.
      for (std::int64_t j = 0; j < nkp; ++j) {
#pragma omp simd
        for (std::int64_t i = 0; i < Bq; ++i) {
          const float dpre = drop ? dpt[j * Bq + i] * keep[j * Bq + i] : dpt[j * Bq + i];
          dpt[j * Bq + i] = st[j * Bq + i] * (dpre - dvec[q0 + i]);
        }
      }
      pairs::to_bf16(dpt, nkp * Bq, dst);
      pairs::pack_pairs(dst, nkp, Bq, Bq, dsp);
      // dK += dS^T Q; dQ^T += K^T dS^T.
      Products::product(dka, E, dst, Bq, qp + t * (E / 16) * 256, 256, 0, nkp, E, 1, true);
      Products::product(dqt + t * E * Bq, Bq, kt, Bk, dsp, 256, 2 * 256, E, Bq, nkp / 32, true);
    }
    bf16* dk = io.dk.entry(b) + j0 * io.dk.row;
    bf16* dv = io.dv.entry(b) + j0 * io.dv.row;
    for (std::int64_t j = 0; j < nk; ++j) {
      for (std::int64_t e = 0; e < E; ++e) dk[j * io.dk.row + e] = bf16(dka[j * E + e] * scale);
      for (std::int64_t c = 0; c < Ev; ++c) dv[j * io.dv.row + c] = bf16(dva[j * Ev + c]);
    }
  }
  bf16* dq = io.dq.entry(b);
  for (std::int64_t i = 0; i < Lq; ++i) {
    const float* col = dqt + (i / Bq) * E * Bq + i % Bq;
    for (std::int64_t e = 0; e < E; ++e) dq[i * io.dq.row + e] = bf16(col[e * Bq] * scale);
  }
}

/// The backward in bf16 products: a task per batch entry.
template <class Products>
void flash_attention_backward_bf16(const FlashProblem<bf16>& p, const FlashGradients<bf16>& io,
                                   const float* lse) {
  const bool parallel = p.batch * p.Lq * p.Lk * p.E >= exec::cpu::kParallelThreshold;
  const int threads = parallel ? std::min<std::int64_t>(omp_get_max_threads(), p.batch) : 1;
  const std::int64_t words = flash_backward_bf16_words(p);
  Tensor<float> work = empty<float>(Shape{threads, words}, Device::cpu());
  auto* all = reinterpret_cast<std::uint32_t*>(work.data());
#pragma omp parallel num_threads(threads) if (parallel)
  {
    Products::begin();
#pragma omp for schedule(dynamic)
    for (std::int64_t b = 0; b < p.batch; ++b) {
      flash_backward_task_bf16<Products>(p, b, all + omp_get_thread_num() * words, io, lse);
    }
    Products::end();
  }
}
#endif

/// The backward: from the output, its gradient and lse [batch, Lq] (dense), the gradients of q,
/// k and v, into the rows `io` names.
template <FloatingElement T>
void flash_attention_backward(const FlashProblem<T>& p, const FlashGradients<T>& io,
                              const acc_t<T>* lse) {
  using A = acc_t<T>;
  exec::count_launch();
#if EMBER_HAVE_BF16_PAIRS
  if constexpr (std::is_same_v<T, bf16>) {
    switch (flash_products(p)) {
      case FlashProducts::amx:
        return flash_attention_backward_bf16<AmxProducts>(p, io, lse);
      case FlashProducts::avx512_bf16:
        return flash_attention_backward_bf16<Avx512Bf16Products>(p, io, lse);
      case FlashProducts::none:
        break;
    }
  }
#endif
  const bool parallel = p.batch * p.Lq * p.Lk * p.E >= exec::cpu::kParallelThreshold;
  const int threads = parallel ? std::min<std::int64_t>(omp_get_max_threads(), p.batch) : 1;
  // Every thread's workspace in one allocation, made (and counted) before the team starts.
  const std::int64_t words = flash_backward_workspace(p);
  Tensor<A> work = empty<A>(Shape{threads, words}, Device::cpu());
#pragma omp parallel for schedule(dynamic) num_threads(threads) if (parallel)
  for (std::int64_t b = 0; b < p.batch; ++b) {
    A* mine = work.data() + omp_get_thread_num() * words;
    flash_backward_task(p, b, mine, io, lse);
  }
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND
