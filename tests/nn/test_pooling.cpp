// nn::MaxPool2d and nn::AdaptiveAvgPool2d: no parameters; forward and input gradients against
// PyTorch (float64): a 3x3 window with stride 2 and padding 1 (ResNet's), a rectangular dilated
// window with ceil_mode, adaptive pooling to 3x2 from 7x5 and to 1x1; bad arguments.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>

#include <ember/ember.hpp>
#include <ember/nn/pooling.hpp>

#include "layer_fixtures.hpp"

namespace {
namespace test_nn_pooling {

using ember::Shape;
using ember::Var;
namespace fx = ember::testing::layers;

TEST_CASE("nn::MaxPool2d: the window's arguments as PyTorch's", "[nn]") {
  const ember::nn::MaxPool2d<float> resnet(3, 2, 1);
  REQUIRE(resnet.options.kernel == std::array<std::int64_t, 2>{3, 3});
  REQUIRE(resnet.options.stride == std::array<std::int64_t, 2>{2, 2});
  REQUIRE(resnet.options.padding == std::array<std::int64_t, 2>{1, 1});
  REQUIRE(resnet.parameter_count() == 0);
  const ember::nn::MaxPool2d<float> plain(2);  // stride defaults to the kernel
  REQUIRE(plain.options.stride == std::array<std::int64_t, 2>{2, 2});
  REQUIRE(plain(Var<float>(ember::zeros<float>(Shape{1, 3, 8, 6}))).shape() == Shape{1, 3, 4, 3});
  const ember::nn::MaxPool2d<float> rect({2, 3});
  REQUIRE(rect.options.stride == std::array<std::int64_t, 2>{2, 3});
}

TEST_CASE("nn::MaxPool2d, nn::AdaptiveAvgPool2d: equal PyTorch's (float64)", "[nn]") {
  SECTION("max 3x3, stride 2, padding 1") {
    fx::check_forward_backward("mp_a", ember::nn::MaxPool2d<double>(3, 2, 1));
  }
  SECTION("max 2x3, stride 2x1, padding 0x1, dilation 1x2, ceil_mode") {
    fx::check_forward_backward(
        "mp_b", ember::nn::MaxPool2d<double>({2, 3}, std::array<std::int64_t, 2>{2, 1}, {0, 1},
                                             {1, 2}, true));
  }
  SECTION("adaptive average 7x5 -> 3x2") {
    fx::check_forward_backward("ap_a", ember::nn::AdaptiveAvgPool2d<double>({3, 2}));
  }
  SECTION("adaptive average to 1x1 (global)") {
    fx::check_forward_backward("ap_g", ember::nn::AdaptiveAvgPool2d<double>(1));
  }
}

TEST_CASE("nn::MaxPool2d, nn::AdaptiveAvgPool2d: bad arguments are ember::Error", "[nn]") {
  using M = ember::nn::MaxPool2d<float>;
  REQUIRE_THROWS_AS(M(0), ember::Error);
  REQUIRE_THROWS_AS(M(3, 0), ember::Error);
  REQUIRE_THROWS_AS(M(3, 2, 2), ember::Error);  // padding above half the kernel
  REQUIRE_THROWS_AS(M(3, 2, 1, 0), ember::Error);
  REQUIRE_THROWS_AS(ember::nn::AdaptiveAvgPool2d<float>(0), ember::Error);
  REQUIRE_THROWS_WITH(M(2)(Var<float>(ember::zeros<float>(Shape{3, 8, 8}))),
                      Catch::Contains("nn::MaxPool2d") && Catch::Contains("[3, 8, 8]"));
  REQUIRE_THROWS_AS(M(5)(Var<float>(ember::zeros<float>(Shape{1, 1, 3, 3}))), ember::Error);
  REQUIRE_THROWS_AS(
      ember::nn::AdaptiveAvgPool2d<float>(2)(Var<float>(ember::zeros<float>(Shape{4, 4}))),
      ember::Error);
}

}  // namespace test_nn_pooling
}  // namespace
