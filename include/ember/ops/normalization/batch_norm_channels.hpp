// batch_norm's per-channel loops on the CPU, for dense NCHW and channels-last tensors.
//
// A channel of a dense [N, C, H, W] tensor is N contiguous runs of H*W elements, C*H*W apart.
// The general reduction over axes {0, 2, 3} walks it element by element through index
// arithmetic; here each run is one vectorised loop. A dense channels-last tensor is N*H*W rows
// of C channels: its sums split the rows over the threads, each summing into its own
// per-channel vector, the vectors then added in thread order (fixed for a given thread count,
// so results do not depend on timing).
//
// The forward's statistics take one sweep over memory: x is read in pieces small enough to stay
// in L1 (an NCHW run, or a block of channels-last rows), each piece's mean and squared
// deviations from it taken in two passes over the piece, and the pieces' (count, mean, M2)
// merged by Chan's formula in a fixed order: the two-pass variance's accuracy at one pass's
// memory traffic. The backward's two sums (of g and of g (x - mean)) are one sweep over x and g
// together.
//
// The elementwise passes around the sums, y = relu((x - mean) scale + shift + residual) forward
// and dx = a g' + k1 (x - mean) + k0 backward (g' the gradient masked by the ReLU, per-channel
// constants folded on the host), are plain loops over either layout: the general strided
// executor spent a third of a ResNet step on them, recomputing broadcast indices per element.
// Where no residual was added, the backward recomputes the ReLU's mask from x with the forward's
// arithmetic (affine_value) instead of reading y: one stream fewer in each backward loop.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/dtype.hpp"
#include "../../core/shape.hpp"
#include "../../exec/launch_counter.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#if defined(EMBER_OPENMP)
#include <omp.h>
#endif

namespace ember::ops::inline EMBER_UNIT_KIND {

/// Whether the channel loop serves x (and a gradient of x's layout): a dense NCHW tensor with
/// elements on the CPU, and at least one channel per thread (fewer would leave threads idle:
/// the reductions split the batch instead).
template <Storable T>
bool channel_loop_applies(const Tensor<T>& x) {
  if (!x.device().is_cpu() || x.rank() < 2 || x.numel() == 0 || !x.is_contiguous()) return false;
#if defined(EMBER_OPENMP)
  return x.size(1) >= omp_get_max_threads();
#else
  return true;
#endif
}

/// batch norm's affine before the ReLU and residual, as the forward computes it: the backward
/// recomputes the ReLU's mask from x with this same arithmetic, so both take the same branch
/// (in bf16 and half, a positive value that rounds to zero in y still passes: the mask is the
/// ReLU's of the value before rounding).
template <class A>
EMBER_FORCEINLINE A affine_value(A x, A mean, A scale, A shift) {
  return (x - mean) * scale + shift;
}

/// Where batch norm's backward finds the mask of a ReLU that follows it: there is none; the
/// ReLU's output y (x's layout; with a residual added, y is what decided); or x, through the
/// forward's per-channel affine (no residual: y is not read).
enum class MaskSource { none, output, input };
template <class T>
struct ReluMask {
  MaskSource source = MaskSource::none;
  const T* y = nullptr;            // output
  const acc_t<T>* mean = nullptr;  // input: the forward's per-channel affine
  const acc_t<T>* scale = nullptr;
  const acc_t<T>* shift = nullptr;
};
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::ops::detail::inline EMBER_UNIT_KIND {

/// f(std::integral_constant<MaskSource, m.source>{}): the mask's test chosen outside the loops
/// (a run-time test inside keeps them scalar).
template <class T, class F>
void with_mask_source(const ReluMask<T>& m, const F& f) {
  switch (m.source) {
    case MaskSource::none:
      return f(std::integral_constant<MaskSource, MaskSource::none>{});
    case MaskSource::output:
      return f(std::integral_constant<MaskSource, MaskSource::output>{});
    case MaskSource::input:
      return f(std::integral_constant<MaskSource, MaskSource::input>{});
  }
}

/// g where the ReLU passed element i (channel c, value x) on, else 0.
template <MaskSource S, class T, class A>
EMBER_FORCEINLINE A relu_masked(A g, const ReluMask<T>& m, std::int64_t i, std::int64_t c, A x) {
  if constexpr (S == MaskSource::output) return to_acc(m.y[i]) > A(0) ? g : A(0);
  if constexpr (S == MaskSource::input) {
    return affine_value(x, m.mean[c], m.scale[c], m.shift[c]) > A(0) ? g : A(0);
  }
  return g;
}

/// Count, mean and sum of squared deviations per channel, of pieces merged in order (Chan,
/// Golub and LeVeque's pairwise update). The count is a double: exact past float's 2^24.
template <class A>
struct Moments {
  double count = 0;
  std::vector<A> mean, m2;

  Moments() = default;
  explicit Moments(std::int64_t C)
      : mean(static_cast<std::size_t>(C), A(0)), m2(static_cast<std::size_t>(C), A(0)) {}
  void merge(double n, const A* piece_mean, const A* piece_m2) {
    const double total = count + n;
    const A to_piece = static_cast<A>(n / total), cross = static_cast<A>(count * n / total);
    for (std::size_t c = 0; c < mean.size(); ++c) {
      const A delta = piece_mean[c] - mean[c];
      mean[c] += delta * to_piece;
      m2[c] += piece_m2[c] + delta * delta * cross;
    }
    count = total;
  }
  void merge(const Moments& o) {
    if (o.count > 0) merge(o.count, o.mean.data(), o.m2.data());
  }
};

/// The shape [1, C, 1, ...] of per-channel statistics of x.
template <Storable T>
Shape channel_shape(const Tensor<T>& x) {
  Shape s = Shape::filled(x.rank(), 1);
  s[1] = x.size(1);
  return s;
}

/// f(c, run(n)) for every channel c, a channel per thread, where run(n) is the offset of the
/// n-th run of channel c; one counted pass.
template <class F>
void for_each_channel(std::int64_t C, std::int64_t inner, F&& f) {
  exec::count_launch();
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < C; ++c) {
    f(c, [=](std::int64_t n) { return (n * C + c) * inner; });
  }
}
}  // namespace ember::ops::detail::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// Per-channel mean and biased variance of x (channel_loop_applies), as [1, C, 1, ...] in the
/// compute type: each run's mean and M2 in two passes over the run, the runs merged in order.
template <FloatingElement T>
std::pair<Tensor<acc_t<T>>, Tensor<acc_t<T>>> channel_mean_var(const Tensor<T>& x) {
  using A = acc_t<T>;
  const std::int64_t N = x.size(0), C = x.size(1), inner = x.numel() / (N * C);
  const Shape s = detail::channel_shape(x);
  Tensor<A> mean = empty<A>(s), var = empty<A>(s);
  const T* px = x.data();
  A* pm = mean.data();
  A* pv = var.data();
  detail::for_each_channel(C, inner, [&](std::int64_t c, auto run) {
    detail::Moments<A> total(1);
    for (std::int64_t n = 0; n < N; ++n) {
      const T* p = px + run(n);
      A sum = 0;
#pragma omp simd reduction(+ : sum)
      for (std::int64_t i = 0; i < inner; ++i) sum += to_acc(p[i]);
      const A m = sum / static_cast<A>(inner);
      A squares = 0;
#pragma omp simd reduction(+ : squares)
      for (std::int64_t i = 0; i < inner; ++i) {
        const A d = to_acc(p[i]) - m;
        squares += d * d;
      }
      total.merge(static_cast<double>(inner), &m, &squares);
    }
    pm[c] = total.mean[0];
    pv[c] = total.m2[0] / static_cast<A>(total.count);
  });
  return {mean, var};
}

/// Per-channel sums of g and of g (x - mean) rstd (batch_norm's backward), for x and g of the
/// same shape and dense layout (channel_loop_applies), mean and rstd [1, C, 1, ...]; with a
/// ReLU's mask the sums are of g where the ReLU passed. Returned as [1, C, 1, ...] in the
/// compute type.
template <FloatingElement T>
std::pair<Tensor<acc_t<T>>, Tensor<acc_t<T>>> channel_grad_sums(const Tensor<T>& x,
                                                                const Tensor<T>& g,
                                                                const Tensor<acc_t<T>>& mean,
                                                                const Tensor<acc_t<T>>& rstd,
                                                                const ReluMask<T>& mask = {}) {
  using A = acc_t<T>;
  const std::int64_t N = x.size(0), C = x.size(1), inner = x.numel() / (N * C);
  const Shape s = detail::channel_shape(x);
  Tensor<A> sum_g = empty<A>(s), sum_gxh = empty<A>(s);
  const Tensor<A> m = mean.contiguous(), r = rstd.contiguous();
  const T* px = x.data();
  const T* pg = g.data();
  const A* pm = m.data();
  const A* pr = r.data();
  A* p1 = sum_g.data();
  A* p2 = sum_gxh.data();
  detail::with_mask_source(mask, [&](auto source) {
    detail::for_each_channel(C, inner, [&](std::int64_t c, auto run) {
      const A mc = pm[c];
      A total_g = 0, total_gd = 0;
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t o = run(n);
        A part_g = 0, part_gd = 0;
#pragma omp simd reduction(+ : part_g, part_gd)
        for (std::int64_t i = 0; i < inner; ++i) {
          const A xi = to_acc(px[o + i]);
          const A gi =
              detail::relu_masked<decltype(source)::value>(to_acc(pg[o + i]), mask, o + i, c, xi);
          part_g += gi;
          part_gd += gi * (xi - mc);
        }
        total_g += part_g;
        total_gd += part_gd;
      }
      p1[c] = total_g;
      p2[c] = total_gd * pr[c];
    });
  });
  return {sum_g, sum_gxh};
}

/// The dense layouts the elementwise channel passes serve (CPU, rank 4, non-empty).
enum class ChannelLayout { none, nchw, nhwc };
template <Storable T>
ChannelLayout channel_layout(const Tensor<T>& x) {
  if (!x.device().is_cpu() || x.rank() != 4 || x.numel() == 0) return ChannelLayout::none;
  if (x.is_contiguous()) return ChannelLayout::nchw;
  if (x.is_contiguous(MemoryFormat::channels_last)) return ChannelLayout::nhwc;
  return ChannelLayout::none;
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::ops::detail::inline EMBER_UNIT_KIND {

/// Channels-last rows are taken K at a time as one run of K*C elements (about 256 where C
/// allows): a loop over one 16-channel row spends its time entering and leaving, and sums into
/// a C-long accumulator carry a store-to-load dependency from each row to the next (the loops
/// ran at a third of the memory bandwidth). Per-channel values are repeated K times
/// (per_run) so that element i of a run reads value i.
inline std::int64_t rows_per_run(std::int64_t C) { return std::max<std::int64_t>(1, 256 / C); }

/// Writes the C values of v R times over out: one value per element of a run of R rows.
template <class A>
void repeat_run(const A* v, std::int64_t C, std::int64_t R, A* out) {
  for (std::int64_t r = 0; r < R; ++r) std::copy(v, v + C, out + r * C);
}
/// Adds a run of R rows of C values into out's C values, row by row.
template <class A>
void fold_run(const A* run, std::int64_t C, std::int64_t R, A* out) {
  for (std::int64_t r = 0; r < R; ++r) {
    for (std::int64_t c = 0; c < C; ++c) out[c] += run[r * C + c];
  }
}

/// v (one value per channel) as the loops over `layout` index it: repeated rows_per_run(C)
/// times for channels-last runs, as it is for NCHW rows.
template <class A>
std::vector<A> per_run(ChannelLayout layout, const std::vector<A>& v) {
  if (layout != ChannelLayout::nhwc) return v;
  const std::int64_t C = static_cast<std::int64_t>(v.size()), R = rows_per_run(C);
  std::vector<A> out(static_cast<std::size_t>(R * C));
  repeat_run(v.data(), C, R, out.data());
  return out;
}

/// `mask` with its per-channel values (MaskSource::input) laid out as the loops over `layout`
/// index them (per_run). `run` points into the vectors held here: a RunMask is not copied.
template <class T>
struct RunMask {
  std::vector<acc_t<T>> mean, scale, shift;
  ReluMask<T> run;

  RunMask(ChannelLayout layout, const ReluMask<T>& mask, std::int64_t C) : run(mask) {
    if (mask.source != MaskSource::input) return;
    const auto lay = [&](const acc_t<T>* v) {
      return per_run(layout, std::vector<acc_t<T>>(v, v + C));
    };
    mean = lay(mask.mean);
    scale = lay(mask.scale);
    shift = lay(mask.shift);
    run.mean = mean.data();
    run.scale = scale.data();
    run.shift = shift.data();
  }
  RunMask(const RunMask&) = delete;
  RunMask& operator=(const RunMask&) = delete;
};

/// body(offset, length, channel_of) over the rows of a dense tensor in `layout` (NCHW: N*C rows
/// of H*W, one channel each; NHWC: runs of rows_per_run(C) rows of C channels, the last run
/// shorter), split over the threads; channel_of(i) indexes element i's per-channel value as
/// per_run lays it out. One counted pass.
template <class Body>
void for_each_channel_row(ChannelLayout layout, std::int64_t N, std::int64_t C, std::int64_t inner,
                          const Body& body) {
  exec::count_launch();
  if (layout == ChannelLayout::nchw) {
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < N * C; ++r) {
      const std::int64_t c = r % C;
      body(r * inner, inner, [c](std::int64_t) { return c; });
    }
  } else {
    const std::int64_t rows = N * inner, K = rows_per_run(C), runs = (rows + K - 1) / K;
#pragma omp parallel for schedule(static)
    for (std::int64_t q = 0; q < runs; ++q) {
      const std::int64_t r0 = q * K, r1 = std::min(rows, r0 + K);
      body(r0 * C, (r1 - r0) * C, [](std::int64_t i) { return i; });
    }
  }
}

/// One counted parallel pass over i < n, split statically: each thread folds its share into a
/// part of its own (make() makes it; body(i, part)), and the parts come back in thread order, so
/// whatever the caller folds from them is fixed for a given thread count.
template <class Make, class Body>
auto per_thread_parts(std::int64_t n, const Make& make, const Body& body) {
  using Part = decltype(make());
  exec::count_launch();
  std::vector<Part> parts;
#pragma omp parallel
  {
#if defined(EMBER_OPENMP)
    const int threads = omp_get_num_threads(), me = omp_get_thread_num();
#else
    const int threads = 1, me = 0;
#endif
#pragma omp single
    parts.resize(static_cast<std::size_t>(threads));
    Part mine = make();
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) body(i, mine);
    parts[static_cast<std::size_t>(me)] = std::move(mine);
  }
  return parts;
}

/// Per-channel sums over the rows of a dense channels-last tensor: each thread sums its runs
/// (rows_per_run(C) rows each) into its own per_run-long accumulators, add(offset, length, parts,
/// stride) adding element i of the run at `offset` into parts[k * stride + i] for each of the K
/// sums; the accumulators are then folded to C values per sum, thread by thread in order.
/// Returned as K*C values, sum k's channel c at k * C + c.
template <class A, class Add>
std::vector<A> channels_last_sums(std::int64_t rows, std::int64_t C, int K, const Add& add) {
  const std::int64_t R = rows_per_run(C), P = R * C, runs = (rows + R - 1) / R;
  const std::vector<std::vector<A>> parts = per_thread_parts(
      runs, [&] { return std::vector<A>(static_cast<std::size_t>(K * P), A(0)); },
      [&](std::int64_t q, std::vector<A>& mine) {
        const std::int64_t r0 = q * R, r1 = std::min(rows, r0 + R);
        add(r0 * C, (r1 - r0) * C, mine.data(), P);
      });
  std::vector<A> total(static_cast<std::size_t>(K * C), A(0));
  for (const std::vector<A>& part : parts) {
    for (int k = 0; k < K; ++k) fold_run(part.data() + k * P, C, R, total.data() + k * C);
  }
  return total;
}

template <class A>
Tensor<A> channel_tensor(const std::vector<A>& v, std::int64_t offset, const Shape& s) {
  Tensor<A> t = empty<A>(s);
  std::copy(v.begin() + offset, v.begin() + offset + s.numel(), t.data());
  return t;
}
}  // namespace ember::ops::detail::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// channel_mean_var for a dense channels-last x: blocks of rows (16 KiB of x, at least 16 rows:
/// the second pass finds the block in L1, or L2 for the widest rows), each block's mean and M2
/// in two passes (each over runs of rows, as channels_last_sums), merged per thread in row order
/// and then in thread order.
template <FloatingElement T>
std::pair<Tensor<acc_t<T>>, Tensor<acc_t<T>>> channels_last_mean_var(const Tensor<T>& x) {
  using A = acc_t<T>;
  const std::int64_t C = x.size(1), rows = x.numel() / C;
  const std::int64_t R = detail::rows_per_run(C), P = R * C;
  const std::int64_t block_elements =
      std::max<std::int64_t>(16 * C, (std::int64_t{16} << 10) / std::int64_t{sizeof(T)});
  const std::int64_t block = std::max<std::int64_t>(1, block_elements / P) * R;
  const std::int64_t blocks = (rows + block - 1) / block;
  const T* px = x.data();
  // A thread's moments, and its scratch: a run's accumulators and the block mean repeated per
  // run, the block's mean and M2.
  struct Part {
    detail::Moments<A> moments;
    std::vector<A> acc, mean_run, block_mean, block_m2;
  };
  const auto make = [&] {
    const auto n = [](std::int64_t k) { return std::vector<A>(static_cast<std::size_t>(k)); };
    return Part{detail::Moments<A>(C), n(P), n(P), n(C), n(C)};
  };
  // Sums f(element, i) over the rows [r0, r1) into C values, run by run.
  const auto sum_rows = [&](Part& t, std::int64_t r0, std::int64_t r1, std::vector<A>& out,
                            const auto& f) {
    A* pa = t.acc.data();
    std::fill(t.acc.begin(), t.acc.end(), A(0));
    for (std::int64_t r = r0; r < r1; r += R) {
      const T* run = px + r * C;
      const std::int64_t len = (std::min(r1, r + R) - r) * C;
#pragma omp simd
      for (std::int64_t i = 0; i < len; ++i) pa[i] += f(to_acc(run[i]), i);
    }
    std::fill(out.begin(), out.end(), A(0));
    detail::fold_run(pa, C, R, out.data());
  };
  const std::vector<Part> parts =
      detail::per_thread_parts(blocks, make, [&](std::int64_t b, Part& t) {
        const std::int64_t r0 = b * block, r1 = std::min(rows, r0 + block);
        const A n = static_cast<A>(r1 - r0);
        sum_rows(t, r0, r1, t.block_mean, [](A v, std::int64_t) { return v; });
        for (A& m : t.block_mean) m /= n;
        detail::repeat_run(t.block_mean.data(), C, R, t.mean_run.data());
        const A* pm = t.mean_run.data();
        sum_rows(t, r0, r1, t.block_m2, [pm](A v, std::int64_t i) {
          const A d = v - pm[i];
          return d * d;
        });
        t.moments.merge(n, t.block_mean.data(), t.block_m2.data());
      });
  detail::Moments<A> total(C);
  for (const Part& part : parts) total.merge(part.moments);
  for (A& v : total.m2) v /= static_cast<A>(total.count);
  const Shape s = detail::channel_shape(x);
  return {detail::channel_tensor(total.mean, 0, s), detail::channel_tensor(total.m2, 0, s)};
}

/// channel_grad_sums for a dense channels-last x and g of x's layout.
template <FloatingElement T>
std::pair<Tensor<acc_t<T>>, Tensor<acc_t<T>>> channels_last_grad_sums(const Tensor<T>& x,
                                                                      const Tensor<T>& g,
                                                                      const Tensor<acc_t<T>>& mean,
                                                                      const Tensor<acc_t<T>>& rstd,
                                                                      const ReluMask<T>& mask) {
  using A = acc_t<T>;
  const std::int64_t C = x.size(1), rows = x.numel() / C;
  const Tensor<A> r = rstd.contiguous();
  const T* px = x.data();
  const T* pg = g.data();
  const Tensor<A> m = mean.contiguous();
  const std::vector<A> mean_run =
      detail::per_run(ChannelLayout::nhwc, std::vector<A>(m.data(), m.data() + C));
  const A* pm = mean_run.data();
  const detail::RunMask<T> run_mask(ChannelLayout::nhwc, mask, C);
  std::vector<A> sums;
  detail::with_mask_source(mask, [&](auto source) {
    sums = detail::channels_last_sums<A>(
        rows, C, 2, [&](std::int64_t o, std::int64_t len, A* s, std::int64_t stride) {
          A* s2 = s + stride;
#pragma omp simd
          for (std::int64_t i = 0; i < len; ++i) {
            const A xi = to_acc(px[o + i]);
            const A gi = detail::relu_masked<decltype(source)::value>(to_acc(pg[o + i]),
                                                                      run_mask.run, o + i, i, xi);
            s[i] += gi;
            s2[i] += gi * (xi - pm[i]);
          }
        });
  });
  std::vector<A> scaled(sums);
  for (std::int64_t c = 0; c < C; ++c) scaled[C + c] *= r.data()[c];
  const Shape s = detail::channel_shape(x);
  return {detail::channel_tensor(scaled, 0, s), detail::channel_tensor(scaled, C, s)};
}

/// y = max((x - mean[c]) scale[c] + shift[c] + residual, 0) (the ReLU when `relu`; residual
/// optional, x's shape and layout), into y of x's layout.
template <FloatingElement T>
void channel_affine(ChannelLayout layout, const Tensor<T>& x, const std::vector<acc_t<T>>& mean,
                    const std::vector<acc_t<T>>& scale, const std::vector<acc_t<T>>& shift,
                    const T* residual, bool relu, T* y) {
  using A = acc_t<T>;
  const std::int64_t N = x.size(0), C = x.size(1), inner = x.size(2) * x.size(3);
  const T* px = x.data();
  const std::vector<A> mean_run = detail::per_run(layout, mean);
  const std::vector<A> scale_run = detail::per_run(layout, scale);
  const std::vector<A> shift_run = detail::per_run(layout, shift);
  const A* pm = mean_run.data();
  const A* ps = scale_run.data();
  const A* pb = shift_run.data();
  // The ReLU is ember's (x < 0 ? 0 : x, so a NaN stays NaN), chosen outside the loops.
  const auto affine = [&](auto with_relu) {
    detail::for_each_channel_row(
        layout, N, C, inner, [&](std::int64_t o, std::int64_t len, auto ch) {
          if (residual) {
#pragma omp simd
            for (std::int64_t i = 0; i < len; ++i) {
              A v = affine_value(to_acc(px[o + i]), pm[ch(i)], ps[ch(i)], pb[ch(i)]) +
                    to_acc(residual[o + i]);
              if constexpr (with_relu) v = v < A(0) ? A(0) : v;
              y[o + i] = to_storage<T>(v);
            }
          } else {
#pragma omp simd
            for (std::int64_t i = 0; i < len; ++i) {
              A v = affine_value(to_acc(px[o + i]), pm[ch(i)], ps[ch(i)], pb[ch(i)]);
              if constexpr (with_relu) v = v < A(0) ? A(0) : v;
              y[o + i] = to_storage<T>(v);
            }
          }
        });
  };
  if (relu) {
    affine(std::true_type{});
  } else {
    affine(std::false_type{});
  }
}

/// dx = a[c] g' + k1[c] (x - mean[c]) + k0[c], g' = g where the ReLU passed (no ReLU: g
/// itself); g' is also written to `g_masked` where that is given. Every tensor in x's layout.
template <FloatingElement T>
void channel_grad_apply(ChannelLayout layout, const Tensor<T>& x, const T* g,
                        const ReluMask<T>& mask, const std::vector<acc_t<T>>& mean,
                        const std::vector<acc_t<T>>& a, const std::vector<acc_t<T>>& k1,
                        const std::vector<acc_t<T>>& k0, T* dx, T* g_masked) {
  using A = acc_t<T>;
  const std::int64_t N = x.size(0), C = x.size(1), inner = x.size(2) * x.size(3);
  const T* px = x.data();
  const std::vector<A> mean_run = detail::per_run(layout, mean), a_run = detail::per_run(layout, a);
  const std::vector<A> k1_run = detail::per_run(layout, k1), k0_run = detail::per_run(layout, k0);
  const A* pm = mean_run.data();
  const A* pa = a_run.data();
  const A* p1 = k1_run.data();
  const A* p0 = k0_run.data();
  const detail::RunMask<T> run_mask(layout, mask, C);
  const auto apply = [&](auto source, auto write_masked) {
    detail::for_each_channel_row(
        layout, N, C, inner, [&](std::int64_t o, std::int64_t len, auto ch) {
#pragma omp simd
          for (std::int64_t i = 0; i < len; ++i) {
            const A xi = to_acc(px[o + i]);
            const A gi = detail::relu_masked<decltype(source)::value>(
                to_acc(g[o + i]), run_mask.run, o + i, ch(i), xi);
            if constexpr (write_masked) g_masked[o + i] = to_storage<T>(gi);
            dx[o + i] = to_storage<T>(pa[ch(i)] * gi + p1[ch(i)] * (xi - pm[ch(i)]) + p0[ch(i)]);
          }
        });
  };
  detail::with_mask_source(mask, [&](auto source) {
    if (g_masked) {
      apply(source, std::true_type{});
    } else {
      apply(source, std::false_type{});
    }
  });
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND
