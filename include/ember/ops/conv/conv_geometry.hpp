// The options and the checked sizes of a 2-D convolution (shared by the CPU and cuDNN paths).
#pragma once

#include <array>
#include <cstdint>

#include "../../core/error.hpp"
#include "../../core/shape.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"

namespace ember {

struct Conv2dOptions {
  std::array<std::int64_t, 2> stride{1, 1};
  std::array<std::int64_t, 2> padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;
};

namespace ops {

/// The sizes of one convolution, checked.
struct ConvGeometry {
  std::int64_t N, C, H, W, O, KH, KW, OH, OW, groups;
  Conv2dOptions opt;
  bool channels_last;  // the input (and so the output) is NHWC in memory
  Shape out_shape() const { return Shape{N, O, OH, OW}; }
  std::int64_t cg() const { return C / groups; }  // input channels per group
  std::int64_t og() const { return O / groups; }  // output channels per group
};

/// The sizes of a convolution of an input of shape x by a weight of shape w, checked (the
/// layout is the tensor version's to fill in).
inline ConvGeometry conv_geometry(const Shape& x, const Shape& w, const Conv2dOptions& opt) {
  EMBER_CHECK(x.rank() == 4 && w.rank() == 4,
              "ember: conv2d: input must be [N, C, H, W] and weight ",
              "[O, C/groups, KH, KW], got ", x.str(), " and ", w.str());
  EMBER_CHECK(opt.groups >= 1 && opt.stride[0] >= 1 && opt.stride[1] >= 1 && opt.dilation[0] >= 1 &&
                  opt.dilation[1] >= 1 && opt.padding[0] >= 0 && opt.padding[1] >= 0,
              "ember: conv2d: stride and dilation must be positive, padding non-negative, groups "
              "at least 1");
  ConvGeometry g{};
  g.N = x[0];
  g.C = x[1];
  g.H = x[2];
  g.W = x[3];
  g.O = w[0];
  g.KH = w[2];
  g.KW = w[3];
  g.groups = opt.groups;
  g.opt = opt;
  EMBER_CHECK(g.C % g.groups == 0 && g.O % g.groups == 0, "ember: conv2d: ", g.C, " input and ",
              g.O, " output channels do not divide into ", g.groups, " groups");
  EMBER_CHECK(w[1] == g.C / g.groups, "ember: conv2d: weight ", w.str(), " for ", g.C,
              " input channels in ", g.groups, " groups (want ", g.C / g.groups,
              " in dimension 1)");
  const std::int64_t eh = opt.dilation[0] * (g.KH - 1) + 1, ew = opt.dilation[1] * (g.KW - 1) + 1;
  const std::int64_t ph = g.H + 2 * opt.padding[0], pw = g.W + 2 * opt.padding[1];
  EMBER_CHECK(eh <= ph && ew <= pw, "ember: conv2d: kernel ", g.KH, "x", g.KW, " (dilated ", eh,
              "x", ew, ") is larger than the padded input ", ph, "x", pw, " (input ", x.str(), ")");
  g.OH = (ph - eh) / opt.stride[0] + 1;
  g.OW = (pw - ew) / opt.stride[1] + 1;
  g.channels_last = false;
  return g;
}

template <Storable T>
ConvGeometry conv_geometry(const Tensor<T>& x, const Tensor<T>& w, const Conv2dOptions& opt) {
  EMBER_CHECK(x.defined() && w.defined(), "ember: conv2d: undefined operand");
  EMBER_CHECK(x.rank() == 4 && w.rank() == 4,
              "ember: conv2d: input must be [N, C, H, W] and weight ",
              "[O, C/groups, KH, KW], got ", x.shape().str(), " and ", w.shape().str());
  EMBER_CHECK(x.device() == w.device(), "ember: conv2d: input and weight are on different devices");
  ConvGeometry g = conv_geometry(x.shape(), w.shape(), opt);
  g.channels_last = x.memory_format() == MemoryFormat::channels_last;
  return g;
}

/// An empty result of the convolution, in the input's memory format.
template <Storable T>
Tensor<T> conv_output(const ConvGeometry& g, Device device) {
  return empty<T>(g.out_shape(), device,
                  g.channels_last ? MemoryFormat::channels_last : MemoryFormat::contiguous);
}

}  // namespace ops
}  // namespace ember
