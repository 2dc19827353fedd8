// conv2d on the CPU over channels-last (NHWC) tensors, float and double.
//
// The im2col of an NCHW convolution gathers a channel's pixels, which NHWC keeps C apart. Here
// the column matrix is transposed: im2row's rows are output pixels and its columns run
// (kh, kw, c), so each window copies its channels as one contiguous run, and the product
//
//   y_n [P, og] = rows [P, KH KW cg] w'^T,   w' = w permuted to [O, KH, KW, C/groups]
//
// lands straight in the NHWC output (P = OH OW; a group's og output channels are a column block
// of y_n). A 1x1, stride-1, unpadded kernel over a dense NHWC input reads x itself as its rows.
// Backward: drows = dy_n w' scattered back by row2im (each window's run added into dx, NHWC),
// dw' = dy_n^T rows accumulated over the batch and permuted back to w's layout.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../../tensor/tensor.hpp"
#include "../matmul/gemm_cpu.hpp"
#include "conv_geometry.hpp"
#include "conv_image_loop.hpp"

namespace ember::ops::cpu::inline EMBER_UNIT_KIND {

/// rows[(oh, ow), (kh, kw, c)] = x[n, c0 + c, ih, iw] for the cg channels of one group of image
/// n (0 in the padding); x is read through its strides (a run of channels at once when they are
/// adjacent).
template <class T>
void im2row(const T* x, const Strides& xs, const ConvGeometry& g, std::int64_t n, std::int64_t c0,
            T* rows) {
  const std::int64_t cg = g.cg(), K = g.KH * g.KW * cg;
  // Plain variables, not structured bindings: those cannot be used in OpenMP regions by every
  // compiler (clang 14).
  const std::int64_t sh = g.opt.stride[0], sw = g.opt.stride[1];
  const std::int64_t ph = g.opt.padding[0], pw = g.opt.padding[1];
  const std::int64_t dh = g.opt.dilation[0], dw = g.opt.dilation[1];
  const T* xn = x + n * xs[0] + c0 * xs[1];
#pragma omp parallel for schedule(static) if (g.OH * g.OW * K >= (1 << 15))
  for (std::int64_t oh = 0; oh < g.OH; ++oh) {
    for (std::int64_t ow = 0; ow < g.OW; ++ow) {
      T* row = rows + (oh * g.OW + ow) * K;
      for (std::int64_t kh = 0; kh < g.KH; ++kh) {
        const std::int64_t ih = oh * sh - ph + kh * dh;
        for (std::int64_t kw = 0; kw < g.KW; ++kw) {
          const std::int64_t iw = ow * sw - pw + kw * dw;
          T* run = row + (kh * g.KW + kw) * cg;
          if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) {
            std::fill(run, run + cg, T(0));
          } else {
            const T* src = xn + ih * xs[2] + iw * xs[3];
            if (xs[1] == 1) {
              std::copy(src, src + cg, run);
            } else {
              for (std::int64_t c = 0; c < cg; ++c) run[c] = src[c * xs[1]];
            }
          }
        }
      }
    }
  }
}

/// The adjoint of im2row: dx[n, c0 + c, ih, iw] += rows[(oh, ow), (kh, kw, c)], dx dense NHWC.
/// Serial: windows of neighbouring pixels overlap (the callers run one image per thread).
template <class T>
void row2im(const T* rows, const ConvGeometry& g, std::int64_t n, std::int64_t c0, T* dx) {
  const std::int64_t cg = g.cg(), K = g.KH * g.KW * cg;
  T* dxn = dx + n * g.H * g.W * g.C + c0;
  for (std::int64_t oh = 0; oh < g.OH; ++oh) {
    for (std::int64_t ow = 0; ow < g.OW; ++ow) {
      const T* row = rows + (oh * g.OW + ow) * K;
      for (std::int64_t kh = 0; kh < g.KH; ++kh) {
        const std::int64_t ih = oh * g.opt.stride[0] - g.opt.padding[0] + kh * g.opt.dilation[0];
        if (ih < 0 || ih >= g.H) continue;
        for (std::int64_t kw = 0; kw < g.KW; ++kw) {
          const std::int64_t iw = ow * g.opt.stride[1] - g.opt.padding[1] + kw * g.opt.dilation[1];
          if (iw < 0 || iw >= g.W) continue;
          const T* run = row + (kh * g.KW + kw) * cg;
          T* dst = dxn + (ih * g.W + iw) * g.C;
          for (std::int64_t c = 0; c < cg; ++c) dst[c] += run[c];
        }
      }
    }
  }
}

/// Whether im2row of x is x itself: a 1x1 kernel, stride 1, no padding, over a dense NHWC input
/// (a group's rows are then its cg channels of each pixel, C apart).
template <class T>
bool im2row_is_identity(const Tensor<T>& x, const ConvGeometry& g) {
  return g.KH == 1 && g.KW == 1 && g.opt.stride[0] == 1 && g.opt.stride[1] == 1 &&
         g.opt.padding[0] == 0 && g.opt.padding[1] == 0 &&
         x.is_contiguous(MemoryFormat::channels_last);
}

/// w [O, cg, KH, KW] (any strides) as w' [O, KH, KW, cg], dense.
template <class T>
std::vector<T> weight_to_rows(const Tensor<T>& w, const ConvGeometry& g) {
  const std::int64_t cg = g.cg(), K = g.KH * g.KW * cg;
  std::vector<T> out(static_cast<std::size_t>(g.O * K));
  const Strides& s = w.strides();
  for (std::int64_t o = 0; o < g.O; ++o)
    for (std::int64_t kh = 0; kh < g.KH; ++kh)
      for (std::int64_t kw = 0; kw < g.KW; ++kw)
        for (std::int64_t c = 0; c < cg; ++c)
          out[static_cast<std::size_t>(o * K + (kh * g.KW + kw) * cg + c)] =
              w.data()[o * s[0] + c * s[1] + kh * s[2] + kw * s[3]];
  return out;
}

/// y = conv(x, w) for a channels-last x; y dense NHWC.
template <class T>
void conv_forward_channels_last(const Tensor<T>& x, const Tensor<T>& w, const ConvGeometry& g,
                                const Tensor<T>& y) {
  const std::vector<T> wr = weight_to_rows(w, g);
  const std::int64_t K = g.KH * g.KW * g.cg(), P = g.OH * g.OW;
  const bool pointwise = im2row_is_identity(x, g);
  for_each_conv_image<T>(
      g, pointwise ? 0 : P * K, 0, [&](std::int64_t n, std::int64_t gr, T* rows, T*, bool) {
        const std::int64_t c0 = gr * g.cg();
        if (!pointwise) im2row(x.data(), x.strides(), g, n, c0, rows);
        const MatrixView<const T> a =
            pointwise ? MatrixView<const T>{x.data() + n * P * g.C + c0, P, K, g.C, 1}
                      : MatrixView<const T>{rows, P, K, K, 1};
        const MatrixView<const T> b{wr.data() + gr * g.og() * K, K, g.og(), 1, K};  // w'_g^T
        gemm<T>(a, b, MatrixView<T>{y.data() + n * P * g.O + gr * g.og(), P, g.og(), g.O, 1}, T(1),
                T(0));
      });
}

/// dx (dense NHWC, zeroed here) and dw (dense [O, cg, KH, KW]) of conv(x, w) for a channels-last
/// x, given dy (any layout); each only when its pointer is not null.
template <class T>
void conv_backward_channels_last(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>& dy,
                                 const ConvGeometry& g, T* dx, T* dw) {
  const std::vector<T> wr = weight_to_rows(w, g);
  const Tensor<T> dyc = dy.contiguous(MemoryFormat::channels_last);  // [N, OH, OW, O] in memory
  const std::int64_t cg = g.cg(), K = g.KH * g.KW * cg, P = g.OH * g.OW;
  if (dx) std::fill(dx, dx + g.N * g.C * g.H * g.W, T(0));
  const bool pointwise = im2row_is_identity(x, g);
  const std::vector<T> dw_rows = for_each_conv_image<T>(
      g, pointwise ? 0 : P * K, dw ? g.O * K : 0,
      [&](std::int64_t n, std::int64_t gr, T* rows, T* dw_part, bool first) {
        const std::int64_t c0 = gr * cg;
        const T* dyg = dyc.data() + n * P * g.O + gr * g.og();  // [P, og], rows O apart
        if (dw_part) {
          // dw'_g += dy_g^T [og, P] rows [P, K]
          if (!pointwise) im2row(x.data(), x.strides(), g, n, c0, rows);
          const MatrixView<const T> r =
              pointwise ? MatrixView<const T>{x.data() + n * P * g.C + c0, P, K, g.C, 1}
                        : MatrixView<const T>{rows, P, K, K, 1};
          gemm<T>(MatrixView<const T>{dyg, g.og(), P, 1, g.O}, r,
                  MatrixView<T>{dw_part + gr * g.og() * K, g.og(), K, K, 1}, T(1),
                  first ? T(0) : T(1));
        }
        if (dx) {
          // drows = dy_g [P, og] w'_g [og, K], scattered back (pointwise: drows is the group's
          // channels of dx itself).
          const MatrixView<T> drows = pointwise ? MatrixView<T>{dx + n * P * g.C + c0, P, K, g.C, 1}
                                                : MatrixView<T>{rows, P, K, K, 1};
          gemm<T>(MatrixView<const T>{dyg, P, g.og(), g.O, 1},
                  MatrixView<const T>{wr.data() + gr * g.og() * K, g.og(), K, K, 1}, drows, T(1),
                  T(0));
          if (!pointwise) row2im(rows, g, n, c0, dx);
        }
      });
  if (!dw) return;
  // [O, KH, KW, cg] back to [O, cg, KH, KW].
  for (std::int64_t o = 0; o < g.O; ++o)
    for (std::int64_t c = 0; c < cg; ++c)
      for (std::int64_t kh = 0; kh < g.KH; ++kh)
        for (std::int64_t kw = 0; kw < g.KW; ++kw)
          dw[((o * cg + c) * g.KH + kh) * g.KW + kw] =
              dw_rows[static_cast<std::size_t>(o * K + (kh * g.KW + kw) * cg + c)];
}
}  // namespace ember::ops::cpu::inline EMBER_UNIT_KIND
