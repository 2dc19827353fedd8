// The CPU reductions' loops (reduce.hpp declares their entry point, run_reduce): rows, columns
// and single outputs split into fixed chunks. Included by reduce.hpp.
#pragma once

#include "reduce.hpp"

namespace ember::exec::cpu {

/// Reduced elements per chunk when one output is split across threads. Fixed, so the
/// summation order (and the result) does not depend on the number of threads.
inline constexpr std::int64_t kReduceChunk = 1 << 14;

/// Independent accumulators on the dense path: enough to hide the add latency and fill a
/// SIMD register; combined in lane order, so the result is fixed.
inline constexpr int kReduceLanes = 8;

// Folds reduced elements [begin, end) of output `o` into `s`.
template <class Red, class Plan>
typename Red::state fold_range(const Red& red, const Plan& plan, const ReduceLayout& L,
                               std::int64_t o, std::int64_t begin, std::int64_t end,
                               typename Red::state s) {
  using A = typename Plan::acc_type;
  if (L.dense_rows) {
    const std::int64_t base = o * L.reduced;
    typename Red::state lanes[kReduceLanes];
    for (auto& lane : lanes) lane = red.init();
    std::int64_t r = begin;
    for (; r + kReduceLanes <= end; r += kReduceLanes) {
      for (int k = 0; k < kReduceLanes; ++k) {
        lanes[k] =
            red.step(lanes[k], static_cast<A>(plan.at(expr::LinearIndex{base + r + k})), r + k);
      }
    }
    for (const auto& lane : lanes) s = red.combine(s, lane);
    for (; r < end; ++r) s = red.step(s, static_cast<A>(plan.at(expr::LinearIndex{base + r})), r);
    return s;
  }
  expr::CoordIndex ix{};
  std::int64_t rem = o;
  for (int d = L.kept - 1; d >= 0; --d) {
    ix.c[d] = rem % L.sizes[d];
    rem /= L.sizes[d];
  }
  rem = begin;
  for (int d = L.ndim() - 1; d >= L.kept; --d) {
    ix.c[d] = rem % L.sizes[d];
    rem /= L.sizes[d];
  }
  const int last = L.ndim() - 1;
  for (std::int64_t r = begin; r < end; ++r) {
    s = red.step(s, static_cast<A>(plan.at(ix)), r);
    // Advance the reduced coordinates like an odometer.
    for (int d = last; d >= L.kept; --d) {
      if (++ix.c[d] < L.sizes[d]) break;
      ix.c[d] = 0;
    }
  }
  return s;
}

/// True when neighbouring outputs read neighbouring elements (a sum over the batch axis): then
/// walking one output at a time would stride through memory, and the column path walks rows.
inline bool columns_are_dense(const ReduceLayout& L) {
  if (L.kept == 0 || L.kept == L.ndim() || L.sizes[L.kept - 1] < 8) return false;
  for (const Strides& s : L.arrays) {
    if (s[L.kept - 1] > 1) return false;
  }
  return true;
}

// The coordinates of a column task's first element: output row `row` (the kept dimensions
// outside the innermost one), reduced row `r0`, innermost kept coordinate 0.
inline expr::CoordIndex column_task_start(const ReduceLayout& L, std::int64_t row,
                                          std::int64_t r0) {
  expr::CoordIndex ix{};
  for (int d = L.kept - 2; d >= 0; --d) {
    ix.c[d] = row % L.sizes[d];
    row /= L.sizes[d];
  }
  for (int d = L.ndim() - 1; d >= L.kept; --d) {
    ix.c[d] = r0 % L.sizes[d];
    r0 /= L.sizes[d];
  }
  return ix;
}

// The column path: each task folds a block of adjacent outputs over a chunk of reduced rows,
// reading each row's elements in memory order; the chunks' states combine in chunk order.
template <class R, class Red, class Plan>
void run_reduce_columns(const Red& red, const Plan& plan, const ReduceLayout& L, R* out) {
  using A = typename Plan::acc_type;
  using State = typename Red::state;
  const int inner_dim = L.kept - 1;
  const std::int64_t inner = L.sizes[inner_dim];
  const std::int64_t rows = L.outputs / inner;  // outputs outside the innermost kept dim
  const std::int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  const std::int64_t n = L.reduced;
  const std::int64_t chunk_rows = column_chunk_rows(std::min(inner, kColumnBlock));
  const std::int64_t chunks = std::max<std::int64_t>(1, (n + chunk_rows - 1) / chunk_rows);
  const std::int64_t tasks = rows * blocks * chunks;
  std::vector<State> partial(static_cast<std::size_t>(tasks * kColumnBlock));

#pragma omp parallel for schedule(static) if (L.outputs * n >= kParallelThreshold && tasks > 1)
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t chunk = t % chunks;
    const std::int64_t block = (t / chunks) % blocks;
    const std::int64_t row = t / (chunks * blocks);
    const std::int64_t j0 = block * kColumnBlock;
    const std::int64_t width = std::min(kColumnBlock, inner - j0);
    State* states = partial.data() + t * kColumnBlock;
    for (std::int64_t j = 0; j < width; ++j) states[j] = red.init();

    const std::int64_t r0 = chunk * chunk_rows;
    const std::int64_t r1 = std::min(n, r0 + chunk_rows);
    expr::CoordIndex ix = column_task_start(L, row, r0);
    const std::int64_t o0 = row * inner + j0;
    for (std::int64_t r = r0; r < r1; ++r) {
      if (L.dense_columns) {  // linear indexing: the compiler vectorises across outputs
        const std::int64_t base = r * L.outputs + o0;
        for (std::int64_t j = 0; j < width; ++j) {
          states[j] = red.step(states[j], static_cast<A>(plan.at(expr::LinearIndex{base + j})), r);
        }
        continue;
      }
      for (std::int64_t j = 0; j < width; ++j) {
        ix.c[inner_dim] = j0 + j;
        states[j] = red.step(states[j], static_cast<A>(plan.at(ix)), r);
      }
      for (int d = L.ndim() - 1; d >= L.kept; --d) {
        if (++ix.c[d] < L.sizes[d]) break;
        ix.c[d] = 0;
      }
    }
  }

#pragma omp parallel for schedule(static) if (L.outputs >= kParallelThreshold)
  for (std::int64_t o = 0; o < L.outputs; ++o) {
    const std::int64_t row = o / inner, j = o % inner;
    const std::int64_t block = j / kColumnBlock;
    State s = red.init();
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t t = (row * blocks + block) * chunks + c;
      s = red.combine(s, partial[static_cast<std::size_t>(t * kColumnBlock + j % kColumnBlock)]);
    }
    out[o] = to_storage<R>(red.finish(s, n));
  }
}

template <class R, class Red, class Plan>
EMBER_NOINLINE void run_reduce(const Red& red, const Plan& plan, const ReduceLayout& L, R* out) {
  count_launch();
  if (L.reduced == 0) {  // an empty range: every output is the reducer's identity, finished
    for (std::int64_t o = 0; o < L.outputs; ++o) out[o] = to_storage<R>(red.finish(red.init(), 0));
    return;
  }
  if (columns_are_dense(L)) {
    run_reduce_columns(red, plan, L, out);
    return;
  }
  const std::int64_t n = L.reduced;
  const std::int64_t chunks = (n + kReduceChunk - 1) / kReduceChunk;
#if defined(EMBER_OPENMP)
  const bool few_outputs = L.outputs < 2 * omp_get_max_threads() && chunks > 1;
#else
  const bool few_outputs = false;
#endif
  if (!few_outputs) {
#pragma omp parallel for schedule(static) if (L.outputs * n >= kParallelThreshold && L.outputs > 1)
    for (std::int64_t o = 0; o < L.outputs; ++o) {
      // The same chunked order as below, so results do not depend on the path taken.
      typename Red::state s = red.init();
      for (std::int64_t c = 0; c < chunks; ++c) {
        s = red.combine(s, fold_range(red, plan, L, o, c * kReduceChunk,
                                      std::min(n, (c + 1) * kReduceChunk), red.init()));
      }
      out[o] = to_storage<R>(red.finish(s, n));
    }
    return;
  }
  std::vector<typename Red::state> partial(static_cast<std::size_t>(chunks));
  for (std::int64_t o = 0; o < L.outputs; ++o) {
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < chunks; ++c) {
      partial[static_cast<std::size_t>(c)] = fold_range(
          red, plan, L, o, c * kReduceChunk, std::min(n, (c + 1) * kReduceChunk), red.init());
    }
    typename Red::state s = red.init();
    for (const auto& p : partial) s = red.combine(s, p);
    out[o] = to_storage<R>(red.finish(s, n));
  }
}

}  // namespace ember::exec::cpu
