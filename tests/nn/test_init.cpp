// nn::init: trunc_normal (values in [a, b], the truncated distribution's mean and standard
// deviation for 1e5 draws, reproducible after manual_seed, the quantile function it inverts),
// zeros and ones.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include <ember/ember.hpp>
#include <ember/nn/init.hpp>

namespace {
namespace test_nn_init {

using ember::Shape;
using ember::Tensor;

// The mean and standard deviation of normal(mu, sigma) truncated to [a, b].
std::pair<double, double> truncated_moments(double mu, double sigma, double a, double b) {
  const double al = (a - mu) / sigma, be = (b - mu) / sigma;
  auto pdf = [](double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); };
  auto cdf = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  const double Z = cdf(be) - cdf(al);
  const double m = (pdf(al) - pdf(be)) / Z;
  const double v = 1 + (al * pdf(al) - be * pdf(be)) / Z - m * m;
  return {mu + sigma * m, sigma * std::sqrt(v)};
}

void check_draws(double mu, double sigma, double a, double b) {
  INFO("normal(" << mu << ", " << sigma << ") on [" << a << ", " << b << "]");
  constexpr std::int64_t n = 100000;
  const std::vector<double> v =
      ember::nn::init::trunc_normal<double>(Shape{n}, mu, sigma, a, b).to_vector();
  double s = 0, ss = 0, lo = v[0], hi = v[0];
  for (double e : v) {
    s += e;
    ss += e * e;
    lo = std::min(lo, e);
    hi = std::max(hi, e);
  }
  REQUIRE(lo >= a);
  REQUIRE(hi <= b);
  const auto [want_mean, want_sd] = truncated_moments(mu, sigma, a, b);
  const double mean = s / n, sd = std::sqrt(ss / n - mean * mean);
  // 5 standard errors of the mean; the sample deviation within 2% (its error is ~0.3%).
  REQUIRE(std::fabs(mean - want_mean) < 5 * want_sd / std::sqrt(static_cast<double>(n)));
  REQUIRE(sd == Approx(want_sd).epsilon(0.02));
  // The draws fill the interval's ends, where the density is high enough.
  REQUIRE(lo < a + 0.05 * (b - a));
  REQUIRE(hi > b - 0.05 * (b - a));
}

TEST_CASE("nn::init::trunc_normal: values in [a, b], the truncated moments", "[nn]") {
  ember::nn::manual_seed(1);
  check_draws(0.0, 1.0, -2.0, 2.0);     // PyTorch's defaults
  check_draws(0.0, 0.02, -0.04, 0.04);  // BERT's (TensorFlow): cut at two std
  check_draws(1.0, 2.0, 0.5, 6.0);      // asymmetric, shifted
  check_draws(0.0, 1.0, 1.0, 3.0);      // one tail only
  check_draws(0.0, 1.0, -0.3, 0.2);     // nearly uniform
  // Bounds far outside: effectively normal(0, 0.02), never a value at a bound.
  const auto v = ember::nn::init::trunc_normal<float>(Shape{100000}, 0.0, 0.02).to_vector();
  float largest = 0;
  for (float e : v) largest = std::max(largest, std::fabs(e));
  REQUIRE(largest > 0.06f);  // 3 std: about 270 of 1e5 draws lie beyond
  REQUIRE(largest < 0.2f);   // 10 std
}

TEST_CASE("nn::init::trunc_normal: reproducible after manual_seed, advances the stream", "[nn]") {
  ember::nn::manual_seed(42);
  const auto a = ember::nn::init::trunc_normal<float>(Shape{1000}, 0, 1, -2, 2).to_vector();
  const auto b = ember::nn::init::trunc_normal<float>(Shape{1000}, 0, 1, -2, 2).to_vector();
  REQUIRE(a != b);
  ember::nn::manual_seed(42);
  REQUIRE(ember::nn::init::trunc_normal<float>(Shape{1000}, 0, 1, -2, 2).to_vector() == a);
  // float and double draw the same values (computed in double, rounded once).
  ember::nn::manual_seed(42);
  const auto d = ember::nn::init::trunc_normal<double>(Shape{1000}, 0, 1, -2, 2).to_vector();
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != static_cast<float>(d[i]);
  REQUIRE(differ == 0);
  REQUIRE_THROWS_AS(ember::nn::init::trunc_normal<float>(Shape{4}, 0, 0, -2, 2), ember::Error);
  REQUIRE_THROWS_AS(ember::nn::init::trunc_normal<float>(Shape{4}, 0, 1, 2, -2), ember::Error);
  REQUIRE_THROWS_AS(ember::nn::init::trunc_normal<float>(Shape{4}, 0, 1, 50, 60), ember::Error);
}

TEST_CASE("nn::init: the normal quantile inverts the distribution function", "[nn]") {
  using ember::nn::detail::normal_cdf;
  using ember::nn::detail::normal_quantile;
  REQUIRE(normal_quantile(0.5) == 0.0);
  REQUIRE(normal_quantile(0.975) == Approx(1.959963984540054).epsilon(1e-14));
  REQUIRE(normal_quantile(0.025) == Approx(-1.959963984540054).epsilon(1e-14));
  REQUIRE(normal_quantile(1e-10) == Approx(-6.361340902404056).epsilon(1e-13));
  REQUIRE(normal_quantile(1e-300) == Approx(-37.0470962993612).epsilon(1e-12));  // r > 5
  REQUIRE(std::isinf(normal_quantile(0.0)));
  REQUIRE(normal_quantile(0.0) < 0);
  for (double z : {-5.0, -2.0, -0.3, 0.0, 0.7, 1.5, 3.0}) {
    INFO("z = " << z);
    REQUIRE(normal_quantile(normal_cdf(z)) == Approx(z).margin(1e-12));
  }
}

TEST_CASE("nn::init::zeros and ones draw nothing", "[nn]") {
  ember::nn::manual_seed(3);
  const auto before = ember::nn::rng_state();
  REQUIRE(ember::nn::init::zeros<float>(Shape{3, 2}).to_vector() == std::vector<float>(6, 0.0f));
  REQUIRE(ember::nn::init::ones<double>(Shape{4}).to_vector() == std::vector<double>(4, 1.0));
  REQUIRE(ember::nn::init::zeros<std::int64_t>(Shape{}).item() == 0);
  REQUIRE(ember::nn::rng_state().offset == before.offset);
}

TEST_CASE("nn::init's in-place initialisers fill a parameter every handle sees", "[nn]") {
  ember::Var<float> w = ember::param(ember::zeros<float>(Shape{64, 32}));
  const ember::Var<float> alias = w;  // as an optimizer's list holds it
  ember::nn::manual_seed(5);
  const auto want = ember::nn::init::normal<float>(Shape{64, 32}, 0.0, 0.02).to_vector();
  ember::nn::manual_seed(5);
  REQUIRE(&ember::nn::init::normal_(w, 0.0, 0.02) == &w);
  REQUIRE(alias.value().to_vector() == want);
  REQUIRE(w.requires_grad());
  ember::nn::init::constant_(w, 0.5);
  REQUIRE(alias.value().to_vector() == std::vector<float>(64 * 32, 0.5f));
  ember::nn::init::zeros_(w);
  REQUIRE(alias.value().to_vector() == std::vector<float>(64 * 32, 0.0f));
  // xavier_uniform_: U(+-sqrt(6 / (fan_in + fan_out))), drawn where the Tensor version draws.
  ember::nn::manual_seed(6);
  const auto xavier = ember::nn::init::xavier_uniform<float>(Shape{64, 32}).to_vector();
  ember::nn::manual_seed(6);
  ember::nn::init::xavier_uniform_(w);
  REQUIRE(w.value().to_vector() == xavier);
  ember::Var<float> none;
  REQUIRE_THROWS_WITH(ember::nn::init::ones_(none), Catch::Contains("undefined"));
}

}  // namespace test_nn_init
}  // namespace
