// nn::Conv2d: PyTorch's 2-D convolution layer. weight [out, in / groups, kh, kw] and bias [out]
// are public Vars, initialised as PyTorch does (kaiming_uniform with a = sqrt(5) for the weight,
// i.e. U(+-1/sqrt(fan_in)), and U(+-1/sqrt(fan_in)) for the bias, fan_in = in / groups * kh * kw,
// from nn::manual_seed's stream); forward is ember::conv2d (stride, padding, dilation, groups in
// nn::Conv2dOptions, with the bias).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "../autograd/conv.hpp"
#include "init.hpp"
#include "module.hpp"

namespace ember::nn {

/// nn::Conv2d's settings beyond its sizes, nn.Conv2d's keyword arguments by name: the
/// convolution's (ember::Conv2dOptions, which conv2d takes) and whether the layer has a bias.
struct Conv2dOptions {
  std::array<std::int64_t, 2> stride{1, 1};
  std::array<std::int64_t, 2> padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;
  bool bias = true;  // nn.Conv2d's bias=

  ember::Conv2dOptions convolution() const { return {stride, padding, dilation, groups}; }
};

template <FloatingElement T = float>
class Conv2d : public Module, public Callable<Conv2d<T>> {
 public:
  Var<T> weight;
  Var<T> bias;  // undefined when built without one
  std::int64_t in_channels, out_channels;
  std::array<std::int64_t, 2> kernel_size;
  ember::Conv2dOptions options;  // the convolution's

  /// Conv2d(3, 64, {7, 7}, {.stride = {2, 2}, .padding = {3, 3}, .bias = false}): ResNet's stem.
  /// The options come by reference: taken by value, GCC 12.2 at -march=native (AVX-512) built a
  /// defaulted `{}` wrongly beside a designated sibling (tests/nn/test_conv_native_arch.cpp).
  template <class Mode = exec::mode>
  Conv2d(std::int64_t in, std::int64_t out, std::array<std::int64_t, 2> kernel,
         const Conv2dOptions& opt = {}, Device device = Device::cpu())
      : in_channels(in), out_channels(out), kernel_size(kernel), options(opt.convolution()) {
    EMBER_CHECK(in > 0 && out > 0 && kernel[0] > 0 && kernel[1] > 0,
                "ember: nn::Conv2d: channels and kernel must be positive, got ", in, " -> ", out,
                ", kernel ", kernel[0], "x", kernel[1]);
    EMBER_CHECK(opt.groups >= 1 && in % opt.groups == 0 && out % opt.groups == 0,
                "ember: nn::Conv2d: ", in, " input and ", out,
                " output channels must both divide into groups = ", opt.groups);
    EMBER_CHECK(opt.stride[0] >= 1 && opt.stride[1] >= 1 && opt.dilation[0] >= 1 &&
                    opt.dilation[1] >= 1 && opt.padding[0] >= 0 && opt.padding[1] >= 0,
                "ember: nn::Conv2d: stride and dilation must be positive and padding "
                "non-negative, got stride ",
                opt.stride[0], "x", opt.stride[1], ", padding ", opt.padding[0], "x",
                opt.padding[1], ", dilation ", opt.dilation[0], "x", opt.dilation[1]);
    const Shape wshape{out, in / opt.groups, kernel[0], kernel[1]};
    weight = param(init::kaiming_uniform<T>(wshape, std::sqrt(5.0), device));
    register_parameter("weight", weight);
    if (opt.bias) {
      const double bound = 1.0 / std::sqrt(init::fans(wshape).first);
      bias = param(init::uniform<T>(Shape{out}, -bound, bound, device));
      register_parameter("bias", bias);
    }
  }
  /// A square kernel: Conv2d(64, 64, 3, {.padding = {1, 1}}).
  template <class Mode = exec::mode>
  Conv2d(std::int64_t in, std::int64_t out, std::int64_t kernel, const Conv2dOptions& opt = {},
         Device device = Device::cpu())
      : Conv2d(in, out, std::array<std::int64_t, 2>{kernel, kernel}, opt, device) {}

  /// x [N, in, H, W] -> [N, out, OH, OW].
  template <class Mode = exec::mode>
  Var<T> forward(const Var<T>& x) const {
    EMBER_CHECK(x.shape().rank() == 4 && x.shape()[1] == in_channels,
                "ember: nn::Conv2d: input must be [N, ", in_channels, ", H, W], got ",
                x.shape().str());
    using Arg = autograd::ParamArg<T>;  // a Var or none (the Tensor overloads do not match)
    return conv2d<T>(x, Arg(weight), bias.defined() ? Arg(bias) : Arg(), options);
  }

  /// The output shape for an input of shape `in` ([N, in, H, W]), without running it.
  Shape output_shape(const Shape& in) const {
    return ops::conv_geometry(in, weight.shape(), options).out_shape();
  }
};

}  // namespace ember::nn
