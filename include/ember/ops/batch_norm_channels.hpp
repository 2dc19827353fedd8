// batch_norm's per-channel sums on the CPU, a channel per thread, for dense NCHW tensors.
//
// A channel of a dense [N, C, H, W] tensor is N contiguous runs of H*W elements, C*H*W apart.
// The general reduction over axes {0, 2, 3} walks it element by element through index
// arithmetic; here each run is one vectorised loop. Each run is summed on its own and the N run
// sums then added in order, which bounds the rounding as a pairwise sum of two levels would.
// The forward's statistics are two sweeps over a channel (mean, then the squared deviations:
// the same two-pass variance as the reductions); the backward's two sums (of g and of g (x -
// mean)) are one sweep over x and g together.
#pragma once

#include <cstdint>
#include <utility>

#include "../core/dtype.hpp"
#include "../core/shape.hpp"
#include "../exec/launch_counter.hpp"
#include "../tensor/factories.hpp"
#include "../tensor/tensor.hpp"
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
/// same shape and dense layout (channel_loop_applies), mean and rstd [1, C, 1, ...]. Returned
/// as [1, C, 1, ...] in the compute type.
template <FloatingElement T>
std::pair<Tensor<acc_t<T>>, Tensor<acc_t<T>>> channel_grad_sums(const Tensor<T>& x,
                                                                const Tensor<T>& g,
                                                                const Tensor<acc_t<T>>& mean,
                                                                const Tensor<acc_t<T>>& rstd) {
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
  detail::for_each_channel(C, inner, [&](std::int64_t c, auto run) {
    const A mc = pm[c];
    A total_g = 0, total_gd = 0;
    for (std::int64_t n = 0; n < N; ++n) {
      const T* xr = px + run(n);
      const T* gr = pg + run(n);
      A part_g = 0, part_gd = 0;
#pragma omp simd reduction(+ : part_g, part_gd)
      for (std::int64_t i = 0; i < inner; ++i) {
        const A gi = to_acc(gr[i]);
        part_g += gi;
        part_gd += gi * (to_acc(xr[i]) - mc);
      }
      total_g += part_g;
      total_gd += part_gd;
    }
    p1[c] = total_g;
    p2[c] = total_gd * pr[c];
  });
  return {sum_g, sum_gxh};
}

}  // namespace ember::ops
