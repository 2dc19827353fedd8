// nn::Dropout: the fraction of zeros near p, the kept elements scaled by 1 / (1 - p), the
// backward applying the same mask, masks reproducible after nn::manual_seed (and
// nn::set_rng_state) and fresh on each forward, the identity in evaluation, p = 0 and p = 1.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <ember/ember.hpp>
#include <ember/nn/dropout.hpp>

namespace {
namespace test_nn_dropout {

using ember::Shape;
using ember::Tensor;
using ember::Var;

constexpr std::int64_t kN = 200000;

Var<double> ones_input() { return ember::param(ember::ones<double>(Shape{kN})); }

TEST_CASE("nn::Dropout: zeros near p, the rest scaled by 1 / (1 - p)", "[nn]") {
  ember::nn::manual_seed(11);
  for (double p : {0.1, 0.5, 0.9}) {
    INFO("p = " << p);
    ember::nn::Dropout<double> drop(p);
    REQUIRE(drop.parameter_count() == 0);
    const Var<double> x = ones_input();
    const Var<double> y = drop(x);
    const std::vector<double> v = y.value().to_vector();
    std::int64_t zeros = 0, off_scale = 0;
    for (double e : v) {
      if (e == 0) {
        ++zeros;
      } else if (std::fabs(e * (1.0 - p) - 1.0) > 1e-12) {
        ++off_scale;
      }
    }
    REQUIRE(off_scale == 0);
    // Binomial(n, p): 5 standard deviations.
    const double sd = std::sqrt(p * (1 - p) / static_cast<double>(kN));
    REQUIRE(std::fabs(static_cast<double>(zeros) / kN - p) < 5 * sd);
    // The backward applies the same mask and scale.
    y.backward(ember::ones<double>(Shape{kN}));
    REQUIRE(x.grad().to_vector() == v);
  }
}

TEST_CASE("nn::Dropout: reproducible after manual_seed, fresh on each forward", "[nn]") {
  ember::nn::Dropout<float> drop(0.5);
  const Var<float> x(ember::ones<float>(Shape{4096}));
  ember::nn::manual_seed(5);
  const auto first = drop(x).value().to_vector();
  const auto second = drop(x).value().to_vector();
  REQUIRE(first != second);  // the stream advanced
  ember::nn::manual_seed(5);
  REQUIRE(drop(x).value().to_vector() == first);
  // A saved stream position replays the masks after it.
  const ember::nn::RngState saved = ember::nn::rng_state();
  const auto third = drop(x).value().to_vector();
  (void)drop(x);
  ember::nn::set_rng_state(saved);
  REQUIRE(drop(x).value().to_vector() == third);
  // Another seed, another mask.
  ember::nn::manual_seed(6);
  REQUIRE(drop(x).value().to_vector() != first);
}

TEST_CASE("nn::Dropout: identity in evaluation and at p = 0; p = 1 drops everything", "[nn]") {
  const Var<float> x(ember::randn<float>(Shape{1000}, 1));
  ember::nn::Dropout<float> drop(0.5);
  drop.eval();
  const ember::nn::RngState before = ember::nn::rng_state();
  const Var<float> y = drop(x);
  REQUIRE(y.value().data() == x.value().data());            // the input itself, no copy
  REQUIRE(ember::nn::rng_state().offset == before.offset);  // nothing drawn
  drop.train();
  REQUIRE(y.value().to_vector() == x.value().to_vector());
  REQUIRE(ember::nn::Dropout<float>(0.0)(x).value().to_vector() == x.value().to_vector());
  const auto all = ember::nn::Dropout<float>(1.0)(x).value().to_vector();
  REQUIRE(all == std::vector<float>(1000, 0.0f));
  REQUIRE_THROWS_AS(ember::nn::Dropout<float>(1.5), ember::Error);
  REQUIRE_THROWS_AS(ember::nn::Dropout<float>(-0.1), ember::Error);
}

}  // namespace test_nn_dropout
}  // namespace
