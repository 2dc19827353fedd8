// The optimizers on CUDA device 0 against the same steps on the CPU: SGD, LARS, AdamW and LAMB
// over parameters of many sizes (so several chunks and slots per launch) in float and bf16
// (float master weights), the global norm, the launch counts, and the loss scaler's skip.
// Compiled by nvcc for sm_90 in every CUDA build; skipped (not failed) without a GPU.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <ember/ember.hpp>
#include <ember/optim/adamw.hpp>
#include <ember/optim/lamb.hpp>
#include <ember/optim/lars.hpp>
#include <ember/optim/loss_scaler.hpp>
#include <ember/optim/sgd.hpp>

#include "cuda_test_support.hpp"
#include "support/launches.hpp"

using namespace ember;

namespace {
namespace test_optim_optimizers_cuda {
const Device kGpu = Device::cuda(0);

const std::vector<Shape> kShapes{Shape{3}, Shape{257, 129}, Shape{64, 3, 7, 7}, Shape{40000},
                                 Shape{1}};

template <class T>
void set_grad(const Var<T>& w, const Tensor<float>& g) {
  Var<T> loss = sum(w * Var<T>(Tensor<T>(cast<T>(g.to(w.value().device())))));
  loss.backward();
}

/// Runs three steps of Opt on the CPU and on the GPU from the same values and gradients and
/// compares the parameters.
template <class T, class Opt>
void cpu_vs_gpu(const typename Opt::options_type& options, double rel) {
  std::vector<Var<T>> cpu, gpu;
  std::vector<Tensor<float>> grads;
  std::uint64_t seed = 1;
  for (const Shape& s : kShapes) {
    const Tensor<T> init = cast<T>(randn<float>(s, seed++));
    cpu.push_back(param(init.clone()));
    gpu.push_back(param(init.to(kGpu)));
    grads.push_back(randn<float>(s, seed++));
  }
  Opt a(cpu, options), b(gpu, options);
  for (int k = 0; k < 3; ++k) {
    for (std::size_t p = 0; p < kShapes.size(); ++p) {
      set_grad(cpu[p], grads[p] * (k + 1.0f));
      set_grad(gpu[p], grads[p] * (k + 1.0f));
    }
    REQUIRE(b.grad_norm().norm == Approx(a.grad_norm().norm).epsilon(1e-5));
    a.step();
    b.step();
    a.zero_grad();
    b.zero_grad();
  }
  for (std::size_t p = 0; p < kShapes.size(); ++p) {
    INFO("parameter " << p);
    testing::require_near(gpu[p].value(), cpu[p].value(), rel);
  }
}

TEMPLATE_TEST_CASE("optimizers on CUDA match the CPU", "[optim][cuda]", float, bf16) {
  EMBER_REQUIRE_CUDA_DEVICE();
  // bf16 parameters are the float master rounded once: one bf16 ulp at most apart.
  const double rel = std::is_same_v<TestType, float> ? 1e-5 : 8e-3;
  cpu_vs_gpu<TestType, optim::SGD>({.lr = 0.1, .momentum = 0.9, .nesterov = true}, rel);
  cpu_vs_gpu<TestType, optim::AdamW>({.lr = 1e-2}, rel);
  cpu_vs_gpu<TestType, optim::LARS>({.lr = 1.0, .weight_decay = 5e-5}, rel);
  cpu_vs_gpu<TestType, optim::LAMB>({.lr = 1e-2}, rel);
}

TEST_CASE("optimizers on CUDA: one launch per step, three for LAMB", "[optim][cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  std::vector<Var<float>> ps;
  for (const Shape& s : kShapes) {
    ps.push_back(param(zeros<float>(s, kGpu)));
    set_grad(ps.back(), ones<float>(s));
  }
  optim::AdamW adam(ps, {});
  adam.step();
  REQUIRE(testing::launches([&] { adam.step(); }) == 1);
  optim::LAMB lamb(ps, {});
  REQUIRE(testing::launches([&] { lamb.step(); }) == 3);
}

TEST_CASE("LossScaler on CUDA skips a step with an inf gradient", "[optim][cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  auto w = param(ones<ember::half>(Shape{1000}, kGpu));
  optim::SGD opt(std::vector{w}, {.lr = 0.1});
  optim::LossScaler scaler({.init_scale = 1024});
  Tensor<float> g = ones<float>(Shape{1000});
  g.data()[517] = INFINITY;
  set_grad(w, g);
  REQUIRE_FALSE(scaler.step(opt));
  REQUIRE(scaler.scale() == 512);
  REQUIRE(Tensor<float>(cast<float>(w.value().to(Device::cpu()))).to_vector() ==
          std::vector<float>(1000, 1.0f));
}

}  // namespace test_optim_optimizers_cuda
}  // namespace
