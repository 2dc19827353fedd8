// nn::ReLU and nn::GELU (both forms): forward and input gradients against PyTorch (float64);
// no parameters.
#include <catch2/catch.hpp>

#include <string>

#include <ember/ember.hpp>
#include <ember/nn/activation.hpp>

#include "layer_fixtures.hpp"

namespace {
namespace test_nn_activation {

using ember::Tensor;
using ember::Var;
namespace fx = ember::testing::layers;

TEST_CASE("nn::ReLU, nn::GELU: no parameters; forward and gradients equal PyTorch's", "[nn]") {
  ember::nn::ReLU<double> relu;
  ember::nn::GELU<double> gelu;
  ember::nn::GELU<double> gelu_tanh(true);
  REQUIRE(relu.parameter_count() == 0);
  REQUIRE(gelu.named_parameters().empty());
  REQUIRE_FALSE(gelu.approximate);
  REQUIRE(gelu_tanh.approximate);
  fx::check_forward_backward("relu", relu);
  fx::check_forward_backward("gelu", gelu);
  fx::check_forward_backward("gelu_tanh", gelu_tanh);
}

TEST_CASE("nn::GELU: the two forms differ (the tanh form is not the erf form)", "[nn]") {
  const Var<double> x(fx::get("gelu.x"));
  const Tensor<double> exact = ember::nn::GELU<double>()(x).value();
  const Tensor<double> approx = ember::nn::GELU<double>(true)(x).value();
  const double diff = Tensor<double>(ember::max(ember::abs(exact - approx))).item();
  REQUIRE(diff > 1e-5);
  REQUIRE(diff < 1e-2);
}

}  // namespace test_nn_activation
}  // namespace
