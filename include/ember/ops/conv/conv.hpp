// conv2d on Tensors: PyTorch's 2-D convolution (cross-correlation) with stride, padding,
// dilation and groups, and its backward passes.
//
//   conv2d(x [N, C, H, W], w [O, C/groups, KH, KW], opt)          -> [N, O, OH, OW]
//   conv2d(x, w, bias [O], opt)
//   OH = (H + 2 pad_h - dil_h (KH - 1) - 1) / stride_h + 1, likewise OW
// The memory format comes from the strides: a channels-last x (x.contiguous(
// MemoryFormat::channels_last)) gives a channels-last result, and cuDNN runs NHWC on tensor cores.
// CPU: oneDNN's JIT kernels for float, and for bf16 where the CPU has AVX512-BF16
// (ops/conv/conv_dnnl.hpp), when this build found oneDNN; otherwise, and for double, half and the
// shapes oneDNN has no fast kernel for, im2col + GEMM (ops/conv/conv_backend.hpp says which ran).
// im2col + GEMM: NCHW: im2col reading x through its strides (none at all for a 1x1, stride-1,
// unpadded kernel, whose columns are x itself), one GEMM per image and group
// (ops/matmul/gemm_cpu.hpp); backward: the transposed GEMM and col2im for the input, GEMMs
// accumulated over the batch for the weight, a reduction for the bias. Channels-last: the same with
// the column matrix transposed, writing NHWC directly (ops/conv/conv_channels_last.hpp). bf16 and
// half are widened to float and rounded once. CUDA: cuDNN (ops/conv/conv_cudnn.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/shape.hpp"
#include "../../exec/assign.hpp"
#include "../../exec/generate.hpp"
#include "../../exec/reduce.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "../matmul/gemm_cpu.hpp"
#include "conv_backend.hpp"
#include "conv_channels_last.hpp"
#include "conv_geometry.hpp"
#include "conv_image_loop.hpp"
#if defined(EMBER_WITH_CUDNN)
#include "conv_cudnn.hpp"
#endif
#if defined(EMBER_WITH_DNNL)
#include "conv_dnnl.hpp"
#endif

namespace ember::ops::cpu::inline EMBER_UNIT_KIND {

/// The output columns [lo, hi) whose input column ow * stride - pad + k * dil lies inside
/// [0, W): the rest read padding. Computed once per kernel column, so the copy loops have no
/// bounds test and vectorise.
inline std::pair<std::int64_t, std::int64_t> valid_columns(std::int64_t OW, std::int64_t W,
                                                           std::int64_t stride, std::int64_t pad,
                                                           std::int64_t k, std::int64_t dil) {
  const std::int64_t first = pad - k * dil;  // ow * stride >= first
  const std::int64_t lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  const std::int64_t last = W - 1 + pad - k * dil;  // ow * stride <= last
  const std::int64_t hi = last < 0 ? 0 : std::min(OW, last / stride + 1);
  return {std::min(lo, OW), std::max(hi, std::min(lo, OW))};
}

/// col[(c, kh, kw), (oh, ow)] = x[n, c0 + c, ...] for the `cg` channels of one group of image n
/// (0 in the padding). x is read through its strides.
template <class T>
void im2col(const T* x, const Strides& xs, const ConvGeometry& g, std::int64_t n, std::int64_t c0,
            T* col) {
  const std::int64_t cg = g.cg(), P = g.OH * g.OW;
  // Plain variables, not structured bindings: those cannot be used in OpenMP regions by every
  // compiler (clang 14).
  const std::int64_t sh = g.opt.stride[0], sw = g.opt.stride[1];
  const std::int64_t ph = g.opt.padding[0], pw = g.opt.padding[1];
  const std::int64_t dh = g.opt.dilation[0], dw = g.opt.dilation[1];
#pragma omp parallel for schedule(static) if (cg * g.KH * g.KW * P >= (1 << 15))
  for (std::int64_t r = 0; r < cg * g.KH * g.KW; ++r) {
    const std::int64_t c = r / (g.KH * g.KW), kh = r / g.KW % g.KH, kw = r % g.KW;
    const T* xc = x + n * xs[0] + (c0 + c) * xs[1];
    T* out = col + r * P;
    const auto [lo, hi] = valid_columns(g.OW, g.W, sw, pw, kw, dw);
    const std::int64_t iw0 = -pw + kw * dw;  // the input column of ow = 0
    for (std::int64_t oh = 0; oh < g.OH; ++oh) {
      const std::int64_t ih = oh * sh - ph + kh * dh;
      T* row = out + oh * g.OW;
      if (ih < 0 || ih >= g.H) {
        std::fill(row, row + g.OW, T(0));
        continue;
      }
      std::fill(row, row + lo, T(0));
      if (lo < hi) {
        const T* xr = xc + ih * xs[2] + (iw0 + lo * sw) * xs[3];  // input of column lo
        if (sw == 1 && xs[3] == 1) {
          std::copy(xr, xr + (hi - lo), row + lo);
        } else {
          const std::int64_t step = sw * xs[3];
          for (std::int64_t ow = lo; ow < hi; ++ow) row[ow] = xr[(ow - lo) * step];
        }
      }
      std::fill(row + hi, row + g.OW, T(0));
    }
  }
}

/// The adjoint of im2col: dx[n, c0 + c, ...] += col[(c, kh, kw), (oh, ow)]. Parallel over
/// channels, each of which only its own rows of col touch; dx is dense NCHW.
template <class T>
void col2im(const T* col, const ConvGeometry& g, std::int64_t n, std::int64_t c0, T* dx) {
  const std::int64_t cg = g.cg(), P = g.OH * g.OW;
  // Plain variables, not structured bindings: those cannot be used in OpenMP regions by every
  // compiler (clang 14).
  const std::int64_t sh = g.opt.stride[0], sw = g.opt.stride[1];
  const std::int64_t ph = g.opt.padding[0], pw = g.opt.padding[1];
  const std::int64_t dh = g.opt.dilation[0], dw = g.opt.dilation[1];
#pragma omp parallel for schedule(static) if (cg * g.KH * g.KW * P >= (1 << 15))
  for (std::int64_t c = 0; c < cg; ++c) {
    T* xc = dx + ((n * g.C) + c0 + c) * g.H * g.W;
    for (std::int64_t k = 0; k < g.KH * g.KW; ++k) {
      const std::int64_t kh = k / g.KW, kw = k % g.KW;
      const T* in = col + (c * g.KH * g.KW + k) * P;
      const auto [lo, hi] = valid_columns(g.OW, g.W, sw, pw, kw, dw);
      const std::int64_t iw0 = -pw + kw * dw;
      for (std::int64_t oh = 0; oh < g.OH; ++oh) {
        const std::int64_t ih = oh * sh - ph + kh * dh;
        if (ih < 0 || ih >= g.H) continue;
        if (lo >= hi) continue;
        T* xr = xc + ih * g.W + iw0 + lo * sw;  // input of column lo
        const T* cr = in + oh * g.OW;
        for (std::int64_t ow = lo; ow < hi; ++ow) xr[(ow - lo) * sw] += cr[ow];
      }
    }
  }
}

/// Whether im2col of x is x itself: a 1x1 kernel, stride 1, no padding, over a dense NCHW input
/// (then a group's columns are its channels' contiguous [cg, H*W] slab, read in place).
template <class T>
bool im2col_is_identity(const Tensor<T>& x, const ConvGeometry& g) {
  return g.KH == 1 && g.KW == 1 && g.opt.stride[0] == 1 && g.opt.stride[1] == 1 &&
         g.opt.padding[0] == 0 && g.opt.padding[1] == 0 && !g.channels_last && x.is_contiguous();
}

/// y = conv(x, w) for float or double over an NCHW x (any strides); y dense NCHW.
template <class T>
void conv_forward(const Tensor<T>& x, const Tensor<T>& w, const ConvGeometry& g,
                  const Tensor<T>& y) {
  const Tensor<T> wc = w.contiguous();
  const std::int64_t K = g.cg() * g.KH * g.KW, P = g.OH * g.OW;
  const bool pointwise = im2col_is_identity(x, g);
  for_each_conv_image<T>(
      g, pointwise ? 0 : K * P, 0, [&](std::int64_t n, std::int64_t gr, T* col, T*, bool) {
        const T* cols = pointwise ? x.data() + (n * g.C + gr * g.cg()) * P : col;
        if (!pointwise) im2col(x.data(), x.strides(), g, n, gr * g.cg(), col);
        const MatrixView<const T> a{wc.data() + gr * g.og() * K, g.og(), K, K, 1};
        const MatrixView<const T> b{cols, K, P, P, 1};
        T* out = y.data() + (n * g.O + gr * g.og()) * P;
        gemm<T>(a, b, MatrixView<T>{out, g.og(), P, P, 1}, T(1), T(0));
      });
}

/// dx (dense NCHW, zeroed here) and dw (dense) of conv(x, w) given dy, for an NCHW x (any
/// strides); each only when its pointer is not null.
template <class T>
void conv_backward(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>& dy,
                   const ConvGeometry& g, T* dx, T* dw) {
  const Tensor<T> wc = w.contiguous();
  const Tensor<T> dyc = dy.contiguous();  // [N, O, OH, OW] dense
  const std::int64_t K = g.cg() * g.KH * g.KW, P = g.OH * g.OW;
  if (dx) std::fill(dx, dx + g.N * g.C * g.H * g.W, T(0));
  const bool pointwise = im2col_is_identity(x, g);
  const std::vector<T> dw_sum = for_each_conv_image<T>(
      g, pointwise ? 0 : K * P, dw ? g.O * K : 0,
      [&](std::int64_t n, std::int64_t gr, T* col, T* dw_part, bool first) {
        const std::int64_t c0 = gr * g.cg();
        const T* dyb = dyc.data() + (n * g.O + gr * g.og()) * P;
        if (dw_part) {
          // dW_g += dy_g [og, P] col^T [P, K]
          const T* cols = pointwise ? x.data() + (n * g.C + c0) * P : col;
          if (!pointwise) im2col(x.data(), x.strides(), g, n, c0, col);
          gemm<T>(MatrixView<const T>{dyb, g.og(), P, P, 1}, MatrixView<const T>{cols, P, K, 1, P},
                  MatrixView<T>{dw_part + gr * g.og() * K, g.og(), K, K, 1}, T(1),
                  first ? T(0) : T(1));
        }
        if (dx) {
          // dcol = W_g^T [K, og] dy_g [og, P], then scattered back (pointwise: dcol is the
          // group's slab of dx itself).
          T* dcol = pointwise ? dx + (n * g.C + c0) * P : col;
          gemm<T>(MatrixView<const T>{wc.data() + gr * g.og() * K, K, g.og(), 1, K},
                  MatrixView<const T>{dyb, g.og(), P, P, 1}, MatrixView<T>{dcol, K, P, P, 1}, T(1),
                  T(0));
          if (!pointwise) col2im(col, g, n, c0, dx);
        }
      });
  if (dw) std::copy(dw_sum.begin(), dw_sum.end(), dw);
}

/// Whether oneDNN takes this CPU convolution of T: the build has it, it is the chosen backend,
/// and it runs T natively (bf16 only on AVX512-BF16; the callers widen bf16 to float elsewhere).
template <class T>
bool onednn_takes() {
#if defined(EMBER_WITH_DNNL)
  if constexpr (onednn::kSupported<T>) {
    return cpu_conv_backend() == ConvBackend::onednn &&
           (std::is_same_v<T, float> || onednn::cpu_has_bf16());
  }
#endif
  return false;
}

/// The three passes on oneDNN: each false, with nothing done, where onednn_takes<T>() is false or
/// oneDNN has only a reference implementation for the shape.
template <class T>
bool onednn_forward([[maybe_unused]] const Tensor<T>& x, [[maybe_unused]] const Tensor<T>& w,
                    [[maybe_unused]] const ConvGeometry& g, [[maybe_unused]] const Tensor<T>& y) {
#if defined(EMBER_WITH_DNNL)
  if constexpr (onednn::kSupported<T>) {
    return onednn_takes<T>() && onednn::conv_forward(x, w, g, y);
  }
#endif
  return false;
}
template <class T>
bool onednn_backward_data([[maybe_unused]] const Tensor<T>& w, [[maybe_unused]] const Tensor<T>& dy,
                          [[maybe_unused]] const ConvGeometry& g,
                          [[maybe_unused]] const Tensor<T>& dx) {
#if defined(EMBER_WITH_DNNL)
  if constexpr (onednn::kSupported<T>) {
    return onednn_takes<T>() && onednn::conv_backward_data(w, dy, g, dx);
  }
#endif
  return false;
}
template <class T>
bool onednn_backward_weights([[maybe_unused]] const Tensor<T>& x,
                             [[maybe_unused]] const Tensor<T>& dy,
                             [[maybe_unused]] const ConvGeometry& g,
                             [[maybe_unused]] const Tensor<T>& dw) {
#if defined(EMBER_WITH_DNNL)
  if constexpr (onednn::kSupported<T>) {
    return onednn_takes<T>() && onednn::conv_backward_weights(x, dy, g, dw);
  }
#endif
  return false;
}
}  // namespace ember::ops::cpu::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// 2-D convolution of x [N, C, H, W] with w [O, C/groups, KH, KW] (see the top of this header).
template <FloatingElement T>
Tensor<T> conv2d(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>& bias,
                 const Conv2dOptions& opt = {}) {
  const ops::ConvGeometry g = ops::conv_geometry(x, w, opt);
  EMBER_CHECK(!bias.defined() || bias.shape() == Shape{g.O}, "ember: conv2d: bias ",
              bias.defined() ? bias.shape().str() : std::string(), " for ", g.O,
              " output channels");
  Tensor<T> y;
  if (x.device().is_cuda()) {
#if defined(EMBER_WITH_CUDNN)
    y = ops::conv_output<T>(g, x.device());
    ops::cudnn::conv_forward(x, w, g, y);
    ops::detail::count_conv_call(ops::ConvBackend::cudnn);
#else
    fail(
        "ember: conv2d on CUDA needs cuDNN, which this build of ember did not find (CMake "
        "finds it next to the CUDA toolkit or at CUDNN_ROOT; without CMake, define "
        "EMBER_WITH_CUDNN and link -lcudnn)");
#endif
  } else {
    y = ops::conv_output<T>(g, x.device());
    if (y.numel() == 0 || ops::cpu::onednn_forward(x, w, g, y)) {
      // done
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (g.channels_last) {
        ops::cpu::conv_forward_channels_last(x, w, g, y);
      } else {
        ops::cpu::conv_forward(x, w, g, y);
      }
      ops::detail::count_conv_call(ops::ConvBackend::im2col);
    } else {
      // bf16 and half: widened to float once, convolved in float, rounded once.
      const Tensor<float> yf = conv2d<float>(
          Tensor<float>(cast<float>(x))
              .contiguous(g.channels_last ? MemoryFormat::channels_last : MemoryFormat::contiguous),
          Tensor<float>(cast<float>(w)), Tensor<float>(), opt);
      y = cast<T>(yf);
    }
  }
  if (bias.defined()) y += bias.reshape(Shape{1, g.O, 1, 1});
  return y;
}
template <FloatingElement T>
Tensor<T> conv2d(const Tensor<T>& x, const Tensor<T>& w, const Conv2dOptions& opt = {}) {
  return conv2d<T>(x, w, Tensor<T>(), opt);
}
}  // namespace ember::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// The gradients of conv2d's input and weight (each only when asked), given dy.
template <FloatingElement T>
std::pair<Tensor<T>, Tensor<T>> conv2d_backward(const Tensor<T>& x, const Tensor<T>& w,
                                                const Tensor<T>& dy, const Conv2dOptions& opt,
                                                bool need_x, bool need_w) {
  const ConvGeometry g = conv_geometry(x, w, opt);
  Tensor<T> dx, dw;
  if (x.device().is_cuda()) {
#if defined(EMBER_WITH_CUDNN)
    // dy in the memory format of the forward's output, as cuDNN pairs it with x.
    const Tensor<T> dyf =
        dy.contiguous(g.channels_last ? MemoryFormat::channels_last : MemoryFormat::contiguous);
    if (need_x) {
      dx = empty<T>(x.shape(), x.device(), x.memory_format());
      cudnn::conv_backward_data(w, dyf, g, dx);
      detail::count_conv_call(ConvBackend::cudnn);
    }
    if (need_w) {
      dw = empty<T>(w.shape(), w.device());
      cudnn::conv_backward_filter(x, dyf, g, dw);
      detail::count_conv_call(ConvBackend::cudnn);
    }
#else
    fail(
        "ember: conv2d on CUDA needs cuDNN, which this build of ember did not find (CMake "
        "finds it next to the CUDA toolkit or at CUDNN_ROOT; without CMake, define "
        "EMBER_WITH_CUDNN and link -lcudnn)");
#endif
  } else {
    // dx in x's memory format (dense); each gradient from oneDNN where it takes the shape.
    if (need_x) dx = empty<T>(x.shape(), x.device(), x.memory_format());
    if (need_w) dw = g.N == 0 ? zeros<T>(w.shape(), w.device()) : empty<T>(w.shape(), w.device());
    const bool x_left = need_x && dx.numel() > 0 && !cpu::onednn_backward_data(w, dy, g, dx);
    const bool w_left = need_w && g.N > 0 && !cpu::onednn_backward_weights(x, dy, g, dw);
    if (!x_left && !w_left) {
      // done
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* const dxp = x_left ? dx.data() : nullptr;
      T* const dwp = w_left ? dw.data() : nullptr;
      if (g.channels_last) {
        cpu::conv_backward_channels_last(x, w, dy, g, dxp, dwp);
      } else {
        cpu::conv_backward(x, w, dy, g, dxp, dwp);
      }
      for (const bool ran : {x_left, w_left}) {
        if (ran) detail::count_conv_call(ConvBackend::im2col);
      }
    } else {
      const auto r =
          conv2d_backward<float>(Tensor<float>(cast<float>(x)), Tensor<float>(cast<float>(w)),
                                 Tensor<float>(cast<float>(dy)), opt, x_left, w_left);
      if (x_left) dx = Tensor<T>(cast<T>(r.first));
      if (w_left) dw = Tensor<T>(cast<T>(r.second));
    }
  }
  return {dx, dw};
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND
