// nn::MaxPool2d and nn::AdaptiveAvgPool2d: PyTorch's pooling layers (no parameters), forwarding
// to ember::max_pool2d and ember::adaptive_avg_pool2d. The window is PyTorch's: stride defaults
// to the kernel, padding at most half the kernel, ceil_mode keeps a last partial window.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "../autograd/pooling.hpp"
#include "module.hpp"

namespace ember::nn {

template <FloatingElement T = float>
class MaxPool2d : public Module, public Callable<MaxPool2d<T>> {
 public:
  Pool2dOptions options;  // stride filled in (never {0, 0})

  /// MaxPool2d({3, 3}, std::array<std::int64_t, 2>{2, 2}, {1, 1}).
  explicit MaxPool2d(std::array<std::int64_t, 2> kernel,
                     std::optional<std::array<std::int64_t, 2>> stride = std::nullopt,
                     std::array<std::int64_t, 2> padding = {0, 0},
                     std::array<std::int64_t, 2> dilation = {1, 1}, bool ceil_mode = false) {
    options.kernel = kernel;
    options.stride = stride.value_or(kernel);
    options.padding = padding;
    options.dilation = dilation;
    options.ceil_mode = ceil_mode;
    for (int d = 0; d < 2; ++d) {
      EMBER_CHECK(kernel[d] > 0 && options.stride[d] > 0 && dilation[d] > 0 && padding[d] >= 0 &&
                      padding[d] <= kernel[d] / 2,
                  "ember: nn::MaxPool2d: needs positive kernel, stride and dilation and padding "
                  "in [0, kernel / 2], got kernel ",
                  kernel[0], "x", kernel[1], ", stride ", options.stride[0], "x", options.stride[1],
                  ", padding ", padding[0], "x", padding[1], ", dilation ", dilation[0], "x",
                  dilation[1]);
    }
  }
  /// MaxPool2d({2, 3}): a braced kernel alone (without this overload, {2, 3} could also be
  /// read as MaxPool2d(2, 3), kernel 2 and stride 3, and the call would be ambiguous).
  explicit MaxPool2d(const std::int64_t (&kernel)[2])
      : MaxPool2d(std::array<std::int64_t, 2>{kernel[0], kernel[1]}) {}
  /// MaxPool2d(3, 2, 1): ResNet's.
  explicit MaxPool2d(std::int64_t kernel, std::optional<std::int64_t> stride = std::nullopt,
                     std::int64_t padding = 0, std::int64_t dilation = 1, bool ceil_mode = false)
      : MaxPool2d(std::array<std::int64_t, 2>{kernel, kernel},
                  std::array<std::int64_t, 2>{stride.value_or(kernel), stride.value_or(kernel)},
                  {padding, padding}, {dilation, dilation}, ceil_mode) {}

  /// x [N, C, H, W] -> [N, C, OH, OW].
  template <class Mode = exec::mode>
  Var<T> forward(const Var<T>& x) const {
    EMBER_CHECK(x.shape().rank() == 4, "ember: nn::MaxPool2d: input must be [N, C, H, W], got ",
                x.shape().str());
    return max_pool2d<T>(x, options);
  }

  /// The output shape for an input of shape `in` ([N, C, H, W]), without running it.
  Shape output_shape(const Shape& in) const {
    const ops::Pool2dGeometry g = ops::pool2d_geometry(in, options, "nn::MaxPool2d");
    return Shape{g.N, g.C, g.h.out, g.w.out};
  }
};

template <FloatingElement T = float>
class AdaptiveAvgPool2d : public Module, public Callable<AdaptiveAvgPool2d<T>> {
 public:
  std::array<std::int64_t, 2> output_size;

  explicit AdaptiveAvgPool2d(std::array<std::int64_t, 2> out) : output_size(out) {
    EMBER_CHECK(out[0] > 0 && out[1] > 0,
                "ember: nn::AdaptiveAvgPool2d: output_size must be positive, got ", out[0], "x",
                out[1]);
  }
  /// AdaptiveAvgPool2d(1): global average pooling.
  explicit AdaptiveAvgPool2d(std::int64_t out)
      : AdaptiveAvgPool2d(std::array<std::int64_t, 2>{out, out}) {}

  /// x [N, C, H, W] -> [N, C, output_size[0], output_size[1]].
  template <class Mode = exec::mode>
  Var<T> forward(const Var<T>& x) const {
    EMBER_CHECK(x.shape().rank() == 4,
                "ember: nn::AdaptiveAvgPool2d: input must be [N, C, H, W], got ", x.shape().str());
    return adaptive_avg_pool2d<T>(x, output_size);
  }
};

}  // namespace ember::nn
