// optim::LossScaler: the loss is scaled, the gradients unscaled inside the step, a planted inf or
// NaN skips the step and backs the scale off, clean steps grow it, the state round-trips, and a
// run without scaling (bf16) steps with the scale 1.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <ember/ember.hpp>
#include <ember/optim/loss_scaler.hpp>
#include <ember/optim/sgd.hpp>

using ember::Shape;
using ember::Tensor;
using ember::Var;
namespace optim = ember::optim;

namespace {
namespace test_optim_loss_scaler {
template <class T>
std::vector<float> values(const Var<T>& v) {
  return Tensor<float>(ember::cast<float>(v.value())).to_vector();
}

TEST_CASE("LossScaler: scale, unscale in the step, skip and back off, grow", "[optim]") {
  auto w = ember::param(ember::full<ember::half>(Shape{4}, 1.0));
  optim::SGD opt(std::vector{w}, {.lr = 0.5});
  optim::LossScaler scaler({.init_scale = 1024, .growth_interval = 2});

  // d(scale * sum(w * 0.25))/dw = 256 in half; the step divides by the scale again.
  auto backward = [&](double g) {
    const Var<ember::half> c(ember::full<ember::half>(Shape{4}, g));
    Var<ember::half> loss = ember::sum(w * c);
    if (std::isfinite(g)) {
      REQUIRE(static_cast<float>(scaler.scale(loss).value().item()) ==
              static_cast<float>(loss.value().item()) * static_cast<float>(scaler.scale()));
    }
    scaler.scale(loss).backward();
  };
  backward(0.25);
  REQUIRE(static_cast<float>(w.grad().to_vector()[0]) == 256.0f);
  REQUIRE(scaler.step(opt));
  REQUIRE(values(w) == std::vector<float>(4, 0.875f));
  REQUIRE(scaler.last_grad_norm() == Approx(0.5));  // |(0.25, 0.25, 0.25, 0.25)|
  opt.zero_grad();

  SECTION("a planted inf or NaN skips the step and halves the scale") {
    for (double bad : {static_cast<double>(INFINITY), static_cast<double>(NAN)}) {
      const double before = scaler.scale();
      backward(bad);
      REQUIRE_FALSE(scaler.step(opt));
      opt.zero_grad();
      REQUIRE(values(w) == std::vector<float>(4, 0.875f));
      REQUIRE(scaler.scale() == before / 2);
    }
    REQUIRE(scaler.skipped_steps() == 2);
    // The pending unscale of a skipped step does not leak into the next one.
    backward(0.25);
    REQUIRE(scaler.step(opt));
    REQUIRE(values(w) == std::vector<float>(4, 0.75f));
  }
  SECTION("growth_interval clean steps in a row double the scale") {
    backward(0.25);
    REQUIRE(scaler.step(opt));  // second clean step
    REQUIRE(scaler.scale() == 2048);
  }
  SECTION("state round trip") {
    optim::LossScaler other;
    other.load_state(scaler.state());
    REQUIRE(other.scale() == scaler.scale());
    auto broken = scaler.state();
    broken["loss_scaler.scale"] = "lots";
    REQUIRE_THROWS_WITH(other.load_state(broken), Catch::Contains("not numeric"));
    broken.erase("loss_scaler.scale");
    REQUIRE_THROWS_WITH(other.load_state(broken), Catch::Contains("loss_scaler.scale"));
  }
  SECTION("clipping after the unscale") {
    backward(0.25);
    REQUIRE(scaler.step(opt, 0.1));  // norm 0.5 -> 0.1: each gradient 0.05
    REQUIRE(values(w)[0] == Approx(0.875 - 0.5 * 0.05).epsilon(1e-3));
  }
}

TEST_CASE("LossScaler disabled: scale 1, and an inf gradient is an error", "[optim]") {
  auto w = ember::param(ember::full<ember::bf16>(Shape{2}, 1.0));
  optim::SGD opt(std::vector{w}, {.lr = 0.5});
  optim::LossScaler scaler({.enabled = false});
  REQUIRE(scaler.scale() == 1);
  Var<ember::bf16> loss = ember::sum(w * w);
  scaler.scale(loss).backward();
  REQUIRE(scaler.step(opt));
  REQUIRE(values(w) == std::vector<float>(2, 0.0f));
  REQUIRE_THROWS_AS(optim::LossScaler({.growth_factor = 1.0}), ember::Error);
}

}  // namespace test_optim_loss_scaler
}  // namespace
