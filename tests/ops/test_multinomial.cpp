// multinomial against the distributions it samples: with replacement each category's frequency
// within five binomial standard deviations of its probability; without replacement distinct
// categories of positive weight, the first draw's frequencies those of the weights, the second's
// those of sampling again from what is left; reproducible for a seed; bad weights refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include <ember/ember.hpp>

namespace {
namespace test_ops_multinomial {

using ember::Shape;
using ember::Tensor;

// Every frequency of `counts` (of n draws) within 5 standard deviations of n p.
void check_frequencies(const std::vector<std::int64_t>& counts, const std::vector<double>& p,
                       double n) {
  for (std::size_t c = 0; c < p.size(); ++c) {
    INFO("category " << c << ": " << counts[c] << " of " << n << ", p " << p[c]);
    CHECK(std::fabs(double(counts[c]) - n * p[c]) <= 5 * std::sqrt(n * p[c] * (1 - p[c])) + 1e-9);
  }
}

TEST_CASE("multinomial with replacement: the weights' distribution, zero never drawn", "[ops]") {
  // Two rows, unnormalised: [0.3, 0.6, 0, 2.1] and [1, 1, 1, 1].
  const Tensor<float> w =
      ember::from_vector<float>({0.3f, 0.6f, 0.0f, 2.1f, 1, 1, 1, 1}, Shape{2, 4});
  const std::int64_t n = 100000;
  const Tensor<std::int64_t> s = ember::multinomial(w, n, true, 7);
  REQUIRE(s.shape() == Shape{2, n});
  const std::vector<std::int64_t> v = s.to_vector();
  std::vector<std::int64_t> first(4, 0), second(4, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    ++first[static_cast<std::size_t>(v[static_cast<std::size_t>(i)])];
    ++second[static_cast<std::size_t>(v[static_cast<std::size_t>(n + i)])];
  }
  CHECK(first[2] == 0);
  check_frequencies(first, {0.1, 0.2, 0.0, 0.7}, double(n));
  check_frequencies(second, {0.25, 0.25, 0.25, 0.25}, double(n));
  // One row as [C]: [num_samples] out; the same seed and offset, the same draws.
  const Tensor<double> row = ember::from_vector<double>({0.5, 0.5}, Shape{2});
  CHECK(ember::multinomial(row, 16, true, 3).shape() == Shape{16});
  CHECK(ember::multinomial(row, 64, true, 3).to_vector() ==
        ember::multinomial(row, 64, true, 3).to_vector());
  CHECK(ember::multinomial(row, 64, true, 3).to_vector() !=
        ember::multinomial(row, 64, true, 3, /*offset=*/1000).to_vector());
}

TEST_CASE("multinomial without replacement: distinct draws, in sequential order", "[ops]") {
  const std::vector<double> p = {0.1, 0.2, 0.0, 0.3, 0.4};
  const std::int64_t rows = 50000;
  std::vector<double> weights;
  for (std::int64_t r = 0; r < rows; ++r) weights.insert(weights.end(), p.begin(), p.end());
  const Tensor<double> w = ember::from_vector<double>(weights, Shape{rows, 5});
  const std::vector<std::int64_t> v = ember::multinomial(w, 4, false, 11).to_vector();
  std::vector<std::int64_t> first(5, 0), second(5, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::set<std::int64_t> drawn(v.begin() + r * 4, v.begin() + r * 4 + 4);
    REQUIRE(drawn.size() == 4);  // distinct: the four categories of positive weight
    REQUIRE(drawn.count(2) == 0);
    ++first[static_cast<std::size_t>(v[static_cast<std::size_t>(r * 4)])];
    ++second[static_cast<std::size_t>(v[static_cast<std::size_t>(r * 4 + 1)])];
  }
  check_frequencies(first, p, double(rows));
  // The second draw: P(c) = sum over i != c of p_i p_c / (1 - p_i).
  std::vector<double> q(5, 0.0);
  for (std::size_t c = 0; c < 5; ++c) {
    for (std::size_t i = 0; i < 5; ++i) {
      if (i != c) q[c] += p[i] * p[c] / (1 - p[i]);
    }
  }
  check_frequencies(second, q, double(rows));
}

TEST_CASE("multinomial: bad weights and counts are errors that say so", "[ops]") {
  const auto f = [](std::vector<float> v) { return ember::from_vector<float>(v, Shape{3}); };
  REQUIRE_THROWS_WITH(ember::multinomial(f({1, -1, 1}), 1, true, 0),
                      Catch::Contains("finite and non-negative"));
  REQUIRE_THROWS_WITH(
      ember::multinomial(f({1, std::numeric_limits<float>::quiet_NaN(), 1}), 1, true, 0),
      Catch::Contains("finite and non-negative"));
  REQUIRE_THROWS_WITH(ember::multinomial(f({0, 0, 0}), 1, true, 0), Catch::Contains("sum to 0"));
  REQUIRE_THROWS_WITH(ember::multinomial(f({1, 0, 1}), 3, false, 0),
                      Catch::Contains("only 2 categories"));
  REQUIRE_THROWS_WITH(ember::multinomial(f({1, 1, 1}), 0, true, 0),
                      Catch::Contains("num_samples must be positive"));
  REQUIRE_THROWS_WITH(ember::multinomial(ember::zeros<float>(Shape{2, 2, 2}), 1, true, 0),
                      Catch::Contains("[C] or [rows, C]"));
}

}  // namespace test_ops_multinomial
}  // namespace
