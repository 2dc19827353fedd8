// Mixed precision: amp::Policy's settings, amp::autocast's gradient, nn::copy_state's dtype
// conversion, and training a bf16 and a half model (float master weights; loss scaling for half)
// to the float model's loss.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <ember/ember.hpp>
#include <ember/optim/adamw.hpp>
#include <ember/optim/mixed_precision.hpp>

using ember::Shape;
using ember::Tensor;
using ember::Var;
namespace amp = ember::amp;
namespace nn = ember::nn;
namespace optim = ember::optim;

namespace {
namespace test_optim_mixed_precision {
template <class T>
struct Net : nn::Module {
  nn::Linear<T> fc1{8, 32};
  nn::Linear<T> fc2{32, 1};
  Net() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Var<T> forward(const Var<T>& x) const { return fc2(Var<T>(ember::relu(fc1(x)))); }
};

/// Trains Net<T> (starting from `init`'s weights) on y = sum(sin(x)) with AdamW for `steps`
/// steps; returns the float loss of the last 10 steps, averaged.
template <class T>
double train(const Net<float>& init, int steps) {
  using P = amp::Policy<T>;
  Net<typename P::compute> net;
  nn::copy_state(init, net);
  optim::AdamW opt(net, {.lr = 3e-3, .weight_decay = 0});
  optim::LossScaler scaler(P::scaler_options());
  double tail = 0;
  for (int s = 0; s < steps; ++s) {
    const Tensor<float> x = ember::randn<float>(Shape{64, 8}, 1000 + static_cast<unsigned>(s));
    const Tensor<float> y = ember::sum(ember::sin(x), ember::Dims{1}, true);
    const Var<T> out = net.forward(amp::autocast<T>(Var<float>(x)));
    // The loss in float: the difference is formed in float from the compute-type output.
    Var<float> loss = ember::mean(ember::square(amp::autocast<float>(out) - Var<float>(y)));
    if (s >= steps - 10) tail += loss.value().item() / 10;
    Var<float> scaled = scaler.scale(loss);
    scaled.backward();
    scaler.step(opt);
    opt.zero_grad();
  }
  return tail;
}

TEST_CASE("amp::Policy: master type and loss scaling by compute type", "[optim]") {
  STATIC_REQUIRE(std::is_same_v<amp::Policy<ember::bf16>::master, float>);
  STATIC_REQUIRE(std::is_same_v<amp::Policy<double>::master, double>);
  STATIC_REQUIRE(amp::Policy<ember::half>::needs_loss_scaling);
  STATIC_REQUIRE_FALSE(amp::Policy<ember::bf16>::needs_loss_scaling);
  REQUIRE(amp::Policy<ember::half>::scaler_options().enabled);
  REQUIRE_FALSE(amp::Policy<ember::bf16>::scaler_options().enabled);
}

TEST_CASE("amp::autocast is differentiable and the identity in the same type", "[optim]") {
  auto x = ember::param(ember::full<float>(Shape{3}, 1.5));
  Var<ember::bf16> y = amp::autocast<ember::bf16>(x);
  Var<ember::bf16> loss = ember::sum(y * y);
  loss.backward();
  REQUIRE(x.grad().to_vector() == std::vector<float>(3, 3.0f));
  REQUIRE(amp::autocast<float>(x).node() == x.node());
}

TEST_CASE("nn::copy_state converts a model's element type, checking names and shapes", "[nn]") {
  nn::manual_seed(3);
  Net<float> f;
  Net<ember::bf16> b;
  nn::copy_state(f, b);
  const auto fw = f.fc1.weight.value().to_vector();
  const auto bw = b.fc1.weight.value().to_vector();
  for (std::size_t i = 0; i < fw.size(); ++i)
    REQUIRE(static_cast<float>(bw[i]) == static_cast<float>(ember::bf16(fw[i])));
  nn::Linear<float> other{8, 32};
  REQUIRE_THROWS_WITH(nn::copy_state(other, b), Catch::Contains("parameters"));
  struct Wrong : nn::Module {
    nn::Linear<ember::bf16> fc1{8, 16};
    nn::Linear<ember::bf16> fc2{16, 1};
    Wrong() {
      register_module("fc1", fc1);
      register_module("fc2", fc2);
    }
  } wrong;
  REQUIRE_THROWS_WITH(nn::copy_state(f, wrong),
                      Catch::Contains("fc1.weight") && Catch::Contains("[16, 8]"));
}

TEST_CASE("bf16 and half models train to the float model's loss", "[optim]") {
  nn::manual_seed(4);
  Net<float> init;
  const int steps = 300;
  const double f32 = train<float>(init, steps);
  const double b16 = train<ember::bf16>(init, steps);
  const double f16 = train<ember::half>(init, steps);
  INFO("final losses: float " << f32 << ", bf16 " << b16 << ", half " << f16);
  const double start = train<float>(init, 10);
  REQUIRE(f32 < 0.2 * start);  // it learns
  // bf16 keeps 8 bits of mantissa in the forward pass, half 11: both land near float.
  REQUIRE(b16 < 1.5 * f32 + 0.02);
  REQUIRE(f16 < 1.2 * f32 + 0.01);
}

}  // namespace test_optim_mixed_precision
}  // namespace
