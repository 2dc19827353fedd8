// nn::Conv2d's options survive construction when this file is built for the host's own
// instruction set (tests/CMakeLists.txt adds -march=native to it where the compiler takes it).
//
// GCC 12.2 at -O2 -march=native (AVX-512) mis-vectorised the by-value default `Conv2dOptions
// opt = {}` of Conv2d's constructor next to a designated-initialiser sibling: a ResNet
// bottleneck's 1x1 convolution came out with padding {1, 0}, and its outputs one row taller than
// the shortcut's. The constructors now take the options by reference; this test keeps watch in
// the code shape that showed it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>

#include <ember/ember.hpp>

namespace {
using ember::Conv2dOptions;
using ember::Device;

// A ResNet bottleneck's three convolutions, initialised as examples/resnet50/resnet.hpp does.
struct Bottleneck {
  ember::nn::Conv2d<float> conv1, conv2, conv3;
  Bottleneck(std::int64_t stride, Device device)
      : conv1(8, 8, 1, {.bias = false}, device),
        conv2(8, 8, 3, {.stride = {stride, stride}, .padding = {1, 1}, .bias = false}, device),
        conv3(8, 8, 1, {.bias = false}, device) {}
};

void require_options(const Conv2dOptions& o, std::int64_t stride, std::int64_t padding) {
  CHECK(o.stride[0] == stride);
  CHECK(o.stride[1] == stride);
  CHECK(o.padding[0] == padding);
  CHECK(o.padding[1] == padding);
  CHECK(o.dilation[0] == 1);
  CHECK(o.dilation[1] == 1);
  CHECK(o.groups == 1);
}
}  // namespace

// Built where the stride is not a constant, as in a model's constructor.
[[gnu::noinline]] Bottleneck* make_bottleneck(std::int64_t stride) {
  return new Bottleneck(stride, Device::cpu());
}

TEST_CASE("nn::Conv2d keeps its default and designated options under -march=native", "[nn]") {
  for (const std::int64_t stride : {1, 2}) {
    const std::unique_ptr<Bottleneck> b(make_bottleneck(stride));
    require_options(b->conv1.options, 1, 0);
    require_options(b->conv2.options, stride, 1);
    require_options(b->conv3.options, 1, 0);
    const ember::Var<float> x(ember::randn<float>(ember::Shape{1, 8, 5, 5}, 1));
    CHECK(b->conv3(b->conv2(b->conv1(x))).shape() ==
          ember::Shape{1, 8, stride == 1 ? 5 : 3, stride == 1 ? 5 : 3});
  }
}
