// Autodiff on CUDA device 0: the fused backward, reductions, views and custom functions give the
// CPU's gradients, in the same number of launches. Compiled by nvcc for sm_90 in every CUDA
// build; skipped (not failed) when no GPU is present.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_autograd_cuda {
const Device kGpu = Device::cuda(0);

using ember::testing::require_near;

template <class F>
std::uint64_t launches(F&& f) {
  const std::uint64_t l0 = launch_count();
  f();
  ember::cuda::synchronize(0);
  return launch_count() - l0;
}

template <class A, class B, class C>
auto ten_ops(const A& a, const B& b, const C& c) {
  return tanh(a * b + c) * sigmoid(a - c) + exp(b * 0.5) / (c * c + 1.0);
}

// Gradients of f(params...) on the CPU and on the GPU, from the same values.
template <class T, class F>
void same_gradients(F&& f, std::vector<Tensor<T>> inputs, double rel) {
  std::vector<Var<T>> cpu, gpu;
  for (const auto& t : inputs) {
    cpu.push_back(param(t));
    gpu.push_back(param(t.to(kGpu)));
  }
  f(cpu).backward();
  f(gpu).backward();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    INFO("input " << i);
    require_near(gpu[i].grad(), cpu[i].grad(), rel);
  }
}

TEST_CASE("cuda autograd: the fused backward is one launch and matches the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Shape s{257, 129};
  const auto a = randn<float>(s, 1), b = randn<float>(s, 2), c = randn<float>(s, 3);
  auto ag = param(a.to(kGpu)), bg = param(b.to(kGpu)), cg = param(c.to(kGpu));
  Var<float> y = ten_ops(ag, bg, cg);
  const auto seed = randn<float>(s, 4);
  const auto seed_gpu = seed.to(kGpu);
  CHECK(launches([&] { y.backward(seed_gpu); }) == 1);
  auto ac = param(a), bc = param(b), cc = param(c);
  Var<float> yc = ten_ops(ac, bc, cc);
  yc.backward(seed);
  require_near(ag.grad(), ac.grad(), 1e-5);
  require_near(bg.grad(), bc.grad(), 1e-5);
  require_near(cg.grad(), cc.grad(), 1e-5);
  // One broadcast input: one reduction more.
  auto bg_row = param(randn<float>(Shape{129}, 5).to(kGpu));
  Var<float> y2 = ten_ops(ag, bg_row, cg);
  CHECK(launches([&] { y2.backward(seed_gpu); }) == 2);
  CHECK(bg_row.grad().shape() == Shape{129});
  // loss.backward(): the implicit 1 costs nothing.
  auto loss = sum(ten_ops(ag, bg, cg));
  CHECK(launches([&] { loss.backward(); }) == 1);
}

TEST_CASE("cuda autograd: reductions of Vars give the CPU's gradients", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const auto x = rand<double>(Shape{33, 65, 7}, 6, Device::cpu(), 0.5, 1.5);
  const auto w = rand<double>(Shape{65, 1}, 7, Device::cpu(), 0.5, 1.5);
  const double inf = std::numeric_limits<double>::infinity();
  for (Dims axes : {Dims{}, Dims{0}, Dims{1}, Dims{0, 2}}) {
    INFO("axes " << axes);
    for (int which = 0; which < 9; ++which) {
      INFO("reduction " << which);
      same_gradients<double>(
          [&](const std::vector<Var<double>>& v) {
            const auto e = v[0] * v[1] + 0.25;
            switch (which) {
              case 0:
                return sum(sum(e, axes));
              case 1:
                return sum(mean(e, axes, true));
              case 2:
                return sum(max(e, axes));
              case 3:
                return sum(min(e, axes));
              case 4:
                return sum(prod(e * 0.5 + 0.6, axes));
              case 5:
                return sum(var(e, axes));
              case 6:
                return sum(norm(e, axes));
              case 7:
                return sum(norm(e, axes, false, inf));
              default:
                return sum(logsumexp(e, axes));
            }
          },
          {x, w}, 1e-10);
    }
  }
}

TEST_CASE("cuda autograd: views and custom functions", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  struct Square {
    static Tensor<float> forward(FunctionContext& ctx, const Tensor<float>& x) {
      ctx.save(x);
      return x * x;
    }
    static Tensor<float> backward(FunctionContext& ctx, const Tensor<float>& g) {
      return g * 2.0 * ctx.saved<float>(0);
    }
  };
  const auto x = randn<float>(Shape{6, 8, 5}, 8);
  same_gradients<float>(
      [](const std::vector<Var<float>>& v) {
        const Var<float> a = v[0].transpose(0, 2).slice(1, 1, 7, 2);
        Var<float> sq = apply<Square>(a.contiguous());
        const Var<float> b = v[0].select(1, 3).unsqueeze(1).expand({6, 3, 5});
        return sum(sin(sq.permute({2, 1, 0})) * b +
                   v[0].reshape({6, 40}).narrow(1, 0, 15).reshape({6, 3, 5}));
      },
      {x}, 1e-5);
}

TEST_CASE("cuda autograd: Var::to moves the value over and the gradient back", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  auto x = param(randn<float>(Shape{100}, 11));
  Var<float> xg = x.to(kGpu);
  REQUIRE(xg.value().device() == kGpu);
  sum(xg * xg).backward();
  REQUIRE(x.grad().device() == Device::cpu());
  require_near(x.grad().to(kGpu), Tensor<float>(x.value() * 2.0), 1e-6);
}

TEST_CASE("cuda autograd: bf16 gradients match the CPU's", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<bf16> a = cast<bf16>(randn<float>(Shape{64, 96}, 9));
  const Tensor<bf16> b = cast<bf16>(randn<float>(Shape{96}, 10));
  same_gradients<bf16>(
      [](const std::vector<Var<bf16>>& v) {
        return sum(gelu(v[0] * v[1]) + logsumexp(v[0], {1}, true) * v[1]);
      },
      {a, b}, 1.0 / 128);
}

}  // namespace test_autograd_cuda
}  // namespace
