// gradcheck (float64 central differences) of every differentiable elementwise function and
// operator, on random shapes with broadcasting, and of sum/mean over axes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include <ember/autograd/autograd.hpp>

#include "support/random_tensors.hpp"

namespace {
namespace test_autograd_gradcheck {

using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;

Tensor<double> rand_tensor(const Shape& s, double lo, double hi, std::uint32_t seed) {
  return ember::testing::uniform_tensor(s, lo, hi, seed);
}

// Values kept away from kinks (0 for relu/abs, integers for floor...).
Tensor<double> away_from_zero(const Shape& s, std::uint32_t seed) {
  Tensor<double> t = rand_tensor(s, 0.2, 1.5, seed);
  std::vector<double> v = t.to_vector();
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i % 2) v[i] = -v[i];
  }
  return ember::from_vector<double>(v, s);
}

#define UNARY_CASE(fn, lo, hi)                                                            \
  SECTION(#fn) {                                                                          \
    auto r = ember::gradcheck([](const Vars& x) { return Var<double>(ember::fn(x[0])); }, \
                              {rand_tensor(Shape{3, 4}, lo, hi, 11)});                    \
    INFO(r);                                                                              \
    REQUIRE(r);                                                                           \
  }

TEST_CASE("gradcheck: unary functions", "[autograd][gradcheck]") {
  UNARY_CASE(exp, -2, 2)
  UNARY_CASE(exp2, -2, 2)
  UNARY_CASE(log, 0.2, 3)
  UNARY_CASE(log2, 0.2, 3)
  UNARY_CASE(log1p, -0.5, 3)
  UNARY_CASE(expm1, -2, 2)
  UNARY_CASE(sqrt, 0.2, 3)
  UNARY_CASE(rsqrt, 0.2, 3)
  UNARY_CASE(sin, -3, 3)
  UNARY_CASE(cos, -3, 3)
  UNARY_CASE(tan, -1.2, 1.2)
  UNARY_CASE(tanh, -3, 3)
  UNARY_CASE(erf, -2, 2)
  UNARY_CASE(reciprocal, 0.3, 3)
  UNARY_CASE(sigmoid, -5, 5)
  UNARY_CASE(silu, -4, 4)
  UNARY_CASE(gelu, -3, 3)
  UNARY_CASE(gelu_tanh, -3, 3)
  UNARY_CASE(square, -2, 2)
  UNARY_CASE(neg, -2, 2)
  SECTION("kinked functions away from their kinks") {
    const Tensor<double> x = away_from_zero(Shape{2, 5}, 3);
    for (int which = 0; which < 4; ++which) {
      auto r = ember::gradcheck(
          [which](const Vars& v) {
            switch (which) {
              case 0:
                return Var<double>(ember::relu(v[0]));
              case 1:
                return Var<double>(ember::abs(v[0]));
              case 2:
                return Var<double>(ember::leaky_relu(v[0], 0.1));
              default:
                return Var<double>(ember::sign(v[0]) + ember::floor(v[0] * 10.0 + 0.5) +
                                   ember::ceil(v[0] * 10.0 + 0.5) +
                                   ember::round(v[0] * 10.0 + 0.25));
            }
          },
          {x});
      INFO("case " << which << ": " << r);
      REQUIRE(r);
    }
  }
  SECTION("softplus on both sides of its threshold") {
    auto r =
        ember::gradcheck([](const Vars& v) { return Var<double>(ember::softplus(v[0], 2.0, 5.0)); },
                         {rand_tensor(Shape{12}, -6, 6, 5)});
    INFO(r);
    REQUIRE(r);
  }
}

TEST_CASE("gradcheck: binary functions with broadcasting", "[autograd][gradcheck]") {
  const Tensor<double> a = rand_tensor(Shape{2, 3, 4}, 0.5, 2.0, 21);
  const Tensor<double> b_row = rand_tensor(Shape{4}, 0.5, 2.0, 22);
  const Tensor<double> b_col = rand_tensor(Shape{3, 1}, 0.5, 2.0, 23);
  for (const Tensor<double>& b : {b_row, b_col, rand_tensor(Shape{2, 3, 4}, 0.5, 2.0, 24)}) {
    for (int op = 0; op < 7; ++op) {
      auto r = ember::gradcheck(
          [op](const Vars& v) {
            const Var<double>& x = v[0];
            const Var<double>& y = v[1];
            switch (op) {
              case 0:
                return Var<double>(x + y);
              case 1:
                return Var<double>(x - y);
              case 2:
                return Var<double>(x * y);
              case 3:
                return Var<double>(x / y);
              case 4:
                return Var<double>(ember::pow(x, y));
              case 5:
                return Var<double>(ember::min(x, y * 1.1));
              default:
                return Var<double>(ember::max(x, y * 1.1));
            }
          },
          {a, b});
      INFO("op " << op << " b shape " << b.shape().str() << ": " << r);
      REQUIRE(r);
    }
  }
}

TEST_CASE("gradcheck: clamp, where, scalars, constants and composites", "[autograd][gradcheck]") {
  const Tensor<double> x = rand_tensor(Shape{3, 5}, -2, 2, 31);
  const Tensor<double> lo = rand_tensor(Shape{5}, -1.0, -0.3, 32);
  const Tensor<double> hi = rand_tensor(Shape{3, 1}, 0.3, 1.0, 33);
  auto r1 = ember::gradcheck(
      [](const Vars& v) { return Var<double>(ember::clamp(v[0], v[1], v[2])); }, {x, lo, hi});
  INFO(r1);
  REQUIRE(r1);
  auto r2 = ember::gradcheck(
      [](const Vars& v) {
        return Var<double>(ember::where(v[0] > v[1], v[0] * v[1], ember::exp(v[1])));
      },
      {x, lo});
  INFO(r2);
  REQUIRE(r2);
  const Tensor<double> c = rand_tensor(Shape{3, 5}, -1, 1, 34);
  auto r3 = ember::gradcheck(
      [c](const Vars& v) {
        // A plain tensor (constant), scalars, a repeated Var and a cast round trip.
        return Var<double>(ember::tanh(v[0] * c + 0.5) * v[0] - 2.0 * ember::sigmoid(v[0] / 3.0) +
                           ember::cast<double>(ember::cast<float>(c)) * v[0] * v[0]);
      },
      {x});
  INFO(r3);
  REQUIRE(r3);
}

TEST_CASE("gradcheck: chains of materialised Vars and reductions", "[autograd][gradcheck]") {
  const Tensor<double> x = rand_tensor(Shape{2, 3, 4}, -1, 1, 41);
  const Tensor<double> w = rand_tensor(Shape{3, 1}, -1, 1, 42);
  for (int which = 0; which < 6; ++which) {
    auto r = ember::gradcheck(
        [which](const Vars& v) -> Var<double> {
          Var<double> h = ember::tanh(v[0] * v[1]);  // recorded node 1
          Var<double> k = h * h + v[0];              // node 2 uses node 1 and an input
          switch (which) {
            case 0:
              return ember::sum(k);
            case 1:
              return ember::mean(k);
            case 2:
              return ember::sum(k, {1});
            case 3:
              return ember::mean(k, {0, 2}, true);
            case 4:
              return ember::sum(ember::exp(k) * v[1], {-1}, false);
            default:
              return ember::mean(ember::mean(k, {2}) * 3.0);
          }
        },
        {x, w});
    INFO("case " << which << ": " << r);
    REQUIRE(r);
  }
}

TEST_CASE("gradcheck: non-contiguous inputs", "[autograd][gradcheck]") {
  // Inputs are transposed views; the check clones them, so also test a view Var directly.
  const Tensor<double> base = rand_tensor(Shape{4, 3}, -1, 1, 51);
  auto x = ember::param(base.transpose(0, 1));  // shape {3, 4}, strided
  auto y = ember::param(rand_tensor(Shape{3, 4}, -1, 1, 52));
  Var<double> z = ember::sin(x) * y;
  ember::sum(z).backward();
  const auto gx = x.grad().to_vector();
  const auto xv = x.value().to_vector();
  const auto yv = y.value().to_vector();
  REQUIRE(x.grad().shape() == Shape{3, 4});
  for (std::size_t i = 0; i < gx.size(); ++i) REQUIRE(gx[i] == Approx(std::cos(xv[i]) * yv[i]));
}

TEST_CASE("gradcheck: random shapes, broadcasting, strided views and reductions",
          "[autograd][gradcheck]") {
  std::mt19937 rng(2026);
  std::uniform_int_distribution<int> rank_d(0, 3), extent_d(1, 4), coin(0, 1), which_d(0, 5);
  for (int trial = 0; trial < 40; ++trial) {
    // x: a random shape; y: the same shape with random dimensions set to 1 or dropped (it
    // broadcasts against x); x is given to f as a transposed view when it has two dimensions.
    const int rank = rank_d(rng);
    Shape xs, ys;
    for (int d = 0; d < rank; ++d) xs.push_back(extent_d(rng));
    const int drop = rank > 0 ? std::uniform_int_distribution<int>(0, rank)(rng) : 0;
    for (int d = drop; d < rank; ++d) ys.push_back(coin(rng) ? 1 : xs[d]);
    const bool transposed = rank >= 2 && coin(rng);
    const int which = which_d(rng);
    const int axis = rank > 0 ? std::uniform_int_distribution<int>(0, rank - 1)(rng) : 0;
    const bool keepdim = coin(rng) == 1;
    Shape stored = xs;  // x is stored with its first two dimensions swapped, then swapped back
    if (transposed) std::swap(stored[0], stored[1]);
    const Tensor<double> x = rand_tensor(stored, 0.3, 1.3, 100 + trial);
    const Tensor<double> y = rand_tensor(ys, 0.3, 1.3, 200 + trial);
    auto r = ember::gradcheck(
        [&](const Vars& v) -> Var<double> {
          const Var<double> a = transposed ? v[0].transpose(0, 1) : v[0];
          const auto e = ember::tanh(a * v[1]) + ember::exp(v[1] * 0.5) * a;
          const ember::Dims axes = rank > 0 ? ember::Dims{axis} : ember::Dims{};
          switch (which) {
            case 0:
              return Var<double>(e);
            case 1:
              return ember::sum(e, axes, keepdim);
            case 2:
              return ember::max(e, axes);
            case 3:
              return ember::logsumexp(e, axes, true);
            case 4:
              return ember::norm(e, axes);
            default:
              return ember::var(e, axes, false, 0.0);
          }
        },
        {x, y});
    INFO("trial " << trial << ": x " << xs.str() << (transposed ? " (transposed)" : "") << ", y "
                  << ys.str() << ", case " << which << ", axis " << axis << ": " << r);
    REQUIRE(r);
  }
}

}  // namespace test_autograd_gradcheck
}  // namespace
