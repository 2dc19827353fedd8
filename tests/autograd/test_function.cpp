// Custom functions (ember::apply): forward and backward written by the user, with a context
// that saves tensors (version-checked) and state.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <ember/autograd/autograd.hpp>

#include "support/random_tensors.hpp"

namespace {
namespace test_autograd_function {

using ember::FunctionContext;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;

Tensor<double> rand_tensor(const Shape& s, double lo, double hi, std::uint32_t seed) {
  return ember::testing::uniform_tensor(s, lo, hi, seed);
}

// y = a * x^p + b, with a number argument and a broadcast tensor argument.
struct ScaledPower {
  static constexpr const char* name = "scaled_power";
  struct State {
    double p = 0;
    Shape b_shape;
  };
  static Tensor<double> forward(FunctionContext& ctx, const Tensor<double>& x, double p,
                                const Tensor<double>& a, const Tensor<double>& b) {
    ctx.save(x);
    ctx.save(a);
    ctx.state<State>() = {p, b.shape()};
    return a * ember::pow(x, p) + b;
  }
  static std::tuple<Tensor<double>, Tensor<double>, Tensor<double>> backward(
      FunctionContext& ctx, const Tensor<double>& g) {
    const auto x = ctx.saved<double>(0);
    const auto a = ctx.saved<double>(1);
    const State& st = ctx.state<State>();
    Tensor<double> gx, ga, gb;
    if (ctx.needs_input_grad(0)) gx = g * a * st.p * ember::pow(x, st.p - 1.0);
    if (ctx.needs_input_grad(1)) ga = ember::sum(g * ember::pow(x, st.p), {0}, true);
    if (ctx.needs_input_grad(2)) gb = ember::sum(g, {0});
    return {gx, ga, gb};
  }
};

struct Identity {
  static Tensor<float> forward(FunctionContext&, const Tensor<float>& x) { return x; }
  static Tensor<float> backward(FunctionContext&, const Tensor<float>& g) { return g; }
};

struct WrongShape {
  static Tensor<double> forward(FunctionContext&, const Tensor<double>& x) { return x * 2.0; }
  static Tensor<double> backward(FunctionContext&, const Tensor<double>& g) {
    return g.reshape({-1});
  }
};

TEST_CASE("custom function: gradcheck, with numbers and broadcast tensors",
          "[autograd][function]") {
  const Tensor<double> x = rand_tensor(Shape{3, 4}, 0.5, 1.5, 91);
  const Tensor<double> a = rand_tensor(Shape{1, 4}, -1, 1, 92);
  const Tensor<double> b = rand_tensor(Shape{4}, -1, 1, 93);
  auto r = ember::gradcheck(
      [](const Vars& v) {
        Var<double> y = ember::apply<ScaledPower>(v[0], 2.5, v[1], v[2]);
        return Var<double>(ember::tanh(y) * v[0]);  // recorded around it, too
      },
      {x, a, b});
  INFO(r);
  REQUIRE(r);
}

TEST_CASE("custom function: needs_input_grad, constants and no_grad", "[autograd][function]") {
  auto x = ember::param(rand_tensor(Shape{3, 4}, 0.5, 1.5, 94));
  const Tensor<double> a = rand_tensor(Shape{1, 4}, -1, 1, 95);  // a plain tensor: no gradient
  Var<double> b(rand_tensor(Shape{4}, -1, 1, 96));               // a constant Var
  Var<double> y = ember::apply<ScaledPower>(x, 2.0, a, b);
  REQUIRE(y.requires_grad());
  ember::sum(y).backward();
  const auto g = x.grad().to_vector();
  const auto xv = x.value().to_vector();
  const auto av = a.to_vector();
  for (std::size_t i = 0; i < g.size(); ++i) REQUIRE(g[i] == Approx(2 * av[i % 4] * xv[i]));
  REQUIRE_FALSE(b.grad().defined());
  {
    ember::no_grad guard;
    REQUIRE_FALSE(ember::apply<ScaledPower>(x, 2.0, a, b).requires_grad());
  }
  Var<double> c(rand_tensor(Shape{3, 4}, 0.5, 1.5, 97));
  REQUIRE_FALSE(ember::apply<ScaledPower>(c, 2.0, a, b).requires_grad());
}

TEST_CASE("custom function: a gradient returned as the upstream tensor is not written into",
          "[autograd][function]") {
  auto x = ember::param(ember::from_vector<float>({1, 2, 3}, Shape{3}));
  Var<float> h = x * 1.0;
  Var<float> y = ember::apply<Identity>(h);
  const Tensor<float> seed = ember::from_vector<float>({1, 1, 1}, Shape{3});
  y.backward(seed, true);
  y.backward(seed);
  REQUIRE(seed.to_vector() == std::vector<float>{1, 1, 1});
  REQUIRE(x.grad().to_vector() == std::vector<float>{2, 2, 2});
}

TEST_CASE("custom function: errors name the function", "[autograd][function]") {
  SECTION("a saved tensor modified in place") {
    auto x = ember::param(rand_tensor(Shape{2, 2}, 0.5, 1.5, 98));
    Tensor<double> a = rand_tensor(Shape{1, 2}, -1, 1, 99);
    Var<double> y = ember::apply<ScaledPower>(x, 2.0, a, ember::zeros<double>(Shape{2}));
    a += 1.0;
    try {
      ember::sum(y).backward();
      FAIL("expected ember::Error");
    } catch (const ember::Error& e) {
      const std::string msg = e.what();
      INFO(msg);
      REQUIRE(msg.find("scaled_power") != std::string::npos);
      REQUIRE(msg.find("modified in place") != std::string::npos);
    }
  }
  SECTION("a gradient of the wrong shape") {
    auto x = ember::param(rand_tensor(Shape{2, 2}, 0.5, 1.5, 100));
    Var<double> y = ember::apply<WrongShape>(x);
    REQUIRE_THROWS_WITH(ember::sum(y).backward(),
                        Catch::Contains("custom function") && Catch::Contains("[4]"));
  }
  SECTION("saved() out of range or of the wrong type") {
    FunctionContext ctx("f", {true});
    ctx.save(ember::zeros<double>(Shape{2}));
    REQUIRE_THROWS_AS(ctx.saved<double>(1), ember::Error);
    REQUIRE_THROWS_AS(ctx.saved<float>(0), ember::Error);
  }
}

}  // namespace test_autograd_function
}  // namespace
