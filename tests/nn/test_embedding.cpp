// nn::Embedding: PyTorch's parameter name and shape, N(0, 1) initialisation, forward and the
// weight's gradient (repeated ids sum) against PyTorch (float64); ids out of range.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ember/ember.hpp>
#include <ember/nn/embedding.hpp>

#include "layer_fixtures.hpp"

namespace {
namespace test_nn_embedding {

using ember::Shape;
using ember::Tensor;
using ember::Var;
namespace fx = ember::testing::layers;

TEST_CASE("nn::Embedding: PyTorch's name and shape, N(0, 1) weights", "[nn]") {
  ember::nn::manual_seed(3);
  ember::nn::Embedding<float> emb(1000, 64);  // 64,000 draws
  REQUIRE(emb.named_parameters().size() == 1);
  REQUIRE(emb.named_parameters()[0].first == "weight");
  REQUIRE(emb.weight.shape() == Shape{1000, 64});
  REQUIRE(emb.parameter_count() == 64000);
  double s = 0, ss = 0;
  const auto w = emb.weight.value().to_vector();
  for (float v : w) {
    s += v;
    ss += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(w.size());
  REQUIRE(std::fabs(s / n) < 0.02);  // 5 standard errors (1 / sqrt(64000) = 0.004)
  REQUIRE(ss / n == Approx(1.0).epsilon(0.03));
}

TEST_CASE("nn::Embedding: forward and gradient equal PyTorch's (float64)", "[nn]") {
  ember::nn::Embedding<double> emb(10, 4);
  fx::load_into(emb.weight, "emb.weight");
  const Tensor<std::int64_t> ids = ember::get_tensor<std::int64_t>(fx::fixture(), "emb.x");
  const Var<double> y = emb(ids);
  REQUIRE(y.shape() == Shape{2, 4, 4});
  fx::require_matches(y.value(), "emb.y");
  y.backward(fx::get("emb.gy"));
  fx::require_matches(emb.weight.grad(), "emb.g.weight");
}

TEST_CASE("nn::Embedding: padding_idx starts at zeros and is never trained", "[nn]") {
  ember::nn::Embedding<float> emb(10, 4, ember::Device::cpu(), 7);
  REQUIRE(emb.padding_idx == 7);
  const std::vector<float> w = emb.weight.value().to_vector();
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (i / 4 == 7) REQUIRE(w[i] == 0.0f);
  }
  const Tensor<std::int64_t> ids = ember::from_vector<std::int64_t>({7, 1, 7, 3}, Shape{4});
  ember::sum(emb(ids)).backward();
  const std::vector<float> g = emb.weight.grad().to_vector();
  for (std::size_t i = 0; i < g.size(); ++i) {
    const std::size_t row = i / 4;
    REQUIRE(g[i] == (row == 1 || row == 3 ? 1.0f : 0.0f));
  }
  REQUIRE_THROWS_AS(ember::nn::Embedding<float>(10, 4, ember::Device::cpu(), 10), ember::Error);
}

TEST_CASE("nn::Embedding: max_norm renormalises the rows a forward looks up", "[nn]") {
  // N(0, 1) rows of 16: norms about 4, against max_norm 2.
  ember::nn::Embedding<double> emb(10, 16, ember::Device::cpu(), std::nullopt, 2.0);
  REQUIRE(emb.max_norm == 2.0);
  REQUIRE(emb.norm_type == 2.0);
  const std::vector<double> before = emb.weight.value().to_vector();
  const auto row_norm = [](const std::vector<double>& w, std::size_t row) {
    double s = 0;
    for (std::size_t d = 0; d < 16; ++d) s += w[row * 16 + d] * w[row * 16 + d];
    return std::sqrt(s);
  };
  const Tensor<std::int64_t> ids = ember::from_vector<std::int64_t>({3, 8, 3}, Shape{3});
  const Var<double> y = emb(ids);
  const std::vector<double> after = emb.weight.value().to_vector();
  for (std::size_t row = 0; row < 10; ++row) {
    INFO("row " << row);
    if (row == 3 || row == 8) {
      REQUIRE(row_norm(before, row) > 2.0);
      REQUIRE(row_norm(after, row) == Approx(2.0).epsilon(1e-6));
    } else {
      for (std::size_t d = 0; d < 16; ++d) REQUIRE(after[row * 16 + d] == before[row * 16 + d]);
    }
  }
  REQUIRE(row_norm(y.value().to_vector(), 0) == Approx(2.0).epsilon(1e-6));
}

TEST_CASE("nn::Embedding: bad arguments are ember::Error", "[nn]") {
  REQUIRE_THROWS_AS(ember::nn::Embedding<float>(0, 4), ember::Error);
  REQUIRE_THROWS_AS(ember::nn::Embedding<float>(4, -1), ember::Error);
  ember::nn::Embedding<float> emb(10, 4);
  REQUIRE_THROWS_AS(emb(ember::from_vector<std::int64_t>({1, 10})), ember::Error);
  REQUIRE_THROWS_AS(emb(ember::from_vector<std::int64_t>({-1, 2})), ember::Error);
  REQUIRE_THROWS_AS(emb(Tensor<std::int64_t>()), ember::Error);
}

}  // namespace test_nn_embedding
}  // namespace
