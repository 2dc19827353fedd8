// nn::Conv2d: PyTorch's parameter names, shapes, counts and initialisation bounds; forward and
// gradients against PyTorch (float64: stride and padding with a bias; groups, dilation and
// rectangular windows without); bad arguments.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <ember/ember.hpp>
#include <ember/nn/conv.hpp>

#include "layer_fixtures.hpp"

namespace {
namespace test_nn_conv {

using ember::Shape;
using ember::Tensor;
using ember::Var;
using ember::nn::Conv2dOptions;
namespace fx = ember::testing::layers;

std::vector<std::string> names(const ember::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

double max_abs(const Tensor<float>& t) {
  double m = 0;
  for (float v : t.contiguous().to_vector()) m = std::max(m, static_cast<double>(std::fabs(v)));
  return m;
}

// The fixture's case `c` through a Conv2d<double> built with `opt`.
void check_case(const std::string& c, ember::nn::Conv2d<double>& conv) {
  fx::load_into(conv.weight, c + ".weight");
  if (conv.bias.defined()) fx::load_into(conv.bias, c + ".bias");
  const Var<double> x = fx::input(c + ".x");
  const Var<double> y = conv(x);
  fx::require_matches(y.value(), c + ".y");
  y.backward(fx::get(c + ".gy"));
  fx::require_matches(x.grad(), c + ".gx");
  fx::require_matches(conv.weight.grad(), c + ".g.weight");
  if (conv.bias.defined()) fx::require_matches(conv.bias.grad(), c + ".g.bias");
}

TEST_CASE("nn::Conv2d: PyTorch's names, shapes and counts", "[nn]") {
  // ResNet-50's stem: 64 * 3 * 7 * 7 = 9,408 parameters, no bias.
  ember::nn::Conv2d<float> stem(3, 64, 7,
                                Conv2dOptions{.stride = {2, 2}, .padding = {3, 3}, .bias = false});
  REQUIRE(names(stem) == std::vector<std::string>{"weight"});
  REQUIRE(stem.weight.shape() == Shape{64, 3, 7, 7});
  REQUIRE_FALSE(stem.bias.defined());
  REQUIRE(stem.parameter_count() == 9408);
  REQUIRE(stem.named_buffers().empty());

  // Grouped, rectangular, with a bias: weight [out, in / groups, kh, kw].
  ember::nn::Conv2d<float> grouped(8, 12, {3, 1}, Conv2dOptions{.groups = 4});
  REQUIRE(names(grouped) == std::vector<std::string>{"weight", "bias"});
  REQUIRE(grouped.weight.shape() == Shape{12, 2, 3, 1});
  REQUIRE(grouped.bias.shape() == Shape{12});
  REQUIRE(grouped.parameter_count() == 12 * 2 * 3 + 12);
  REQUIRE(grouped.weight.requires_grad());
  REQUIRE(grouped.bias.requires_grad());
}

TEST_CASE("nn::Conv2d: PyTorch's initialisation, U(+-1/sqrt(fan_in)), seeded", "[nn]") {
  ember::nn::manual_seed(7);
  ember::nn::Conv2d<float> a(16, 32, 3);
  const double bound = 1.0 / std::sqrt(16.0 * 9.0);  // fan_in = in * kh * kw
  REQUIRE(max_abs(a.weight.value()) <= bound);
  REQUIRE(max_abs(a.weight.value()) > 0.9 * bound);  // 4,608 draws fill the range
  REQUIRE(max_abs(a.bias.value()) <= bound);
  REQUIRE(max_abs(a.bias.value()) > 0);
  // Uniform on [-b, b]: variance b^2 / 3.
  double ss = 0;
  const auto w = a.weight.value().to_vector();
  for (float v : w) ss += static_cast<double>(v) * v;
  REQUIRE(ss / static_cast<double>(w.size()) == Approx(bound * bound / 3).epsilon(0.05));
  // Groups divide fan_in.
  ember::nn::Conv2d<float> g(16, 32, 3, Conv2dOptions{.groups = 8});
  REQUIRE(max_abs(g.weight.value()) <= 1.0 / std::sqrt(2.0 * 9.0));
  REQUIRE(max_abs(g.weight.value()) > 1.0 / std::sqrt(16.0 * 9.0));
  // The same seed, the same weights.
  ember::nn::manual_seed(7);
  ember::nn::Conv2d<float> b(16, 32, 3);
  REQUIRE(a.weight.value().to_vector() == b.weight.value().to_vector());
  REQUIRE(a.bias.value().to_vector() == b.bias.value().to_vector());
}

TEST_CASE("nn::Conv2d: forward and gradients equal PyTorch's (float64)", "[nn]") {
  SECTION("3x3, stride 2, padding 1, bias") {
    ember::nn::Conv2d<double> conv(4, 6, 3, Conv2dOptions{{2, 2}, {1, 1}});
    check_case("conv_a", conv);
  }
  SECTION("3x2, stride 1x2, padding 2x1, dilation 2x1, 2 groups, no bias") {
    ember::nn::Conv2d<double> conv(
        4, 6, {3, 2},
        Conv2dOptions{
            .stride = {1, 2}, .padding = {2, 1}, .dilation = {2, 1}, .groups = 2, .bias = false});
    check_case("conv_g", conv);
  }
}

TEST_CASE("nn::Conv2d: bad arguments are ember::Error", "[nn]") {
  using C = ember::nn::Conv2d<float>;
  REQUIRE_THROWS_AS(C(6, 8, 3, Conv2dOptions{.groups = 4}), ember::Error);  // 6 % 4
  REQUIRE_THROWS_AS(C(8, 6, 3, Conv2dOptions{.groups = 4}), ember::Error);  // 6 % 4
  REQUIRE_THROWS_AS(C(0, 8, 3), ember::Error);
  REQUIRE_THROWS_AS(C(3, 8, 0), ember::Error);
  REQUIRE_THROWS_AS(C(3, 8, 3, Conv2dOptions{.stride = {0, 1}}), ember::Error);
  REQUIRE_THROWS_AS(C(3, 8, 3, Conv2dOptions{.padding = {-1, 0}}), ember::Error);
  C conv(3, 8, 3);
  // Wrong channel count, wrong rank, a kernel larger than the input.
  REQUIRE_THROWS_WITH(conv(Var<float>(ember::zeros<float>(Shape{1, 4, 8, 8}))),
                      Catch::Contains("nn::Conv2d") && Catch::Contains("[1, 4, 8, 8]"));
  REQUIRE_THROWS_AS(conv(Var<float>(ember::zeros<float>(Shape{3, 8, 8}))), ember::Error);
  REQUIRE_THROWS_AS(conv(Var<float>(ember::zeros<float>(Shape{1, 3, 2, 2}))), ember::Error);
}

}  // namespace test_nn_conv
}  // namespace
