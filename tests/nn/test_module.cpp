// nn::Module and nn::Linear: registration and dotted names, parameter counts, train/eval, to(),
// zero_grad, the initialisers' statistics and seeding, and a Linear layer's forward and gradients.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <ember/ember.hpp>
#include <ember/nn/init.hpp>
#include <ember/nn/linear.hpp>
#include <ember/nn/module.hpp>

namespace {
namespace test_nn_module {

using ember::Shape;
using ember::Tensor;
using ember::Var;

// A two-layer MLP with a buffer, shaped like what checkpoints will see.
struct Mlp : ember::nn::Module {
  ember::nn::Linear<float> fc1{4, 8};
  ember::nn::Linear<float> fc2{8, 3, {.bias = false}};
  Tensor<std::int64_t> steps = ember::zeros<std::int64_t>(Shape{});
  Mlp() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_buffer("steps", steps);
  }
  Var<float> forward(const Var<float>& x) const { return fc2(Var<float>(ember::relu(fc1(x)))); }
};

struct Outer : ember::nn::Module {
  Mlp body;
  ember::nn::Linear<double> head{3, 2};
  Outer() {
    register_module("body", body);
    register_module("head", head);
  }
};

// A module of the user's own, called as model(x).
struct CallableMlp : ember::nn::Module, ember::nn::Callable<CallableMlp> {
  ember::nn::Linear<float> fc{4, 3};
  CallableMlp() { register_module("fc", fc); }
  Var<float> forward(const Var<float>& x, double scale = 1.0) const {
    return Var<float>(fc(x) * scale);
  }
};

TEST_CASE("nn::Callable: model(x) calls the module's forward", "[nn]") {
  ember::nn::manual_seed(3);
  CallableMlp model;
  const Var<float> x(ember::randn<float>(Shape{2, 4}, 1));
  CHECK(model(x).value().to_vector() == model.forward(x).value().to_vector());
  CHECK(model(x, 2.0).value().to_vector() == model.forward(x, 2.0).value().to_vector());
  const CallableMlp& view = model;
  CHECK(view(x).shape() == Shape{2, 3});
}

TEST_CASE("nn::Module: dotted names, counts, train/eval, zero_grad", "[nn]") {
  ember::nn::manual_seed(1);
  Outer m;
  std::vector<std::string> names;
  for (const auto& [name, p] : m.named_parameters()) names.push_back(name);
  REQUIRE(names == std::vector<std::string>{"body.fc1.weight", "body.fc1.bias", "body.fc2.weight",
                                            "head.weight", "head.bias"});
  REQUIRE(m.named_buffers().size() == 1);
  REQUIRE(m.named_buffers()[0].first == "body.steps");
  REQUIRE(m.parameter_count() == 4 * 8 + 8 + 8 * 3 + 3 * 2 + 2);
  REQUIRE(m.parameters<float>().size() == 3);
  REQUIRE(m.parameters<double>().size() == 2);
  std::vector<std::string> mods;
  for (const auto& [name, mod] : m.named_modules()) mods.push_back(name);
  REQUIRE(mods == std::vector<std::string>{"body", "head", "body.fc1", "body.fc2"});
  REQUIRE(m.is_training());
  m.eval();
  REQUIRE_FALSE(m.body.fc1.is_training());
  m.train();
  REQUIRE(m.head.is_training());
  // Gradients reach the registered members; zero_grad clears them everywhere.
  ember::sum(m.body.forward(ember::param(ember::ones<float>(Shape{2, 4})))).backward();
  REQUIRE(m.body.fc1.weight.grad().defined());
  REQUIRE(m.body.fc2.weight.grad().shape() == Shape{3, 8});
  m.zero_grad();
  REQUIRE_FALSE(m.body.fc1.weight.grad().defined());
  // to() on the current device keeps the same parameters.
  const float* before = m.body.fc1.weight.value().data();
  m.to(ember::Device::cpu());
  REQUIRE(m.body.fc1.weight.value().data() == before);
}

TEST_CASE("nn::Module: names are checked", "[nn]") {
  struct Bad : ember::nn::Module {
    Var<float> w = ember::param(ember::zeros<float>(Shape{2}));
    void twice() {
      register_parameter("w", w);
      register_parameter("w", w);
    }
    void dotted() { register_parameter("a.b", w); }
  };
  Bad b;
  REQUIRE_THROWS_WITH(b.twice(), Catch::Contains("registered twice"));
  Bad c;
  REQUIRE_THROWS_AS(c.dotted(), ember::Error);
}

TEST_CASE("nn::Linear: PyTorch's initialisation, forward and gradients", "[nn]") {
  ember::nn::manual_seed(7);
  ember::nn::Linear lin(64, 32);  // float by default
  REQUIRE(lin.weight.shape() == Shape{32, 64});
  REQUIRE(lin.bias.shape() == Shape{32});
  // U(+-1/8): inside the bound, mean near 0, variance near bound^2 / 3.
  const auto w = lin.weight.value().to_vector();
  double mean = 0, sq = 0;
  for (float v : w) {
    REQUIRE(std::fabs(v) <= 0.125f);
    mean += v;
    sq += double(v) * v;
  }
  mean /= double(w.size());
  sq /= double(w.size());
  REQUIRE(std::fabs(mean) < 0.01);
  REQUIRE(sq == Approx(0.125 * 0.125 / 3).epsilon(0.1));
  // The same seed gives the same weights; the stream moves on otherwise.
  ember::nn::manual_seed(7);
  ember::nn::Linear again(64, 32);
  REQUIRE(again.weight.value().to_vector() == w);
  ember::nn::Linear next(64, 32);
  REQUIRE(next.weight.value().to_vector() != w);
  // Forward and backward are ember::linear's.
  const Tensor<float> x = ember::randn<float>(Shape{5, 64}, 3);
  const Var<float> y = lin(ember::param(x));
  REQUIRE(y.shape() == Shape{5, 32});
  const Tensor<float> want = ember::linear(x, lin.weight.value(), lin.bias.value());
  REQUIRE(y.value().to_vector() == want.to_vector());
}

TEST_CASE("nn::init: kaiming and xavier scales", "[nn]") {
  ember::nn::manual_seed(11);
  const Shape s{256, 128, 3, 3};  // fan_in 1152, fan_out 2304
  auto var = [](const Tensor<float>& t) {
    double sq = 0;
    for (float v : t.to_vector()) sq += double(v) * v;
    return sq / double(t.numel());
  };
  REQUIRE(var(ember::nn::init::kaiming_normal<float>(s)) == Approx(2.0 / 1152).epsilon(0.02));
  REQUIRE(var(ember::nn::init::kaiming_uniform<float>(s)) == Approx(2.0 / 1152).epsilon(0.02));
  REQUIRE(var(ember::nn::init::xavier_uniform<float>(s)) ==
          Approx(2.0 / (1152 + 2304)).epsilon(0.02));
  REQUIRE(var(ember::nn::init::xavier_normal<float>(s)) ==
          Approx(2.0 / (1152 + 2304)).epsilon(0.02));
  REQUIRE_THROWS_AS(ember::nn::init::kaiming_normal<float>(Shape{5}), ember::Error);
}

}  // namespace test_nn_module
}  // namespace
