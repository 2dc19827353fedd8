// nn::MultiheadSelfAttention: nn.MultiheadAttention's parameter names, shapes, counts and
// initialisation; forward and every gradient against PyTorch (float64) with a key-padding mask
// and causal; attention dropout seeded from nn::manual_seed; bad arguments.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <ember/ember.hpp>
#include <ember/nn/attention.hpp>

#include "layer_fixtures.hpp"

namespace {
namespace test_nn_attention {

using ember::Shape;
using ember::Tensor;
using ember::Var;
namespace fx = ember::testing::layers;
using Mha = ember::nn::MultiheadSelfAttention<double>;

std::vector<std::string> names(const ember::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

void load(Mha& mha) {
  for (const auto& [name, p] : mha.named_parameters()) {
    fx::load_into(*std::get<Var<double>*>(p), "mha_mask." + name);
  }
}

void check_grads(const std::string& c, const Mha& mha, const Var<double>& x) {
  fx::require_matches(x.grad(), c + ".gx");
  for (const auto& [name, p] : mha.named_parameters()) {
    fx::require_matches(std::get<Var<double>*>(p)->grad(), c + ".g." + name);
  }
}

TEST_CASE("nn::MultiheadSelfAttention: nn.MultiheadAttention's names, counts and init", "[nn]") {
  ember::nn::manual_seed(2);
  ember::nn::MultiheadSelfAttention<float> bert(768, 12);
  REQUIRE(names(bert) == std::vector<std::string>{"in_proj_weight", "in_proj_bias",
                                                  "out_proj.weight", "out_proj.bias"});
  REQUIRE(bert.in_proj_weight.shape() == Shape{2304, 768});
  REQUIRE(bert.in_proj_bias.shape() == Shape{2304});
  REQUIRE(bert.out_proj.weight.shape() == Shape{768, 768});
  REQUIRE(bert.parameter_count() == 2362368);
  REQUIRE(bert.head_dim == 64);
  // Biases zero; in_proj_weight xavier-uniform: bound sqrt(6 / (768 + 2304)).
  REQUIRE(bert.in_proj_bias.value().to_vector() == std::vector<float>(2304, 0.0f));
  REQUIRE(bert.out_proj.bias.value().to_vector() == std::vector<float>(768, 0.0f));
  const double bound = std::sqrt(6.0 / (768 + 2304));
  const Tensor<float> w = bert.in_proj_weight.value();
  REQUIRE(Tensor<float>(ember::max(ember::abs(w))).item() <= bound);
  REQUIRE(Tensor<float>(ember::max(ember::abs(w))).item() > 0.99 * bound);
  // out_proj keeps Linear's default, U(+-1/sqrt(768)).
  const Tensor<float> wo = bert.out_proj.weight.value();
  REQUIRE(Tensor<float>(ember::max(ember::abs(wo))).item() <= 1.0 / std::sqrt(768.0));

  ember::nn::MultiheadSelfAttention<float> no_bias(64, 4, {.bias = false});
  REQUIRE(names(no_bias) == std::vector<std::string>{"in_proj_weight", "out_proj.weight"});
  REQUIRE(no_bias.parameter_count() == 4 * 64 * 64);
}

TEST_CASE("nn::MultiheadSelfAttention: equals nn.MultiheadAttention (float64)", "[nn]") {
  Mha mha(8, 2);
  load(mha);
  SECTION("key-padding mask (true = attend)") {
    const Tensor<bool> keep = ember::get_tensor<bool>(fx::fixture(), "mha_mask.keep");
    const Var<double> x = fx::input("mha_mask.x");
    const Var<double> y = mha(x, Mha::key_padding(keep));
    fx::require_matches(y.value(), "mha_mask.y");
    y.backward(fx::get("mha_mask.gy"));
    check_grads("mha_mask", mha, x);
  }
  SECTION("causal") {
    const Var<double> x = fx::input("mha_causal.x");
    const Var<double> y = mha(x, {}, true);
    fx::require_matches(y.value(), "mha_causal.y");
    y.backward(fx::get("mha_causal.gy"));
    check_grads("mha_causal", mha, x);
  }
  SECTION("a full [S, S] mask equals causal") {
    const std::int64_t S = 5;
    std::vector<bool> lower;
    for (std::int64_t i = 0; i < S; ++i) {
      for (std::int64_t j = 0; j < S; ++j) lower.push_back(j <= i);
    }
    const Var<double> x(fx::get("mha_causal.x"));
    ember::testing::require_close(mha(x, ember::from_vector<bool>(lower, Shape{S, S})).value(),
                                  fx::get("mha_causal.y"), 1e-10);
  }
}

TEST_CASE("nn::MultiheadSelfAttention: dropout in training only, seeded", "[nn]") {
  ember::nn::manual_seed(4);
  ember::nn::MultiheadSelfAttention<float> mha(16, 4, {.dropout = 0.5});
  const Var<float> x(ember::randn<float>(Shape{2, 6, 16}, 9));
  ember::nn::manual_seed(10);
  const auto a = mha(x).value().to_vector();
  const auto b = mha(x).value().to_vector();
  REQUIRE(a != b);
  ember::nn::manual_seed(10);
  REQUIRE(mha(x).value().to_vector() == a);
  mha.eval();
  const auto e1 = mha(x).value().to_vector();
  REQUIRE(mha(x).value().to_vector() == e1);
  REQUIRE(e1 != a);
}

TEST_CASE("nn::MultiheadSelfAttention: bad arguments are ember::Error", "[nn]") {
  using M = ember::nn::MultiheadSelfAttention<float>;
  REQUIRE_THROWS_WITH(M(10, 4), Catch::Contains("num_heads 4") && Catch::Contains("10"));
  REQUIRE_THROWS_AS(M(0, 1), ember::Error);
  REQUIRE_THROWS_AS(M(8, 0), ember::Error);
  REQUIRE_THROWS_AS(M(8, 2, {.dropout = 1.0}), ember::Error);
  M mha(8, 2);
  REQUIRE_THROWS_AS(mha(Var<float>(ember::zeros<float>(Shape{2, 5, 6}))), ember::Error);
  REQUIRE_THROWS_AS(mha(Var<float>(ember::zeros<float>(Shape{5, 8}))), ember::Error);
  const Var<float> x(ember::zeros<float>(Shape{2, 5, 8}));
  REQUIRE_THROWS_WITH(mha(x, ember::from_vector<bool>(std::vector<bool>(8, true), Shape{2, 4})),
                      Catch::Contains("mask [2, 4]"));
  REQUIRE_THROWS_AS(M::key_padding(ember::from_vector<bool>({true, false})), ember::Error);
}

}  // namespace test_nn_attention
}  // namespace
