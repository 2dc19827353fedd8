// nn::Sequential: PyTorch's names ("0.weight", "1.running_mean"), layers built in place and
// returned with their types, train/eval reaching every layer; Conv2d -> BatchNorm2d -> ReLU ->
// MaxPool2d in training against PyTorch (float64), gradients and running statistics included.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <ember/ember.hpp>
#include <ember/nn/activation.hpp>
#include <ember/nn/conv.hpp>
#include <ember/nn/normalization.hpp>
#include <ember/nn/pooling.hpp>
#include <ember/nn/sequential.hpp>

#include "layer_fixtures.hpp"

namespace {
namespace test_nn_sequential {

using ember::Shape;
using ember::Var;
using ember::nn::Conv2dOptions;
namespace fx = ember::testing::layers;
namespace nn = ember::nn;

TEST_CASE("nn::Sequential: PyTorch's names, typed references, train/eval", "[nn]") {
  nn::Sequential<float> seq;
  REQUIRE(seq.empty());
  auto& conv = seq.emplace<nn::Conv2d<float>>(3, 4, 3, Conv2dOptions{.padding = {1, 1}});
  auto& bn = seq.emplace<nn::BatchNorm2d<float>>(4);
  seq.emplace<nn::ReLU<float>>();
  auto& conv2 = seq.emplace<nn::Conv2d<float>>(4, 2, 1);
  REQUIRE(seq.size() == 4);
  REQUIRE(&seq[0] == &conv);
  REQUIRE(&seq[3] == &conv2);
  REQUIRE_THROWS_AS(seq[4], ember::Error);
  std::vector<std::string> names;
  for (const auto& [name, p] : seq.named_parameters()) names.push_back(name);
  REQUIRE(names == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "3.weight",
                                            "3.bias"});
  std::vector<std::string> buffers;
  for (const auto& [name, b] : seq.named_buffers()) buffers.push_back(name);
  REQUIRE(buffers ==
          std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"});
  REQUIRE(seq.parameter_count() == 4 * 3 * 9 + 4 + 4 + 4 + 2 * 4 + 2);
  seq.eval();
  REQUIRE_FALSE(bn.is_training());
  seq.train();
  REQUIRE(bn.is_training());
  // The chain: shapes through every layer; an empty Sequential is the identity.
  const Var<float> x(ember::randn<float>(Shape{2, 3, 5, 5}, 1));
  REQUIRE(seq(x).shape() == Shape{2, 2, 5, 5});
  REQUIRE(bn.num_batches_tracked.item() == 1);
  nn::Sequential<float> none;
  REQUIRE(none(x).value().data() == x.value().data());
  // A layer whose input does not fit stops the chain with its own error.
  REQUIRE_THROWS_WITH(seq(Var<float>(ember::zeros<float>(Shape{2, 4, 5, 5}))),
                      Catch::Contains("nn::Conv2d"));
}

TEST_CASE("nn::Sequential: Conv2d, BatchNorm2d, ReLU, MaxPool2d equal PyTorch's (float64)",
          "[nn]") {
  nn::Sequential<double> seq;
  seq.emplace<nn::Conv2d<double>>(3, 4, 3, Conv2dOptions{.padding = {1, 1}});
  auto& bn = seq.emplace<nn::BatchNorm2d<double>>(4);
  seq.emplace<nn::ReLU<double>>();
  seq.emplace<nn::MaxPool2d<double>>(2);
  for (const auto& [name, p] : seq.named_parameters())
    fx::load_into(*std::get<Var<double>*>(p), "seq." + name);
  const Var<double> x = fx::input("seq.x");
  const Var<double> y = seq(x);
  fx::require_matches(y.value(), "seq.y");
  y.backward(fx::get("seq.gy"));
  fx::require_matches(x.grad(), "seq.gx");
  for (const auto& [name, p] : seq.named_parameters()) {
    fx::require_matches(std::get<Var<double>*>(p)->grad(), "seq.g." + name);
  }
  fx::require_matches(bn.running_mean, "seq.1.running_mean");
  fx::require_matches(bn.running_var, "seq.1.running_var");
}

}  // namespace test_nn_sequential
}  // namespace
