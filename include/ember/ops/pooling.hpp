// 2-D pooling on Tensors: max_pool2d, avg_pool2d, adaptive_avg_pool2d, and their backward passes.
//
// x is [N, C, H, W] with any strides (read in place). The output is dense, channels-last when
// x's channels lie closer together in memory than its columns (a channels-last tensor), else
// NCHW; the backward reads the output's gradient in place and writes the input's gradient in
// the memory order asked for. Windows follow PyTorch:
//   out = floor((in + 2 pad - dilation (kernel - 1) - 1) / stride) + 1    (ceil with ceil_mode,
//         dropping a last window that would start in the right padding)
//   max_pool2d: the largest tap (NaN wins: a NaN tap is the result), padding never wins;
//               backward routes the gradient to that tap (the first of equal maxima, the last
//               NaN, as PyTorch), through an int32 argmax the forward keeps.
//   avg_pool2d: the sum of in-bounds taps over the taps inside the padded input
//               (count_include_pad, PyTorch's default) or inside the input, or over
//               divisor_override when given; no dilation.
//   adaptive_avg_pool2d: window o along an axis of size in is [floor(o in / out),
//               ceil((o + 1) in / out)); out 1x1 is global average pooling.
// bf16 and half compare and sum in float and round once.
//
// Each pass is one launch, one thread per output element (forward) or per input element
// (backward); on the CPU, max pooling in channels-last takes a row of channels per step. The
// backward gathers: an input element sums the gradients of the windows that hold it (max: whose
// argmax it is), in a fixed order, so it needs no atomics, needs no zeroed buffer and gives the
// same bits every run, on either device.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "../core/config.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"
#include "../exec/assign.hpp"
#include "../exec/cpu_executor.hpp"
#include "../exec/for_each.hpp"
#include "../exec/launch_counter.hpp"
#include "../expr/math.hpp"
#include "../tensor/factories.hpp"
#include "../tensor/tensor.hpp"

namespace ember {

/// The window of max_pool2d and avg_pool2d, {rows, columns} in each field, as PyTorch's
/// arguments: stride {0, 0} means the kernel.
struct Pool2dOptions {
  std::array<std::int64_t, 2> kernel{1, 1};
  std::array<std::int64_t, 2> stride{0, 0};
  std::array<std::int64_t, 2> padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};  // max_pool2d only
  bool ceil_mode = false;
  bool count_include_pad = true;      // avg_pool2d: padding counts in the divisor
  std::int64_t divisor_override = 0;  // avg_pool2d: when positive, every window's divisor
};
}  // namespace ember

namespace ember::ops {

/// The windows along one spatial axis: fixed (kernel, stride, padding, dilation) or adaptive.
struct PoolAxis {
  std::int64_t in = 0, out = 0;
  std::int64_t kernel = 1, stride = 1, pad = 0, dilation = 1;
  bool adaptive = false;

  /// The first input coordinate of window o (negative inside the padding).
  EMBER_HD std::int64_t start(std::int64_t o) const {
    return adaptive ? o * in / out : o * stride - pad;
  }
  /// The taps of window o, `step()` apart.
  EMBER_HD std::int64_t taps(std::int64_t o) const {
    return adaptive ? ((o + 1) * in + out - 1) / out - o * in / out : kernel;
  }
  EMBER_HD std::int64_t step() const { return adaptive ? 1 : dilation; }
  /// avg's divisor along this axis: the taps of window o inside [-pad, in + pad)
  /// (include_pad) or inside [0, in). Dilation is 1 here.
  EMBER_HD std::int64_t count(std::int64_t o, bool include_pad) const {
    const std::int64_t s = start(o), e = s + taps(o);
    const std::int64_t lo = include_pad ? -pad : 0, hi = include_pad ? in + pad : in;
    return (e < hi ? e : hi) - (s > lo ? s : lo);
  }
  /// The windows [first, last) that may hold input coordinate i (test each with holds()).
  EMBER_HD void windows_of(std::int64_t i, std::int64_t& first, std::int64_t& last) const {
    if (adaptive) {
      first = i * out / in;
      last = ((i + 1) * out + in - 1) / in;
    } else {
      // o stride - pad + t dilation = i for a tap t in [0, kernel)
      const std::int64_t lo = i + pad - (kernel - 1) * dilation;
      first = lo > 0 ? (lo + stride - 1) / stride : 0;
      last = (i + pad) / stride + 1;
    }
    if (last > out) last = out;
  }
  /// Whether the axis has one window and it is the whole input, unpadded (global pooling).
  EMBER_HD bool whole() const { return out == 1 && start(0) == 0 && taps(0) == in && step() == 1; }
  /// Whether input coordinate i is a tap of window o.
  EMBER_HD bool holds(std::int64_t o, std::int64_t i) const {
    const std::int64_t off = i - start(o);
    return off >= 0 && off % step() == 0 && off / step() < taps(o);
  }
};

/// Everything a pooling kernel needs: the sizes, both axes' windows, the input's strides and
/// the memory order of the output.
struct Pool2dGeometry {
  std::int64_t N = 0, C = 0;
  PoolAxis h, w;
  std::int64_t xs[4] = {};            // the input's strides
  bool channels_last = false;         // the output (and max's argmax) is NHWC in memory
  std::int64_t divisor_override = 0;  // avg: when positive, the divisor of every window

  /// avg's divisor for output (oh, ow).
  EMBER_HD std::int64_t divisor(std::int64_t oh, std::int64_t ow, bool include_pad) const {
    return divisor_override > 0 ? divisor_override
                                : h.count(oh, include_pad) * w.count(ow, include_pad);
  }

  std::int64_t out_numel() const { return N * C * h.out * w.out; }
  std::int64_t in_numel() const { return N * C * h.in * w.in; }
  Shape out_shape() const { return Shape{N, C, h.out, w.out}; }
  Shape in_shape() const { return Shape{N, C, h.in, w.in}; }
  MemoryFormat format() const {
    return channels_last ? MemoryFormat::channels_last : MemoryFormat::contiguous;
  }

  /// The coordinates of memory index i of a dense [N, C, A, B] tensor, NHWC when `cl`.
  EMBER_HD void coords(std::int64_t i, std::int64_t A, std::int64_t B, bool cl, std::int64_t& n,
                       std::int64_t& c, std::int64_t& a, std::int64_t& b) const {
    if (cl) {
      c = i % C;
      i /= C;
      b = i % B;
      i /= B;
      a = i % A;
      n = i / A;
    } else {
      b = i % B;
      i /= B;
      a = i % A;
      i /= A;
      c = i % C;
      n = i / C;
    }
  }
  /// The memory index of (n, c, a, b) in a dense [N, C, A, B] tensor, NHWC when `cl`.
  EMBER_HD std::int64_t index(std::int64_t n, std::int64_t c, std::int64_t a, std::int64_t b,
                              std::int64_t A, std::int64_t B, bool cl) const {
    return cl ? ((n * A + a) * B + b) * C + c : ((n * C + c) * A + a) * B + b;
  }
};

/// The geometry of a fixed-window pooling of an input of shape x after PyTorch's checks (no
/// strides or layout: the tensor version below adds them); errors name `name`.
inline Pool2dGeometry pool2d_geometry(const Shape& x, const Pool2dOptions& o, const char* name) {
  EMBER_CHECK(x.rank() == 4, "ember: ", name, ": input must be [N, C, H, W], got ", x.str());
  Pool2dGeometry g;
  g.N = x[0];
  g.C = x[1];
  PoolAxis* axes[2] = {&g.h, &g.w};
  for (int d = 0; d < 2; ++d) {
    PoolAxis& a = *axes[d];
    a.in = x[2 + d];
    a.kernel = o.kernel[d];
    a.stride = o.stride[d] == 0 ? o.kernel[d] : o.stride[d];
    a.pad = o.padding[d];
    a.dilation = o.dilation[d];
    EMBER_CHECK(a.kernel > 0 && a.stride > 0 && a.dilation > 0 && a.pad >= 0, "ember: ", name,
                ": kernel, stride and dilation must be positive and padding non-negative (kernel ",
                o.kernel[0], "x", o.kernel[1], ", stride ", o.stride[0], "x", o.stride[1],
                ", padding ", o.padding[0], "x", o.padding[1], ", dilation ", o.dilation[0], "x",
                o.dilation[1], ")");
    EMBER_CHECK(a.pad <= a.kernel / 2, "ember: ", name, ": padding ", o.padding[0], "x",
                o.padding[1], " must be at most half the kernel ", o.kernel[0], "x", o.kernel[1]);
    const std::int64_t span = a.dilation * (a.kernel - 1) + 1;
    const std::int64_t room = a.in + 2 * a.pad - span;  // negative: the window does not fit
    a.out = room < 0 ? 0 : (o.ceil_mode ? (room + a.stride - 1) / a.stride : room / a.stride) + 1;
    // With ceil_mode, the last window must start inside the input or the left padding.
    if (o.ceil_mode && a.out > 0 && (a.out - 1) * a.stride >= a.in + a.pad) --a.out;
    EMBER_CHECK(a.out >= 1, "ember: ", name, ": the kernel ", o.kernel[0], "x", o.kernel[1],
                " (dilation ", o.dilation[0], "x", o.dilation[1],
                ") is larger than the padded input ", x.str(), " (padding ", o.padding[0], "x",
                o.padding[1], ")");
  }
  return g;
}

}  // namespace ember::ops

namespace ember::ops::inline EMBER_UNIT_KIND {

/// Strides of a 4-D gradient tensor, read where it lies (it may be a broadcast view).
struct Strides4 {
  std::int64_t s[4] = {};
  EMBER_HD std::int64_t at(std::int64_t n, std::int64_t c, std::int64_t a, std::int64_t b) const {
    return n * s[0] + c * s[1] + a * s[2] + b * s[3];
  }
};
inline Strides4 strides4(const Strides& st) { return {{st[0], st[1], st[2], st[3]}}; }

// ---- the per-element functions, shared by the CPU loop and the CUDA kernel ----

/// Output element i (memory order) of max_pool2d, and its argmax (h W + w; -1: no tap).
template <class T>
struct MaxPool2dForward {
  const T* x;
  T* y;
  std::int32_t* argmax;  // null when no backward will need it
  Pool2dGeometry g;

  EMBER_HD void operator()(std::int64_t i) const {
    using A = acc_t<T>;
    std::int64_t n, c, oh, ow;
    g.coords(i, g.h.out, g.w.out, g.channels_last, n, c, oh, ow);
    const T* plane = x + n * g.xs[0] + c * g.xs[1];
    const std::int64_t h0 = g.h.start(oh), w0 = g.w.start(ow);
    const std::int64_t th = g.h.taps(oh), tw = g.w.taps(ow), dh = g.h.step(), dw = g.w.step();
    A best = math::lowest<A>();
    std::int64_t at = -1;
    for (std::int64_t a = 0; a < th; ++a) {
      const std::int64_t hh = h0 + a * dh;
      if (hh < 0 || hh >= g.h.in) continue;
      for (std::int64_t b = 0; b < tw; ++b) {
        const std::int64_t ww = w0 + b * dw;
        if (ww < 0 || ww >= g.w.in) continue;
        const A v = to_acc(plane[hh * g.xs[2] + ww * g.xs[3]]);
        // PyTorch's rule: strictly greater (the first maximum wins), or NaN (the last wins).
        if (at < 0 || v > best || math::isnan(v)) {
          best = v;
          at = hh * g.w.in + ww;
        }
      }
    }
    y[i] = to_storage<T>(best);
    if (argmax) argmax[i] = static_cast<std::int32_t>(at);
  }
};

/// Output element i of avg_pool2d or adaptive_avg_pool2d.
template <class T>
struct AvgPool2dForward {
  const T* x;
  T* y;
  Pool2dGeometry g;
  bool include_pad;

  EMBER_HD void operator()(std::int64_t i) const {
    using A = acc_t<T>;
    std::int64_t n, c, oh, ow;
    g.coords(i, g.h.out, g.w.out, g.channels_last, n, c, oh, ow);
    const T* plane = x + n * g.xs[0] + c * g.xs[1];
    const std::int64_t h0 = g.h.start(oh), w0 = g.w.start(ow);
    const std::int64_t th = g.h.taps(oh), tw = g.w.taps(ow);
    A s = A(0);
    for (std::int64_t a = 0; a < th; ++a) {
      const std::int64_t hh = h0 + a;
      if (hh < 0 || hh >= g.h.in) continue;
      for (std::int64_t b = 0; b < tw; ++b) {
        const std::int64_t ww = w0 + b;
        if (ww >= 0 && ww < g.w.in) s += to_acc(plane[hh * g.xs[2] + ww * g.xs[3]]);
      }
    }
    y[i] = to_storage<T>(s / static_cast<A>(g.divisor(oh, ow, include_pad)));
  }
};

/// Input-gradient element j (memory order, NHWC when gx_cl) of max_pool2d: the gradients of
/// the windows whose argmax it is, rows then columns.
template <class T>
struct MaxPool2dBackward {
  const T* gy;
  Strides4 gs;
  const std::int32_t* argmax;
  T* gx;
  Pool2dGeometry g;
  bool gx_cl;

  EMBER_HD void operator()(std::int64_t j) const {
    using A = acc_t<T>;
    std::int64_t n, c, h, w;
    g.coords(j, g.h.in, g.w.in, gx_cl, n, c, h, w);
    std::int64_t oh0, oh1, ow0, ow1;
    g.h.windows_of(h, oh0, oh1);
    g.w.windows_of(w, ow0, ow1);
    const auto me = static_cast<std::int32_t>(h * g.w.in + w);
    A s = A(0);
    for (std::int64_t oh = oh0; oh < oh1; ++oh) {
      for (std::int64_t ow = ow0; ow < ow1; ++ow) {
        if (argmax[g.index(n, c, oh, ow, g.h.out, g.w.out, g.channels_last)] == me) {
          s += to_acc(gy[gs.at(n, c, oh, ow)]);
        }
      }
    }
    gx[j] = to_storage<T>(s);
  }
};

/// Input-gradient element j of avg_pool2d or adaptive_avg_pool2d: the windows that hold it,
/// each gradient over its window's divisor.
template <class T>
struct AvgPool2dBackward {
  const T* gy;
  Strides4 gs;
  T* gx;
  Pool2dGeometry g;
  bool include_pad;
  bool gx_cl;

  EMBER_HD void operator()(std::int64_t j) const {
    using A = acc_t<T>;
    std::int64_t n, c, h, w;
    g.coords(j, g.h.in, g.w.in, gx_cl, n, c, h, w);
    std::int64_t oh0, oh1, ow0, ow1;
    g.h.windows_of(h, oh0, oh1);
    g.w.windows_of(w, ow0, ow1);
    A s = A(0);
    for (std::int64_t oh = oh0; oh < oh1; ++oh) {
      if (!g.h.holds(oh, h)) continue;
      for (std::int64_t ow = ow0; ow < ow1; ++ow) {
        if (!g.w.holds(ow, w)) continue;
        s += to_acc(gy[gs.at(n, c, oh, ow)]) / static_cast<A>(g.divisor(oh, ow, include_pad));
      }
    }
    gx[j] = to_storage<T>(s);
  }
};

// ---- max pooling's channels-last rows, on the CPU ----
//
// In a channels-last tensor the C channels of a position lie side by side and share one window.
// The CPU takes a row of channels at a time: the window's bounds (and, backward, the windows
// holding the position) are found once per row instead of once per element with divisions, and
// the channel loop compares and sums with the vector unit. The comparisons are the element
// functions' and the sums run in the same order, so both paths give the same values.

/// Channels a row loop keeps in flight: its running maxima or sums stay in L1.
inline constexpr std::int64_t kPoolChannelBlock = 64;

/// Whether max_pool2d's forward on the CPU takes channels-last rows: the output is channels-last
/// and x's channels are adjacent in memory.
inline bool max_pool_rows_forward(const Pool2dGeometry& g, Device d) {
  return d.is_cpu() && g.channels_last && g.xs[1] == 1;
}
/// Whether its backward does: the forward's argmax and the gradient written are channels-last
/// and gy's channels are adjacent in memory.
inline bool max_pool_rows_backward(const Pool2dGeometry& g, const Strides4& gs, bool gx_cl,
                                   Device d) {
  return d.is_cpu() && g.channels_last && gx_cl && gs.s[1] == 1;
}

/// MaxPool2dForward over channels-last rows: row r is output position (n, oh, ow).
template <class T>
void max_pool2d_forward_rows(const MaxPool2dForward<T>& f) {
  using A = acc_t<T>;
  constexpr std::int64_t B = kPoolChannelBlock;
  const Pool2dGeometry& g = f.g;
  const std::int64_t C = g.C, OH = g.h.out, OW = g.w.out, rows = g.N * OH * OW;
  const std::int64_t th = g.h.taps(0), tw = g.w.taps(0), dh = g.h.step(), dw = g.w.step();
  exec::count_launch();
#pragma omp parallel for schedule(static) if (rows * C * th * tw >= exec::cpu::kParallelThreshold)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t ow = r % OW, oh = r / OW % OH, n = r / (OW * OH);
    const std::int64_t h0 = g.h.start(oh), w0 = g.w.start(ow);
    for (std::int64_t c0 = 0; c0 < C; c0 += B) {
      const std::int64_t len = C - c0 < B ? C - c0 : B;
      A best[B];
      std::int32_t at[B];
      bool first = true;
      for (std::int64_t a = 0; a < th; ++a) {
        const std::int64_t hh = h0 + a * dh;
        if (hh < 0 || hh >= g.h.in) continue;
        for (std::int64_t b = 0; b < tw; ++b) {
          const std::int64_t ww = w0 + b * dw;
          if (ww < 0 || ww >= g.w.in) continue;
          const T* v = f.x + n * g.xs[0] + hh * g.xs[2] + ww * g.xs[3] + c0;
          const auto tap = static_cast<std::int32_t>(hh * g.w.in + ww);
          if (first) {
            for (std::int64_t k = 0; k < len; ++k) best[k] = to_acc(v[k]);
            for (std::int64_t k = 0; k < len; ++k) at[k] = tap;
            first = false;
            continue;
          }
          for (std::int64_t k = 0; k < len; ++k) {
            const A x = to_acc(v[k]);
            const bool take = x > best[k] || math::isnan(x);  // MaxPool2dForward's rule
            best[k] = take ? x : best[k];
            at[k] = take ? tap : at[k];
          }
        }
      }
      if (first) {  // no tap inside the input
        for (std::int64_t k = 0; k < len; ++k) best[k] = math::lowest<A>();
        for (std::int64_t k = 0; k < len; ++k) at[k] = -1;
      }
      T* y = f.y + r * C + c0;
      for (std::int64_t k = 0; k < len; ++k) y[k] = to_storage<T>(best[k]);
      if (f.argmax) {
        for (std::int64_t k = 0; k < len; ++k) f.argmax[r * C + c0 + k] = at[k];
      }
    }
  }
}

/// MaxPool2dBackward over channels-last rows: row r is input position (n, h, w); a channel adds
/// the gradient of each window holding the position (rows then columns) whose argmax it is.
template <class T>
void max_pool2d_backward_rows(const MaxPool2dBackward<T>& f) {
  using A = acc_t<T>;
  constexpr std::int64_t B = kPoolChannelBlock;
  const Pool2dGeometry& g = f.g;
  const std::int64_t C = g.C, H = g.h.in, W = g.w.in, rows = g.N * H * W;
  exec::count_launch();
#pragma omp parallel for schedule(static) if (rows * C * 4 >= exec::cpu::kParallelThreshold)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t w = r % W, h = r / W % H, n = r / (W * H);
    std::int64_t oh0, oh1, ow0, ow1;
    g.h.windows_of(h, oh0, oh1);
    g.w.windows_of(w, ow0, ow1);
    const auto me = static_cast<std::int32_t>(h * W + w);
    for (std::int64_t c0 = 0; c0 < C; c0 += B) {
      const std::int64_t len = C - c0 < B ? C - c0 : B;
      A sum[B] = {};
      for (std::int64_t oh = oh0; oh < oh1; ++oh) {
        for (std::int64_t ow = ow0; ow < ow1; ++ow) {
          const std::int32_t* am = f.argmax + ((n * g.h.out + oh) * g.w.out + ow) * C + c0;
          const T* gy = f.gy + f.gs.at(n, c0, oh, ow);
          for (std::int64_t k = 0; k < len; ++k) sum[k] += am[k] == me ? to_acc(gy[k]) : A(0);
        }
      }
      T* gx = f.gx + r * C + c0;
      for (std::int64_t k = 0; k < len; ++k) gx[k] = to_storage<T>(sum[k]);
    }
  }
}

/// The geometry of a fixed-window pooling of x after PyTorch's checks; errors name `name`.
template <Storable T>
Pool2dGeometry pool2d_geometry(const Tensor<T>& x, const Pool2dOptions& o, const char* name) {
  EMBER_CHECK(x.defined(), "ember: ", name, ": input must be [N, C, H, W], got undefined");
  Pool2dGeometry g = ops::pool2d_geometry(x.shape(), o, name);  // the Shape overload, outside
  for (int d = 0; d < 4; ++d) g.xs[d] = x.stride(d);
  // PyTorch's suggest_memory_format, in short: channels nearer than columns is channels-last.
  g.channels_last = x.size(1) > 1 && x.stride(1) < x.stride(3);
  return g;
}

/// The geometry of adaptive average pooling of x to out {rows, columns}.
template <Storable T>
Pool2dGeometry adaptive_pool2d_geometry(const Tensor<T>& x, std::array<std::int64_t, 2> out,
                                        const char* name) {
  EMBER_CHECK(x.defined() && x.rank() == 4, "ember: ", name, ": input must be [N, C, H, W], got ",
              x.defined() ? x.shape().str() : std::string("undefined"));
  EMBER_CHECK(x.size(2) > 0 && x.size(3) > 0 && out[0] >= 0 && out[1] >= 0, "ember: ", name,
              ": cannot pool the input ", x.shape().str(), " to ", out[0], "x", out[1]);
  Pool2dGeometry g;
  g.N = x.size(0);
  g.C = x.size(1);
  g.h = PoolAxis{x.size(2), out[0], 1, 1, 0, 1, true};
  g.w = PoolAxis{x.size(3), out[1], 1, 1, 0, 1, true};
  for (int d = 0; d < 4; ++d) g.xs[d] = x.stride(d);
  g.channels_last = x.size(1) > 1 && x.stride(1) < x.stride(3);
  return g;
}

/// The taps of window (0, 0), about those of any window: the work per output element.
inline std::int64_t window_size(const Pool2dGeometry& g) {
  return g.out_numel() > 0 ? g.h.taps(0) * g.w.taps(0) : 0;
}

/// max_pool2d's output and, when `keep_argmax`, the argmax of every output element (int32,
/// dense in the output's memory order) for the backward.
template <FloatingElement T>
std::pair<Tensor<T>, Tensor<std::int32_t>> max_pool2d_forward(const Tensor<T>& x,
                                                              const Pool2dGeometry& g,
                                                              bool keep_argmax) {
  EMBER_CHECK(g.h.in * g.w.in <= std::numeric_limits<std::int32_t>::max(),
              "ember: max_pool2d: an input plane of ", g.h.in, "x", g.w.in,
              " elements is too large for its int32 argmax");
  Tensor<T> y = empty<T>(g.out_shape(), x.device(), g.format());
  Tensor<std::int32_t> argmax;
  if (keep_argmax) argmax = empty<std::int32_t>(g.out_shape(), x.device(), g.format());
  const MaxPool2dForward<T> f{x.data(), y.data(), keep_argmax ? argmax.data() : nullptr, g};
  if (max_pool_rows_forward(g, x.device())) {
    if (g.out_numel() > 0) max_pool2d_forward_rows(f);
  } else {
    exec::for_each_index<MaxPool2dForward<T>>(f, g.out_numel(), window_size(g), x.device());
  }
  return {y, argmax};
}

template <FloatingElement T>
Tensor<T> avg_pool2d_forward(const Tensor<T>& x, const Pool2dGeometry& g, bool include_pad) {
  Tensor<T> y = empty<T>(g.out_shape(), x.device(), g.format());
  const AvgPool2dForward<T> f{x.data(), y.data(), g, include_pad};
  exec::for_each_index<AvgPool2dForward<T>>(f, g.out_numel(), window_size(g), x.device());
  return y;
}

/// The gradient of max_pool2d's input, dense in `format`, from the output's gradient gy (any
/// strides) and the forward's argmax.
template <FloatingElement T>
Tensor<T> max_pool2d_backward(const Tensor<T>& gy, const Tensor<std::int32_t>& argmax,
                              const Pool2dGeometry& g, MemoryFormat format) {
  EMBER_CHECK(gy.shape() == g.out_shape(), "ember: max_pool2d: a gradient of shape ",
              gy.shape().str(), " for an output of shape ", g.out_shape().str());
  EMBER_CHECK(argmax.defined() && argmax.device() == gy.device(),
              "ember: max_pool2d: backward needs the forward's argmax on the gradient's device");
  Tensor<T> gx = empty<T>(g.in_shape(), gy.device(), format);
  const bool cl = format == MemoryFormat::channels_last;
  const Strides4 gs = strides4(gy.strides());
  const MaxPool2dBackward<T> f{gy.data(), gs, argmax.data(), gx.data(), g, cl};
  if (max_pool_rows_backward(g, gs, cl, gy.device())) {
    if (g.in_numel() > 0) max_pool2d_backward_rows(f);
  } else {
    exec::for_each_index<MaxPool2dBackward<T>>(f, g.in_numel(), 4, gy.device());
  }
  return gx;
}

/// The gradient of avg_pool2d's (or adaptive_avg_pool2d's) input, dense in `format`, from the
/// output's gradient gy (any strides).
template <FloatingElement T>
Tensor<T> avg_pool2d_backward(const Tensor<T>& gy, const Pool2dGeometry& g, bool include_pad,
                              MemoryFormat format) {
  EMBER_CHECK(gy.shape() == g.out_shape(), "ember: avg_pool2d: a gradient of shape ",
              gy.shape().str(), " for an output of shape ", g.out_shape().str());
  Tensor<T> gx = empty<T>(g.in_shape(), gy.device(), format);
  if (g.h.whole() && g.w.whole()) {
    // Global pooling (ResNet's head): every element's gradient is its channel's over the one
    // divisor, a broadcast: one fused pass instead of a window search per element.
    const acc_t<T> scale = acc_t<T>(1) / static_cast<acc_t<T>>(g.divisor(0, 0, include_pad));
    gx = cast<T>(expr::Leaf<T>(gy.expand(g.in_shape())) * scale);
    return gx;
  }
  const bool cl = format == MemoryFormat::channels_last;
  const Strides4 gs = strides4(gy.strides());
  const AvgPool2dBackward<T> f{gy.data(), gs, gx.data(), g, include_pad, cl};
  exec::for_each_index<AvgPool2dBackward<T>>(f, g.in_numel(), 4, gy.device());
  return gx;
}

/// avg_pool2d's geometry: PyTorch's avg_pool2d has no dilation, nor does this one.
template <Storable T>
Pool2dGeometry avg_pool2d_geometry(const Tensor<T>& x, const Pool2dOptions& o) {
  EMBER_CHECK(o.dilation[0] == 1 && o.dilation[1] == 1,
              "ember: avg_pool2d: dilation must be 1x1, got ", o.dilation[0], "x", o.dilation[1]);
  EMBER_CHECK(o.divisor_override >= 0,
              "ember: avg_pool2d: divisor_override must be positive (or "
              "0: none), got ",
              o.divisor_override);
  Pool2dGeometry g = pool2d_geometry(x, o, "avg_pool2d");
  g.divisor_override = o.divisor_override;
  return g;
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// Max pooling of x [N, C, H, W] (see the top of this header).
template <FloatingElement T>
Tensor<T> max_pool2d(const Tensor<T>& x, const Pool2dOptions& opt) {
  const ops::Pool2dGeometry g = ops::pool2d_geometry(x, opt, "max_pool2d");
  return ops::max_pool2d_forward<T>(x, g, false).first;
}

/// Average pooling of x [N, C, H, W]; the divisor counts the padding when
/// opt.count_include_pad (PyTorch's default).
template <FloatingElement T>
Tensor<T> avg_pool2d(const Tensor<T>& x, const Pool2dOptions& opt) {
  return ops::avg_pool2d_forward<T>(x, ops::avg_pool2d_geometry(x, opt), opt.count_include_pad);
}

/// Average pooling of x [N, C, H, W] to out {rows, columns}: {1, 1} is global average pooling.
template <FloatingElement T>
Tensor<T> adaptive_avg_pool2d(const Tensor<T>& x, std::array<std::int64_t, 2> out) {
  return ops::avg_pool2d_forward<T>(x, ops::adaptive_pool2d_geometry(x, out, "adaptive_avg_pool2d"),
                                    true);
}
}  // namespace ember::inline EMBER_UNIT_KIND
