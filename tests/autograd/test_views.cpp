// Views of Vars: gradcheck of every view's backward rule, launch counts, and the guarantee that
// a gradient passed through as a view never writes into the tensor it came from.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include <ember/autograd/autograd.hpp>

#include "support/launches.hpp"

#include "support/random_tensors.hpp"

namespace {
namespace test_autograd_views {

using ember::Dims;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;

Tensor<double> rand_tensor(const Shape& s, double lo, double hi, std::uint32_t seed) {
  return ember::testing::uniform_tensor(s, lo, hi, seed);
}

using ember::testing::launches;

TEST_CASE("gradcheck: every view of a Var", "[autograd][gradcheck][views]") {
  const Tensor<double> x = rand_tensor(Shape{2, 3, 4}, -1, 1, 81);
  const Tensor<double> w = rand_tensor(Shape{4, 3}, -1, 1, 82);
  for (int which = 0; which < 14; ++which) {
    auto r = ember::gradcheck(
        [which](const Vars& v) -> Var<double> {
          const Var<double>& a = v[0];
          switch (which) {
            case 0:
              return ember::sin(a.transpose(0, 2)) * v[1].unsqueeze(-1);  // {4,3,2} * {4,3,1}
            case 1:
              return ember::sin(a.permute({2, 0, 1}));
            case 2:
              return a.reshape({6, 4}) * 2.0;
            case 3:
              return a.transpose(1, 2).reshape({2, 12});  // a copy: not viewable
            case 4:
              return a.slice(2, 1, 4, 2) * a.slice(2, 0, 3, 2);  // strided, twice
            case 5:
              return a.narrow(1, 1, 2) + a.select(0, 1).unsqueeze(0).narrow(1, 0, 2);
            case 6:
              return ember::exp(a.select(-1, 3));
            case 7:
              return a.unsqueeze(0).unsqueeze(-1).squeeze();
            case 8:
              return a.select(0, 0).unsqueeze(0).squeeze(0) * v[1].t();
            case 9:
              return a.flatten() * 3.0;
            case 10:
              return v[1].select(1, 2).unsqueeze(0).expand({5, 4}) * 1.5;
            case 11:
              return v[1].view({3, 4}).broadcast_to({2, 3, 4}) * a;
            case 12:
              return a.transpose(0, 1).contiguous() * 2.0;
            default:
              // A view of a computed Var, then more arithmetic on both.
              Var<double> h = ember::tanh(a * 2.0);
              return h.transpose(0, 2).slice(0, 1, 3) * h.permute({2, 1, 0}).narrow(0, 0, 2);
          }
        },
        {x, w});
    INFO("view case " << which << ": " << r);
    REQUIRE(r);
  }
}

TEST_CASE("permute and reshape backward pass the gradient through without a launch",
          "[autograd][views][fusion]") {
  auto a = ember::param(rand_tensor(Shape{8, 16}, -1, 1, 83));
  Var<double> y = ember::exp(a.t().reshape({4, 32}));
  const Tensor<double> seed = rand_tensor(Shape{4, 32}, -1, 1, 84);
  // The fused exp backward writes the reshape's gradient; reshape and t pass it on as views;
  // the leaf a then owns a copy (one launch), since the view's strides are transposed.
  REQUIRE(launches([&] { y.backward(seed); }) == 2);
  const auto g = a.grad().to_vector();
  const auto av = a.value().to_vector();
  const auto sv = seed.to_vector();
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 16; ++j) {
      const int k = j * 8 + i;  // element (j, i) of a.t(), flattened
      REQUIRE(g[static_cast<std::size_t>(i * 16 + j)] ==
              Approx(std::exp(av[static_cast<std::size_t>(i * 16 + j)]) *
                     sv[static_cast<std::size_t>(k)]));
    }
  }
}

TEST_CASE("a gradient passed through as a view never writes into its source", "[autograd][views]") {
  auto x = ember::param(rand_tensor(Shape{2, 3}, -1, 1, 85));
  Var<double> h = x * 2.0;
  Var<double> v = h.reshape({6});
  const Tensor<double> seed = rand_tensor(Shape{6}, -1, 1, 86);
  const std::vector<double> before = seed.to_vector();
  // v and then h hold the seed itself (views, shared, never written); x's gradient is its own.
  v.backward(seed, true);
  v.backward(seed);
  REQUIRE(seed.to_vector() == before);
  const auto g = x.grad().to_vector();
  for (std::size_t i = 0; i < g.size(); ++i) REQUIRE(g[i] == Approx(4 * before[i]));
  // Two views of h reach it: the second gradient is added out of place, not into the first.
  x.zero_grad();
  Var<double> h2 = x * 2.0;
  Var<double> f1 = h2.reshape({6});
  Var<double> f2 = h2.flatten();
  Var<double> q = f1 * 1.0 + f2 * 2.0;
  q.backward(seed);
  REQUIRE(seed.to_vector() == before);
  const auto g2 = x.grad().to_vector();
  for (std::size_t i = 0; i < g2.size(); ++i) REQUIRE(g2[i] == Approx(6 * before[i]));
  // A leaf's own view: backward into a leaf copies (a leaf keeps its gradient).
  auto p = ember::param(rand_tensor(Shape{6}, -1, 1, 87));
  p.reshape({2, 3}).backward(rand_tensor(Shape{2, 3}, -1, 1, 88));
  Tensor<double> s2 = rand_tensor(Shape{6}, -1, 1, 89);
  const auto s2_before = s2.to_vector();
  p.backward(s2);
  p.backward(s2);
  REQUIRE(s2.to_vector() == s2_before);
}

TEST_CASE("selects, narrows and slices of one Var add into the parts of its gradient",
          "[autograd][views]") {
  // q, k and v as three selects of one projection (attention's layout): the first gradient to
  // arrive is scattered into zeros, the others are added into the parts they selected, with one
  // launch each and no pass over the whole input.
  auto x = ember::param(rand_tensor(Shape{3, 2, 4}, -1, 1, 90));
  Var<double> h = x * 1.0;
  Var<double> q = h.select(0, 0), k = h.select(0, 1), v = h.select(0, 2);
  Var<double> loss = ember::sum(q * 2.0 + k * 3.0) + ember::sum(v.narrow(1, 1, 2) * 5.0) +
                     ember::sum(h.slice(2, 0, 4, 2) * 7.0);
  loss.backward();
  const auto g = x.grad().to_vector();
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 2; ++b) {
      for (int c = 0; c < 4; ++c) {
        const double want = (a == 0   ? 2.0
                             : a == 1 ? 3.0
                                      : (c >= 1 && c < 3 ? 5.0 : 0.0)) +
                            (c % 2 == 0 ? 7.0 : 0.0);
        REQUIRE(g[static_cast<std::size_t>((a * 2 + b) * 4 + c)] == Approx(want));
      }
    }
  }
  // Into a leaf that already holds a gradient: added to it, across backward calls.
  auto p = ember::param(rand_tensor(Shape{2, 3}, -1, 1, 91));
  ember::sum(p.select(0, 1) * 4.0).backward();
  ember::sum(p.select(0, 1) * 1.0 + p.select(0, 0) * 2.0).backward();
  const auto gp = p.grad().to_vector();
  for (int j = 0; j < 3; ++j) {
    REQUIRE(gp[static_cast<std::size_t>(j)] == Approx(2.0));
    REQUIRE(gp[static_cast<std::size_t>(3 + j)] == Approx(5.0));
  }
}

TEST_CASE("views of Vars: errors and no_grad", "[autograd][views]") {
  {
    auto p = ember::param(rand_tensor(Shape{2}, -1, 1, 91));
    Var<double> same = p.to(ember::Device::cpu());  // already there: the same Var
    REQUIRE(same.node() == p.node());
  }
  auto x = ember::param(rand_tensor(Shape{2, 3}, -1, 1, 90));
  REQUIRE_THROWS_AS(x.view({4}), ember::Error);
  REQUIRE_THROWS_AS(x.slice(0, 0, 5), ember::Error);
  REQUIRE_THROWS_AS(x.squeeze(0), ember::Error);
  REQUIRE_THROWS_AS(x.expand({3, 3}), ember::Error);
  ember::no_grad guard;
  REQUIRE_FALSE(x.transpose(0, 1).requires_grad());
}

}  // namespace test_autograd_views
}  // namespace
