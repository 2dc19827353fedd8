// nn::BatchNorm2d and nn::LayerNorm: PyTorch's parameter and buffer names, shapes and initial
// values; forward and gradients against PyTorch (float64): batch norm in training (the running
// statistics after two batches, num_batches_tracked), in evaluation, and relu(bn(x) + residual);
// layer norm over two trailing dims; bad arguments.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <ember/ember.hpp>
#include <ember/nn/normalization.hpp>

#include "layer_fixtures.hpp"

namespace {
namespace test_nn_normalization {

using ember::Shape;
using ember::Tensor;
using ember::Var;
namespace fx = ember::testing::layers;

std::vector<std::string> param_names(const ember::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}
std::vector<std::string> buffer_names(const ember::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, b] : m.named_buffers()) out.push_back(name);
  return out;
}
std::int64_t batches(const ember::nn::BatchNorm2d<double>& bn) {
  return bn.num_batches_tracked.item();
}

TEST_CASE("nn::BatchNorm2d: PyTorch's parameters, buffers and initial values", "[nn]") {
  ember::nn::BatchNorm2d<float> bn(64);
  REQUIRE(param_names(bn) == std::vector<std::string>{"weight", "bias"});
  REQUIRE(buffer_names(bn) ==
          std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"});
  REQUIRE(bn.parameter_count() == 128);
  REQUIRE(bn.weight.value().to_vector() == std::vector<float>(64, 1.0f));
  REQUIRE(bn.bias.value().to_vector() == std::vector<float>(64, 0.0f));
  REQUIRE(bn.running_mean.to_vector() == std::vector<float>(64, 0.0f));
  REQUIRE(bn.running_var.to_vector() == std::vector<float>(64, 1.0f));
  REQUIRE(bn.num_batches_tracked.rank() == 0);
  REQUIRE(bn.num_batches_tracked.item() == 0);
  REQUIRE(std::holds_alternative<Tensor<std::int64_t>*>(bn.named_buffers()[2].second));

  ember::nn::BatchNorm2d<float> plain(8, {.affine = false, .track_running_stats = false});
  REQUIRE(plain.named_parameters().empty());
  REQUIRE(plain.named_buffers().empty());
  // Without running statistics it normalises with the batch's, in evaluation too.
  plain.eval();
  const Var<float> x(ember::randn<float>(Shape{4, 8, 3, 3}, 3, ember::Device::cpu(), 5.0, 2.0));
  const double mean = Tensor<float>(ember::mean(plain(x).value())).item();
  REQUIRE(std::fabs(mean) < 1e-4);
}

TEST_CASE("nn::BatchNorm2d: training and evaluation equal PyTorch's (float64)", "[nn]") {
  ember::nn::BatchNorm2d<double> bn(3);
  fx::load_into(bn.weight, "bn_t1.weight");
  fx::load_into(bn.bias, "bn_t1.bias");
  REQUIRE(bn.is_training());

  // First batch, with its backward.
  const Var<double> x1 = fx::input("bn_t1.x");
  const Var<double> y1 = bn(x1);
  fx::require_matches(y1.value(), "bn_t1.y");
  REQUIRE(batches(bn) == 1);
  y1.backward(fx::get("bn_t1.gy"));
  fx::require_matches(x1.grad(), "bn_t1.gx");
  fx::require_matches(bn.weight.grad(), "bn_t1.g.weight");
  fx::require_matches(bn.bias.grad(), "bn_t1.g.bias");

  // Second batch: the running statistics blend both (unbiased variance, momentum 0.1).
  const Tensor<double> rm_handle = bn.running_mean;  // updated in place
  fx::require_matches(bn(Var<double>(fx::get("bn_t2.x"))).value(), "bn_t2.y");
  REQUIRE(batches(bn) == 2);
  REQUIRE(batches(bn) ==
          ember::get_tensor<std::int64_t>(fx::fixture(), "bn_t2.num_batches_tracked").item());
  fx::require_matches(bn.running_mean, "bn_t2.running_mean");
  fx::require_matches(bn.running_var, "bn_t2.running_var");
  fx::require_matches(rm_handle, "bn_t2.running_mean");

  // Evaluation: the running statistics, left as they are; gradients through fixed statistics.
  bn.eval();
  bn.zero_grad();
  const Var<double> x3 = fx::input("bn_e.x");
  const Var<double> y3 = bn(x3);
  fx::require_matches(y3.value(), "bn_e.y");
  REQUIRE(batches(bn) == 2);
  fx::require_matches(bn.running_mean, "bn_t2.running_mean");
  y3.backward(fx::get("bn_e.gy"));
  fx::require_matches(x3.grad(), "bn_e.gx");
  fx::require_matches(bn.weight.grad(), "bn_e.g.weight");
  fx::require_matches(bn.bias.grad(), "bn_e.g.bias");
}

TEST_CASE("nn::BatchNorm2d: forward_add_relu equals relu(bn(x) + residual) of PyTorch", "[nn]") {
  ember::nn::BatchNorm2d<double> bn(3);
  fx::load_into(bn.weight, "bnr.weight");
  fx::load_into(bn.bias, "bnr.bias");
  const Var<double> x = fx::input("bnr.x");
  const Var<double> res = fx::input("bnr.res");
  const Var<double> y = bn.forward_add_relu(x, res);
  fx::require_matches(y.value(), "bnr.y");
  REQUIRE(batches(bn) == 1);
  fx::require_matches(bn.running_mean, "bnr.running_mean");
  fx::require_matches(bn.running_var, "bnr.running_var");
  y.backward(fx::get("bnr.gy"));
  fx::require_matches(x.grad(), "bnr.gx");
  fx::require_matches(res.grad(), "bnr.gres");
  fx::require_matches(bn.weight.grad(), "bnr.g.weight");
  fx::require_matches(bn.bias.grad(), "bnr.g.bias");
}

TEST_CASE("nn::LayerNorm: PyTorch's parameters; forward and gradients (float64)", "[nn]") {
  ember::nn::LayerNorm<float> bert(768);
  REQUIRE(param_names(bert) == std::vector<std::string>{"weight", "bias"});
  REQUIRE(bert.weight.shape() == Shape{768});
  REQUIRE(bert.parameter_count() == 1536);
  REQUIRE(bert.weight.value().to_vector() == std::vector<float>(768, 1.0f));
  REQUIRE(bert.bias.value().to_vector() == std::vector<float>(768, 0.0f));

  ember::nn::LayerNorm<double> ln(Shape{4, 5});
  REQUIRE(ln.weight.shape() == Shape{4, 5});
  fx::load_into(ln.weight, "ln.weight");
  fx::load_into(ln.bias, "ln.bias");
  const Var<double> x = fx::input("ln.x");
  const Var<double> y = ln(x);
  fx::require_matches(y.value(), "ln.y");
  y.backward(fx::get("ln.gy"));
  fx::require_matches(x.grad(), "ln.gx");
  fx::require_matches(ln.weight.grad(), "ln.g.weight");
  fx::require_matches(ln.bias.grad(), "ln.g.bias");

  // Without parameters: the same normalisation, weight 1 and bias 0.
  ember::nn::LayerNorm<double> bare(Shape{4, 5}, {.elementwise_affine = false});
  REQUIRE(bare.named_parameters().empty());
  ember::nn::LayerNorm<double> unit(Shape{4, 5});
  const Var<double> x2 = fx::input("ln.x");
  const Var<double> yb = bare(x2);
  ember::testing::require_close(yb.value(), unit(Var<double>(fx::get("ln.x"))).value(), 1e-12);
  yb.backward(fx::get("ln.gy"));
  const Var<double> x3 = fx::input("ln.x");
  unit(x3).backward(fx::get("ln.gy"));
  ember::testing::require_close(x2.grad(), x3.grad(), 1e-12);
}

TEST_CASE("nn::BatchNorm2d, nn::LayerNorm: bad arguments are ember::Error", "[nn]") {
  REQUIRE_THROWS_AS(ember::nn::BatchNorm2d<float>(0), ember::Error);
  REQUIRE_THROWS_AS(ember::nn::BatchNorm2d<float>(4, {.eps = 0.0}), ember::Error);
  REQUIRE_THROWS_AS(ember::nn::BatchNorm2d<float>(4, {.momentum = 1.5}), ember::Error);
  ember::nn::BatchNorm2d<float> bn(4);
  REQUIRE_THROWS_WITH(bn(Var<float>(ember::zeros<float>(Shape{2, 3, 5, 5}))),
                      Catch::Contains("nn::BatchNorm2d") && Catch::Contains("[2, 3, 5, 5]"));
  REQUIRE_THROWS_AS(bn(Var<float>(ember::zeros<float>(Shape{2, 4}))), ember::Error);
  REQUIRE(bn.num_batches_tracked.item() == 0);  // nothing counted for rejected input
  ember::nn::BatchNorm2d<float> no_affine(4, {.affine = false});
  REQUIRE_THROWS_AS(
      no_affine.forward_add_relu(Var<float>(ember::zeros<float>(Shape{2, 4, 3, 3})), {}),
      ember::Error);

  REQUIRE_THROWS_AS(ember::nn::LayerNorm<float>(0), ember::Error);
  REQUIRE_THROWS_AS(ember::nn::LayerNorm<float>(Shape{}), ember::Error);
  ember::nn::LayerNorm<float> ln(Shape{4, 5});
  REQUIRE_THROWS_WITH(ln(Var<float>(ember::zeros<float>(Shape{2, 5, 4}))),
                      Catch::Contains("nn::LayerNorm") && Catch::Contains("[2, 5, 4]"));
  REQUIRE_THROWS_AS(ln(Var<float>(ember::zeros<float>(Shape{5}))), ember::Error);
}

}  // namespace test_nn_normalization
}  // namespace
