// Backward rules of the reductions of Vars: gradcheck in float64 over axes, keepdim, broadcast
// and strided operands; ties, zeros and empty slices; launch counts of the fused backward.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <ember/autograd/autograd.hpp>

#include "support/launches.hpp"

#include "support/random_tensors.hpp"

namespace {
namespace test_autograd_reductions {

using ember::Dims;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;

Tensor<double> rand_tensor(const Shape& s, double lo, double hi, std::uint32_t seed) {
  return ember::testing::uniform_tensor(s, lo, hi, seed);
}

using ember::testing::launches;

// Every reduction of Vars, by index, over `axes` of an expression that mixes a strided view
// (x transposed back and forth), a broadcast operand w and a scalar.
Var<double> reduce_case(int which, const Vars& v, const Dims& axes, bool keepdim) {
  const Var<double> x = v[0].transpose(0, 2).transpose(0, 2);  // a strided view of v[0]
  const auto e = x * v[1] + 0.25;
  switch (which) {
    case 0:
      return ember::sum(e, axes, keepdim);
    case 1:
      return ember::mean(e, axes, keepdim);
    case 2:
      return ember::max(e, axes, keepdim);
    case 3:
      return ember::min(e, axes, keepdim);
    case 4:
      return ember::prod(e, axes, keepdim);
    case 5:
      return ember::var(e, axes, keepdim);
    case 6:
      return ember::var(e, axes, keepdim, 0.0);
    case 7:
      return ember::norm(e, axes, keepdim);
    case 8:
      return ember::norm(e, axes, keepdim, 1.0);
    case 9:
      return ember::norm(e, axes, keepdim, 3.0);
    case 10:
      return ember::norm(e, axes, keepdim, std::numeric_limits<double>::infinity());
    default:
      return ember::logsumexp(e, axes, keepdim);
  }
}
constexpr int kReductions = 12;

TEST_CASE("gradcheck: every reduction of Vars over axes, keepdim, broadcast and views",
          "[autograd][gradcheck][reduce]") {
  // Values away from 0 (norm p=1 kinks) and distinct (max/min ties).
  const Tensor<double> x = rand_tensor(Shape{2, 3, 4}, 0.3, 1.2, 61);
  const Tensor<double> w = rand_tensor(Shape{3, 1}, 0.5, 1.5, 62);
  for (int which = 0; which < kReductions; ++which) {
    for (const Dims& axes : {Dims{}, Dims{0}, Dims{1}, Dims{-1}, Dims{0, 2}}) {
      for (bool keepdim : {false, true}) {
        auto r = ember::gradcheck(
            [&](const Vars& v) { return reduce_case(which, v, axes, keepdim); }, {x, w});
        INFO("reduction " << which << " axes " << axes.str() << " keepdim " << keepdim << ": "
                          << r);
        REQUIRE(r);
      }
    }
  }
}

TEST_CASE("gradcheck: reductions of rank-0 and size-1 operands", "[autograd][gradcheck][reduce]") {
  for (int which = 0; which < 4; ++which) {
    auto r0 = ember::gradcheck(
        [which](const Vars& v) {
          const auto e = v[0] * 2.0 + 1.0;
          switch (which) {
            case 0:
              return ember::max(e);
            case 1:
              return ember::logsumexp(e);
            case 2:
              return ember::norm(e);
            default:
              return ember::prod(e);
          }
        },
        {ember::full<double>(Shape{}, 0.7)});
    INFO("rank 0, reduction " << which << ": " << r0);
    REQUIRE(r0);
  }
  const Tensor<double> x = rand_tensor(Shape{1, 5, 1}, 0.3, 1.2, 63);
  for (int which = 0; which < kReductions; ++which) {
    auto r = ember::gradcheck(
        [which](const Vars& v) {
          return reduce_case(which, {v[0].expand({2, 5, 3}), v[1]}, Dims{1}, false);
        },
        {x, ember::full<double>(Shape{1}, 1.3)});
    INFO("size-1 axes, reduction " << which << ": " << r);
    REQUIRE(r);
  }
}

TEST_CASE("max and min share the gradient evenly between ties", "[autograd][reduce]") {
  auto x = ember::param(ember::from_vector<double>({1, 3, 3, 2, 5, 5, 5, 0}, Shape{2, 4}));
  ember::sum(ember::max(x, {1}) * ember::from_vector<double>({2, 3}, Shape{2})).backward();
  REQUIRE(x.grad().to_vector() == std::vector<double>{0, 1, 1, 0, 1, 1, 1, 0});
  x.zero_grad();
  ember::min(x * 1.0).backward();
  REQUIRE(x.grad().to_vector() == std::vector<double>{0, 0, 0, 0, 0, 0, 0, 1});
  // NaN is the maximum and takes the gradient.
  auto y = ember::param(ember::from_vector<double>({1, NAN, 3}, Shape{3}));
  ember::max(y).backward();
  REQUIRE(y.grad().to_vector() == std::vector<double>{0, 1, 0});
}

TEST_CASE("prod's gradient is exact with zeros in the slice", "[autograd][reduce]") {
  // Rows: no zero, one zero, two zeros.
  auto x = ember::param(ember::from_vector<double>({2, 3, 4, 2, 0, 4, 0, 3, 0}, Shape{3, 3}));
  ember::sum(ember::prod(x, {1})).backward();
  REQUIRE(x.grad().to_vector() == std::vector<double>{12, 8, 6, 0, 8, 0, 0, 0, 0});
}

TEST_CASE("reductions of Vars: edge values", "[autograd][reduce]") {
  SECTION("logsumexp of a slice of -inf pushes nothing") {
    const double inf = std::numeric_limits<double>::infinity();
    auto x = ember::param(ember::from_vector<double>({-inf, -inf, 0, 1}, Shape{2, 2}));
    ember::sum(ember::logsumexp(x, {1})).backward();
    const auto g = x.grad().to_vector();
    REQUIRE(g[0] == 0);
    REQUIRE(g[1] == 0);
    REQUIRE(g[2] + g[3] == Approx(1.0));
  }
  SECTION("norm at 0 has gradient 0") {
    auto x = ember::param(ember::zeros<double>(Shape{3}));
    ember::norm(x).backward();
    REQUIRE(x.grad().to_vector() == std::vector<double>{0, 0, 0});
  }
  SECTION("sum and mean over an empty axis") {
    auto x = ember::param(ember::zeros<double>(Shape{0, 3}));
    auto s = ember::sum(x, {0});
    REQUIRE(s.shape() == Shape{3});
    ember::sum(s).backward();
    REQUIRE(x.grad().shape() == Shape{0, 3});
  }
  SECTION("max over an empty axis is an error, as for tensors") {
    auto x = ember::param(ember::zeros<double>(Shape{0, 3}));
    REQUIRE_THROWS_AS(ember::max(x, {0}), ember::Error);
  }
}

TEST_CASE("reductions of Vars: the backward is one fused launch plus the rule's reductions",
          "[autograd][reduce][fusion]") {
  const Shape s{32, 48};
  auto a = ember::param(rand_tensor(s, 0.5, 1.5, 71));
  auto b = ember::param(rand_tensor(s, 0.5, 1.5, 72));
  auto run = [&](auto&& make) {
    a.zero_grad();
    b.zero_grad();
    auto r = make();
    auto total = ember::sum(r);  // its backward is one launch, into r's gradient
    return launches([&] { total.backward(); }) - 1;
  };
  // sum, mean, logsumexp and norm need nothing but the result: one launch for a and b.
  CHECK(run([&] { return ember::sum(ember::exp(a) * b, {1}); }) == 1);
  CHECK(run([&] { return ember::mean(ember::exp(a) * b, {0}); }) == 1);
  CHECK(run([&] { return ember::logsumexp(ember::exp(a) * b, {1}); }) == 1);
  CHECK(run([&] { return ember::norm(ember::exp(a) * b, {1}); }) == 1);
  // max counts its ties and var takes the mean first: one reduction more; prod two.
  CHECK(run([&] { return ember::max(ember::exp(a) * b, {1}); }) == 2);
  CHECK(run([&] { return ember::var(ember::exp(a) * b, {1}); }) == 2);
  CHECK(run([&] { return ember::prod(a * b, {1}); }) == 3);
}

}  // namespace test_autograd_reductions
}  // namespace
