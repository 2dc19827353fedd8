// batch_norm's per-channel loops on the CPU, for dense NCHW and channels-last tensors.
//
// A channel of a dense [N, C, H, W] tensor is N contiguous runs of H*W elements, C*H*W apart.
// The general reduction over axes {0, 2, 3} walks it element by element through index
// arithmetic; here each run is one vectorised loop. Each run is summed on its own and the N run
// sums then added in order, which bounds the rounding as a pairwise sum of two levels would.
// The forward's statistics are two sweeps over a channel (mean, then the squared deviations:
// the same two-pass variance as the reductions); the backward's two sums (of g and of g (x -
// mean)) are one sweep over x and g together.
//
// A dense channels-last tensor is N*H*W rows of C channels: its statistics and gradient sums
// split the rows over the threads, each summing into its own per-channel vector, the vectors
// then added in thread order (fixed for a given thread count, so results do not depend on
// timing). The elementwise passes around the sums, y = relu((x - mean) scale + shift +
// residual) forward and dx = a g' + k1 (x - mean) + k0 backward (g' the gradient masked by the
// ReLU, per-channel constants folded on the host), are plain loops over either layout: the general
// strided executor spent a third of a ResNet step on them, recomputing broadcast indices per
// element.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/shape.hpp"
#include "../../exec/launch_counter.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#if defined(EMBER_OPENMP)
#include <omp.h>
#endif

namespace ember::ops {

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

namespace detail {
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
}  // namespace detail

/// Per-channel mean and biased variance of x (channel_loop_applies), as [1, C, 1, ...] in the
/// compute type.
template <FloatingElement T>
std::pair<Tensor<acc_t<T>>, Tensor<acc_t<T>>> channel_mean_var(const Tensor<T>& x) {
  using A = acc_t<T>;
  const std::int64_t N = x.size(0), C = x.size(1), inner = x.numel() / (N * C);
  const Shape s = detail::channel_shape(x);
  Tensor<A> mean = empty<A>(s), var = empty<A>(s);
  const T* px = x.data();
  A* pm = mean.data();
  A* pv = var.data();
  const A count = static_cast<A>(N * inner);
  detail::for_each_channel(C, inner, [&](std::int64_t c, auto run) {
    A total = 0;
    for (std::int64_t n = 0; n < N; ++n) {
      const T* p = px + run(n);
      A part = 0;
#pragma omp simd reduction(+ : part)
      for (std::int64_t i = 0; i < inner; ++i) part += to_acc(p[i]);
      total += part;
    }
    const A m = total / count;
    A squares = 0;
    for (std::int64_t n = 0; n < N; ++n) {
      const T* p = px + run(n);
      A part = 0;
#pragma omp simd reduction(+ : part)
      for (std::int64_t i = 0; i < inner; ++i) {
        const A d = to_acc(p[i]) - m;
        part += d * d;
      }
      squares += part;
    }
    pm[c] = m;
    pv[c] = squares / count;
  });
  return {mean, var};
}

/// Per-channel sums of g and of g (x - mean) rstd (batch_norm's backward), for x and g of the
/// same shape and dense layout (channel_loop_applies), mean and rstd [1, C, 1, ...]; with
/// `mask` (y of a following ReLU, x's layout) the sums are of g where mask > 0. Returned as
/// [1, C, 1, ...] in the compute type.
template <FloatingElement T>
std::pair<Tensor<acc_t<T>>, Tensor<acc_t<T>>> channel_grad_sums(const Tensor<T>& x,
                                                                const Tensor<T>& g,
                                                                const Tensor<acc_t<T>>& mean,
                                                                const Tensor<acc_t<T>>& rstd,
                                                                const T* mask = nullptr) {
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
  // The mask's test is chosen outside the loops (a null test inside keeps them scalar).
  const auto sums = [&](auto masked) {
    detail::for_each_channel(C, inner, [&](std::int64_t c, auto run) {
      const A mc = pm[c];
      A total_g = 0, total_gd = 0;
      for (std::int64_t n = 0; n < N; ++n) {
        const T* xr = px + run(n);
        const T* gr = pg + run(n);
        const T* mr = mask + (masked ? run(n) : 0);
        A part_g = 0, part_gd = 0;
#pragma omp simd reduction(+ : part_g, part_gd)
        for (std::int64_t i = 0; i < inner; ++i) {
          A gi = to_acc(gr[i]);
          if constexpr (masked) gi = to_acc(mr[i]) > A(0) ? gi : A(0);
          part_g += gi;
          part_gd += gi * (to_acc(xr[i]) - mc);
        }
        total_g += part_g;
        total_gd += part_gd;
      }
      p1[c] = total_g;
      p2[c] = total_gd * pr[c];
    });
  };
  if (mask) {
    sums(std::true_type{});
  } else {
    sums(std::false_type{});
  }
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

namespace detail {
/// body(row, channel_of) over the rows of a dense tensor in `layout` (NCHW: N*C rows of H*W,
/// one channel each; NHWC: N*H*W rows of C, one element per channel), rows split over the
/// threads; channel_of(i) is the channel of element i of the row. One counted pass.
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
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < N * inner; ++r) {
      body(r * C, C, [](std::int64_t i) { return i; });
    }
  }
}

/// Per-thread per-channel partial sums over the rows of a dense channels-last tensor, added in
/// thread order: add(row_offset, parts) adds row `row_offset`'s terms into parts[k * C + c] for
/// each of the K sums.
template <class A, class Add>
std::vector<A> channels_last_sums(std::int64_t rows, std::int64_t C, int K, const Add& add) {
  exec::count_launch();
  std::vector<std::vector<A>> parts;
#pragma omp parallel
  {
#if defined(EMBER_OPENMP)
    const int threads = omp_get_num_threads(), me = omp_get_thread_num();
#else
    const int threads = 1, me = 0;
#endif
#pragma omp single
    parts.resize(static_cast<std::size_t>(threads));
    std::vector<A> mine(static_cast<std::size_t>(K * C), A(0));
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) add(r * C, mine.data());
    parts[static_cast<std::size_t>(me)] = std::move(mine);
  }
  std::vector<A> total(static_cast<std::size_t>(K * C), A(0));
  for (const std::vector<A>& part : parts) {
    for (std::size_t i = 0; i < total.size(); ++i) total[i] += part[i];
  }
  return total;
}

template <class A>
Tensor<A> channel_tensor(const std::vector<A>& v, std::int64_t offset, const Shape& s) {
  Tensor<A> t = empty<A>(s);
  std::copy(v.begin() + offset, v.begin() + offset + s.numel(), t.data());
  return t;
}
}  // namespace detail

/// channel_mean_var for a dense channels-last x.
template <FloatingElement T>
std::pair<Tensor<acc_t<T>>, Tensor<acc_t<T>>> channels_last_mean_var(const Tensor<T>& x) {
  using A = acc_t<T>;
  const std::int64_t C = x.size(1), rows = x.numel() / C;
  const T* px = x.data();
  const std::vector<A> sums = detail::channels_last_sums<A>(rows, C, 1, [&](std::int64_t o, A* s) {
#pragma omp simd
    for (std::int64_t c = 0; c < C; ++c) s[c] += to_acc(px[o + c]);
  });
  std::vector<A> mean(static_cast<std::size_t>(C));
  for (std::int64_t c = 0; c < C; ++c) mean[c] = sums[c] / static_cast<A>(rows);
  const A* pm = mean.data();
  const std::vector<A> squares =
      detail::channels_last_sums<A>(rows, C, 1, [&](std::int64_t o, A* s) {
#pragma omp simd
        for (std::int64_t c = 0; c < C; ++c) {
          const A d = to_acc(px[o + c]) - pm[c];
          s[c] += d * d;
        }
      });
  std::vector<A> var(static_cast<std::size_t>(C));
  for (std::int64_t c = 0; c < C; ++c) var[c] = squares[c] / static_cast<A>(rows);
  const Shape s = detail::channel_shape(x);
  return {detail::channel_tensor(mean, 0, s), detail::channel_tensor(var, 0, s)};
}

/// channel_grad_sums for a dense channels-last x and g of x's layout; with `mask` (y of a
/// following ReLU, same layout) the sums are of g where mask > 0.
template <FloatingElement T>
std::pair<Tensor<acc_t<T>>, Tensor<acc_t<T>>> channels_last_grad_sums(const Tensor<T>& x,
                                                                      const Tensor<T>& g,
                                                                      const Tensor<acc_t<T>>& mean,
                                                                      const Tensor<acc_t<T>>& rstd,
                                                                      const T* mask) {
  using A = acc_t<T>;
  const std::int64_t C = x.size(1), rows = x.numel() / C;
  const Tensor<A> m = mean.contiguous(), r = rstd.contiguous();
  const T* px = x.data();
  const T* pg = g.data();
  const A* pm = m.data();
  const auto sum_rows = [&](auto masked) {
    return detail::channels_last_sums<A>(rows, C, 2, [&](std::int64_t o, A* s) {
      A* s2 = s + C;
#pragma omp simd
      for (std::int64_t c = 0; c < C; ++c) {
        A gi = to_acc(pg[o + c]);
        if constexpr (masked) gi = to_acc(mask[o + c]) > A(0) ? gi : A(0);
        s[c] += gi;
        s2[c] += gi * (to_acc(px[o + c]) - pm[c]);
      }
    });
  };
  const std::vector<A> sums = mask ? sum_rows(std::true_type{}) : sum_rows(std::false_type{});
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
  const A* pm = mean.data();
  const A* ps = scale.data();
  const A* pb = shift.data();
  // The ReLU is ember's (x < 0 ? 0 : x, so a NaN stays NaN), chosen outside the loops.
  const auto affine = [&](auto with_relu) {
    detail::for_each_channel_row(
        layout, N, C, inner, [&](std::int64_t o, std::int64_t len, auto ch) {
          if (residual) {
#pragma omp simd
            for (std::int64_t i = 0; i < len; ++i) {
              A v =
                  (to_acc(px[o + i]) - pm[ch(i)]) * ps[ch(i)] + pb[ch(i)] + to_acc(residual[o + i]);
              if constexpr (with_relu) v = v < A(0) ? A(0) : v;
              y[o + i] = to_storage<T>(v);
            }
          } else {
#pragma omp simd
            for (std::int64_t i = 0; i < len; ++i) {
              A v = (to_acc(px[o + i]) - pm[ch(i)]) * ps[ch(i)] + pb[ch(i)];
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

/// dx = a[c] g' + k1[c] (x - mean[c]) + k0[c], g' = g where mask > 0 (mask null: g itself);
/// with a mask, g' is also written to `g_masked`. Every tensor in x's layout.
template <FloatingElement T>
void channel_grad_apply(ChannelLayout layout, const Tensor<T>& x, const T* g, const T* mask,
                        const std::vector<acc_t<T>>& mean, const std::vector<acc_t<T>>& a,
                        const std::vector<acc_t<T>>& k1, const std::vector<acc_t<T>>& k0, T* dx,
                        T* g_masked) {
  using A = acc_t<T>;
  const std::int64_t N = x.size(0), C = x.size(1), inner = x.size(2) * x.size(3);
  const T* px = x.data();
  const A* pm = mean.data();
  const A* pa = a.data();
  const A* p1 = k1.data();
  const A* p0 = k0.data();
  const auto apply = [&](auto masked) {
    detail::for_each_channel_row(
        layout, N, C, inner, [&](std::int64_t o, std::int64_t len, auto ch) {
#pragma omp simd
          for (std::int64_t i = 0; i < len; ++i) {
            A gi = to_acc(g[o + i]);
            if constexpr (masked) {
              gi = to_acc(mask[o + i]) > A(0) ? gi : A(0);
              g_masked[o + i] = to_storage<T>(gi);
            }
            dx[o + i] = to_storage<T>(pa[ch(i)] * gi + p1[ch(i)] * (to_acc(px[o + i]) - pm[ch(i)]) +
                                      p0[ch(i)]);
          }
        });
  };
  if (mask) {
    apply(std::true_type{});
  } else {
    apply(std::false_type{});
  }
}

}  // namespace ember::ops
