// dropout: the kept fraction and scale, the same mask for the same seed and offset (and on both
// devices: the Philox stream is the one rand uses), evaluation is the identity, ONNX's
// evaluation-mode reference data, gradcheck.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

#include "support/onnx.hpp"

using ember::Shape;
using ember::Tensor;
using ember::Var;

TEST_CASE("dropout keeps 1 - p of the elements, scaled by 1 / (1 - p)", "[ops][dropout]") {
  const std::int64_t n = 200000;
  const Tensor<float> x = ember::ones<float>(Shape{n});
  for (double p : {0.1, 0.5, 0.9}) {
    const auto y = ember::dropout(x, p, true, 42).to_vector();
    std::int64_t kept = 0;
    for (float v : y) {
      if (v != 0) {
        REQUIRE(v == Approx(1.0 / (1.0 - p)));
        ++kept;
      }
    }
    // Binomial(n, 1 - p): within 6 standard deviations (the seed is fixed: this is exact).
    const double sd = std::sqrt(n * p * (1 - p));
    REQUIRE(std::fabs(static_cast<double>(kept) - n * (1 - p)) < 6 * sd);
  }
  REQUIRE(ember::dropout(x, 1.0, true, 1).to_vector() == std::vector<float>(n, 0.0f));
  REQUIRE(ember::dropout(x, 0.0, true, 1).to_vector() == x.to_vector());
  REQUIRE_THROWS_AS(ember::dropout(x, 1.5, true, 1), ember::Error);
}

TEST_CASE("dropout: the mask is a function of seed, offset and element index", "[ops][dropout]") {
  const Tensor<double> x = ember::randn<double>(Shape{64, 33}, 3);
  const auto a = ember::dropout(x, 0.3, true, 7, 100).to_vector();
  REQUIRE(ember::dropout(x, 0.3, true, 7, 100).to_vector() == a);
  REQUIRE(ember::dropout(x, 0.3, true, 7, 101).to_vector() != a);
  REQUIRE(ember::dropout(x, 0.3, true, 8, 100).to_vector() != a);
  // The mask is the uniform stream of rand(seed, offset): kept where u >= p.
  const auto u =
      ember::rand<float>(Shape{64, 33}, 7, ember::Device::cpu(), 0.0, 1.0, 100).to_vector();
  const auto xv = x.to_vector();
  for (std::size_t i = 0; i < a.size(); ++i) REQUIRE((a[i] != 0) == (u[i] >= 0.3f || xv[i] == 0));
  // A transposed input drops by logical position, not by memory layout.
  REQUIRE(Tensor<double>(ember::dropout(x.t().contiguous().t(), 0.3, true, 7, 100)).to_vector() ==
          a);
  // Evaluation: the identity (the same tensor).
  REQUIRE(ember::dropout(x, 0.3, false, 7).data() == x.data());
}

TEST_CASE("dropout: ONNX's evaluation-mode reference data", "[ops][dropout][onnx]") {
  namespace onnx = ember::testing::onnx;
  if (!onnx::available("test_dropout_default")) {
    WARN("libonnx-testdata is not installed: ONNX reference data not checked");
    return;
  }
  for (const char* name :
       {"test_dropout_default", "test_dropout_default_ratio", "test_dropout_default_old"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    const Tensor<double> x = onnx::to_tensor<double>(t.inputs[0]);
    REQUIRE(ember::dropout(x, 0.5, false, 0).to_vector() == t.outputs[0].values);
  }
}

TEST_CASE("gradcheck: dropout", "[ops][dropout][gradcheck]") {
  auto r = ember::gradcheck(
      [](const std::vector<Var<double>>& v) {
        return Var<double>(ember::dropout(Var<double>(v[0] * v[0]), 0.4, true, 5, 9) * 2.0);
      },
      {ember::randn<double>(Shape{4, 6}, 1)});
  INFO(r);
  REQUIRE(r);
}
