// Layer normalisation one row at a time: the kernels behind layer_norm (over contiguous trailing
// dimensions) and dropout_add_layer_norm, forward and backward, on both devices.
//
// Each row is read and written by one thread (CPU) or one warp (CUDA) through
// exec::for_each_row, in three sweeps while it is in cache: the input (with a residual and a
// dropout fused in: s = keep(x) / (1 - p) + residual, kept for the backward), its mean and
// variance (two-pass, biased), then y. A reduction-based layer norm reads the input three times
// from memory and launches three times. Dropout draws the same Philox numbers as ember::dropout
// (element i of x keeps when uniform(seed, offset, i) >= p), one block per four elements.
//   forward   y = (s - mean) rstd w + b,  rstd = 1 / sqrt(var + eps)   (s = x without extras)
//   backward  ds = rstd (dxh - mean(dxh) - xh mean(dxh xh)),  dxh = g w,  xh = (s - mean) rstd
//             dresidual = ds,  dx = keep(ds) / (1 - p),  dw = sum_rows(g xh),  db = sum_rows(g)
// The backward is one row pass for dx (and dresidual) and one column reduction each for dw, db.
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/philox.hpp"
#include "../../core/shape.hpp"
#include "../../exec/for_each_row.hpp"
#include "../../exec/reduce.hpp"
#include "../../expr/math.hpp"
#include "../../expr/operators.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "../dropout.hpp"

namespace ember::ops::inline EMBER_UNIT_KIND {

/// The longest row a CUDA warp normalises; longer rows (few and long: a warp each would leave
/// the GPU idle) take the reduction path of normalization.hpp. The CPU has no limit.
inline constexpr std::int64_t kRowNormMaxCudaCols = 32768;

/// What the backward reads: the rows it normalised (the sum when a residual or a dropout was
/// fused, else the input itself), each row's mean and rstd in the compute type, the dropout.
template <FloatingElement T>
struct RowNormSaved {
  Tensor<T> input;
  Tensor<acc_t<T>> mean, rstd;  // [rows]
  std::int64_t cols = 0;
  DropoutOptions dropout;
};

/// f(j, u) for the elements j of a row (starting at element `base` of the whole tensor) that
/// lane `lane` of `lanes` owns, u the dropout's uniform of element base + j. On the CPU the
/// uniforms come a stretch at a time (philox_uniforms, a vectorised loop) before a plain loop
/// over the stretch; on CUDA a block of four serves each lane's run of four.
template <class F>
EMBER_HD EMBER_FORCEINLINE void for_each_uniform(const DropoutOptions& d, std::int64_t base,
                                                 std::int64_t cols, int lane, int lanes, F&& f) {
#if !defined(__CUDA_ARCH__)
  if (lanes == 1) {
    constexpr std::int64_t kStretch = 256;
    float u[kStretch];
    for (std::int64_t j0 = 0; j0 < cols; j0 += kStretch) {
      const std::int64_t n = cols - j0 < kStretch ? cols - j0 : kStretch;
      philox_uniforms(d.seed, d.offset, static_cast<std::uint64_t>(base + j0), n, u);
      for (std::int64_t k = 0; k < n; ++k) f(j0 + k, u[k]);
    }
    return;
  }
#endif
  PhiloxUniformCursor uniform{d.seed, d.offset};
  exec::for_lane_elements(cols, lane, lanes, [&](std::int64_t j) {
    f(j, uniform(static_cast<std::uint64_t>(base + j)));
  });
}

/// A row kernel's dropout: its Philox stream, p as float (the comparison ember::dropout makes)
/// and the kept elements' scale, 1 / (1 - p) in the compute type (0 when everything is dropped).
template <class A>
struct RowDropout {
  DropoutOptions options;
  float p;
  A scale;

  static RowDropout from(const DropoutOptions& d) {
    return {d, static_cast<float>(d.p), d.p < 1 ? A(1.0 / (1.0 - d.p)) : A(0)};
  }
  /// Whether it drops anything (p = 0: the kernels skip the uniforms).
  EMBER_HD bool active() const { return p != 0; }
  /// v after dropout, for an element whose uniform is u.
  EMBER_HD A apply(float u, A v) const { return u >= p ? v * scale : A(0); }
  /// f(j, u) over the lane's elements of a row starting at `base` (for_each_uniform).
  template <class F>
  EMBER_HD EMBER_FORCEINLINE void for_each(std::int64_t base, std::int64_t cols, int lane,
                                           int lanes, F&& f) const {
    for_each_uniform(options, base, cols, lane, lanes, static_cast<F&&>(f));
  }
};

/// The forward row kernel. residual, w and b may be null; sum is null when there is nothing to
/// add or drop (the rows are x itself).
template <FloatingElement T>
struct RowNormForward {
  using A = acc_t<T>;
  const T* x;
  const T* residual;
  const T* w;
  const T* b;
  T* sum;
  T* y;
  A* mean;
  A* rstd;
  std::int64_t cols;
  RowDropout<A> dropout;
  A eps;

  template <class Across>
  EMBER_HD void row(std::int64_t r, int lane, int lanes, Across across) const {
    const std::int64_t base = r * cols;
    if (sum != nullptr) form_sum(base, lane, lanes);
    const T* s = sum != nullptr ? sum : x;  // the rows normalised
    A total = 0, unused = 0;
    exec::lane_sums(cols, lane, lanes, total, unused, [&](std::int64_t j) {
      return exec::RowSums<A>{to_acc(s[base + j]), A(0)};
    });
    const A m = across.sum(total) / static_cast<A>(cols);
    A squares = 0;
    exec::lane_sums(cols, lane, lanes, squares, unused, [&](std::int64_t j) {
      const A d = to_acc(s[base + j]) - m;
      return exec::RowSums<A>{d * d, A(0)};
    });
    const A rs = math::rsqrt(across.sum(squares) / static_cast<A>(cols) + eps);
    exec::with_flag(w != nullptr, [&](auto has_w) {
      exec::with_flag(b != nullptr, [&](auto has_b) {
        exec::for_lane_elements(cols, lane, lanes, [&](std::int64_t j) {
          A v = (to_acc(s[base + j]) - m) * rs;
          if constexpr (decltype(has_w)::value) v *= to_acc(w[j]);
          if constexpr (decltype(has_b)::value) v += to_acc(b[j]);
          y[base + j] = to_storage<T>(v);
        });
      });
    });
    if (lane == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
  }

  /// s = keep(x) / (1 - p) + residual into `sum`, rounded to T.
  EMBER_HD void form_sum(std::int64_t base, int lane, int lanes) const {
    exec::with_flag(residual != nullptr, [&](auto has_residual) {
      auto res = [&](std::int64_t j) {
        if constexpr (decltype(has_residual)::value) {
          return to_acc(residual[base + j]);
        } else {
          return A(0);
        }
      };
      if (!dropout.active()) {
        exec::for_lane_elements(cols, lane, lanes, [&](std::int64_t j) {
          sum[base + j] = to_storage<T>(to_acc(x[base + j]) + res(j));
        });
        return;
      }
      // An explicit fma, so that the sum rounds the same on both devices (nvcc would contract
      // x * scale + residual on its own; the host compiler would not).
      dropout.for_each(base, cols, lane, lanes, [&](std::int64_t j, float u) {
        const A v = to_acc(x[base + j]), rj = res(j);
        sum[base + j] = to_storage<T>(u >= dropout.p ? math::fma(v, dropout.scale, rj) : rj);
      });
    });
  }
};

/// The backward row kernel: dx (through the dropout) and, when gresidual is not null, the
/// residual's gradient. w may be null.
template <FloatingElement T>
struct RowNormBackward {
  using A = acc_t<T>;
  const T* g;
  const T* s;
  const T* w;
  const A* mean;
  const A* rstd;
  T* gresidual;
  T* gx;
  std::int64_t cols;
  RowDropout<A> dropout;

  template <class Across>
  EMBER_HD void row(std::int64_t r, int lane, int lanes, Across across) const {
    exec::with_flag(w != nullptr, [&](auto has_w) {
      exec::with_flag(gresidual != nullptr, [&](auto has_gresidual) {
        row_as<decltype(has_w)::value, decltype(has_gresidual)::value>(r, lane, lanes, across);
      });
    });
  }

  template <bool HasW, bool HasGResidual, class Across>
  EMBER_HD void row_as(std::int64_t r, int lane, int lanes, Across across) const {
    const std::int64_t base = r * cols;
    const A m = mean[r], rs = rstd[r];
    auto dxh = [&](std::int64_t j) {
      if constexpr (HasW) {
        return to_acc(g[base + j]) * to_acc(w[j]);
      } else {
        return to_acc(g[base + j]);
      }
    };
    A m1 = 0, m2 = 0;
    exec::lane_sums(cols, lane, lanes, m1, m2, [&](std::int64_t j) {
      const A d = dxh(j);
      return exec::RowSums<A>{d, d * ((to_acc(s[base + j]) - m) * rs)};
    });
    m1 = across.sum(m1) / static_cast<A>(cols);
    m2 = across.sum(m2) / static_cast<A>(cols);
    auto ds = [&](std::int64_t j) {
      const A xh = (to_acc(s[base + j]) - m) * rs;
      const A d = rs * (dxh(j) - m1 - xh * m2);
      if constexpr (HasGResidual) gresidual[base + j] = to_storage<T>(d);
      return d;
    };
    if (!dropout.active()) {
      exec::for_lane_elements(cols, lane, lanes,
                              [&](std::int64_t j) { gx[base + j] = to_storage<T>(ds(j)); });
      return;
    }
    dropout.for_each(base, cols, lane, lanes, [&](std::int64_t j, float u) {
      gx[base + j] = to_storage<T>(dropout.apply(u, ds(j)));
    });
  }
};

template <FloatingElement T>
const T* data_or_null(const Tensor<T>& t) {
  return t.defined() ? t.data() : nullptr;
}

/// A weight or bias of any shape with `cols` elements as [cols] (undefined stays undefined).
template <FloatingElement T>
Tensor<T> as_row_param(const Tensor<T>& p, std::int64_t cols) {
  return p.defined() ? p.contiguous().reshape(Shape{cols}) : p;
}

/// Whether layer_norm of x over its last `cols` elements runs as rows here.
template <FloatingElement T>
bool row_norm_applies(const Tensor<T>& x, std::int64_t cols) {
  return x.numel() > 0 && (x.device().is_cpu() || cols <= kRowNormMaxCudaCols);
}

/// y = layer_norm(keep(x) / (1 - p) + residual) over rows of `cols` (the trailing elements),
/// and what the backward needs. residual, weight and bias ([cols] elements) are optional;
/// the shapes were checked by the caller.
template <FloatingElement T>
std::tuple<Tensor<T>, RowNormSaved<T>> row_norm_forward(const Tensor<T>& x,
                                                        const Tensor<T>& residual,
                                                        const Tensor<T>& weight,
                                                        const Tensor<T>& bias, std::int64_t cols,
                                                        double eps, const DropoutOptions& dropout) {
  using A = acc_t<T>;
  const std::int64_t rows = cols > 0 ? x.numel() / cols : 0;
  const Device device = x.device();
  const Tensor<T> xc = x.contiguous();
  const Tensor<T> rc = residual.defined() ? residual.contiguous() : residual;
  const Tensor<T> wc = weight.defined() ? weight.contiguous() : weight;
  const Tensor<T> bc = bias.defined() ? bias.contiguous() : bias;
  const bool fused = residual.defined() || dropout.p > 0;
  Tensor<T> y = empty<T>(x.shape(), device);
  RowNormSaved<T> saved{fused ? empty<T>(x.shape(), device) : xc, empty<A>(Shape{rows}, device),
                        empty<A>(Shape{rows}, device), cols, dropout};
  const RowNormForward<T> f{xc.data(),
                            data_or_null(rc),
                            data_or_null(wc),
                            data_or_null(bc),
                            fused ? saved.input.data() : nullptr,
                            y.data(),
                            saved.mean.data(),
                            saved.rstd.data(),
                            cols,
                            RowDropout<A>::from(dropout),
                            static_cast<A>(eps)};
  if (x.numel() > 0) exec::for_each_row<RowNormForward<T>>(f, rows, cols, device);
  return {y, saved};
}

/// A layer norm's parameter gradients on the CPU, dw = sum_rows(g xh) and db = sum_rows(g) (each
/// where asked for: non-null), in one pass over g and x: chunks of rows in parallel, each
/// reading a row's mean and rstd once, then the chunks' sums in chunk order. The chunks are the
/// column reductions' (exec::cpu::column_chunk_rows): the sums' order depends on the shape, not
/// on the thread count. (As a column reduction of the expression, each element's row was
/// recomputed from its index, in two passes: docs/benchmarks.md, "A user's own model".)
template <FloatingElement T>
void row_norm_param_grads_on_host(const T* g, const T* x, const acc_t<T>* mean,
                                  const acc_t<T>* rstd, std::int64_t rows, std::int64_t cols, T* gw,
                                  T* gb) {
  using A = acc_t<T>;
  const std::int64_t chunk = exec::cpu::column_chunk_rows(std::min(cols, exec::cpu::kColumnBlock));
  const std::int64_t chunks = (rows + chunk - 1) / chunk;
  std::vector<A> partial(static_cast<std::size_t>(2 * chunks * cols));
#pragma omp parallel for schedule(static) if (rows * cols >= exec::cpu::kParallelThreshold && \
                                              chunks > 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    A* pw = partial.data() + 2 * c * cols;
    A* pb = pw + cols;
    for (std::int64_t r = c * chunk; r < std::min(rows, (c + 1) * chunk); ++r) {
      const T* gr = g + r * cols;
      const T* xr = x + r * cols;
      const A m = mean[r], s = rstd[r];
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) {
        const A gj = to_acc(gr[j]);
        pw[j] += gj * ((to_acc(xr[j]) - m) * s);
        pb[j] += gj;
      }
    }
  }
  for (std::int64_t j = 0; j < cols; ++j) {
    A sw = 0, sb = 0;
    for (std::int64_t c = 0; c < chunks; ++c) {
      sw += partial[static_cast<std::size_t>(2 * c * cols + j)];
      sb += partial[static_cast<std::size_t>((2 * c + 1) * cols + j)];
    }
    if (gw) gw[j] = to_storage<T>(sw);
    if (gb) gb[j] = to_storage<T>(sb);
  }
}

/// The gradients of x, residual (when `residual_grad`), weight and bias (when given: weight
/// defined, has_bias) from the output's gradient g; the parameters' come back as [cols].
template <FloatingElement T>
std::tuple<Tensor<T>, Tensor<T>, Tensor<T>, Tensor<T>> row_norm_backward(
    const Tensor<T>& g, const RowNormSaved<T>& saved, const Tensor<T>& weight, bool has_bias,
    bool residual_grad) {
  using A = acc_t<T>;
  const Shape& shape = saved.input.shape();
  const std::int64_t rows = saved.mean.numel(), cols = saved.cols;
  const Device device = saved.input.device();
  const Tensor<T> gc = g.contiguous();
  const Tensor<T> wc = weight.defined() ? weight.contiguous() : weight;
  Tensor<T> gx = empty<T>(shape, device);
  Tensor<T> gres = residual_grad ? empty<T>(shape, device) : Tensor<T>();
  const RowNormBackward<T> f{gc.data(),
                             saved.input.data(),
                             data_or_null(wc),
                             saved.mean.data(),
                             saved.rstd.data(),
                             residual_grad ? gres.data() : nullptr,
                             gx.data(),
                             cols,
                             RowDropout<A>::from(saved.dropout)};
  if (rows > 0) exec::for_each_row<RowNormBackward<T>>(f, rows, cols, device);
  // The parameters' gradients sum over the rows: column reductions of [rows, cols] views.
  Tensor<T> gw, gb;
  if (device.is_cpu() && (weight.defined() || has_bias)) {
    if (weight.defined()) gw = empty<T>(Shape{cols}, device);
    if (has_bias) gb = empty<T>(Shape{cols}, device);
    exec::count_launch();
    row_norm_param_grads_on_host(gc.data(), saved.input.data(), saved.mean.data(),
                                 saved.rstd.data(), rows, cols, gw.defined() ? gw.data() : nullptr,
                                 gb.defined() ? gb.data() : nullptr);
    return {gx, gres, gw, gb};
  }
  const Tensor<T> g2 = gc.reshape(Shape{rows, cols});
  if (weight.defined()) {
    const auto xh = (saved.input.reshape(Shape{rows, cols}) - saved.mean.reshape(Shape{rows, 1})) *
                    saved.rstd.reshape(Shape{rows, 1});
    gw = exec::reduce_expression<T>(g2 * xh, reduce::Bound<reduce::Sum<A>>{}, "layer_norm", Dims{0},
                                    false, true);
  }
  if (has_bias) {
    gb = exec::reduce_expression<T>(expr::Leaf<T>(g2), reduce::Bound<reduce::Sum<A>>{},
                                    "layer_norm", Dims{0}, false, true);
  }
  return {gx, gres, gw, gb};
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND
