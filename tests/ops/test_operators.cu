// softmax, the losses, the normalisations and dropout on CUDA device 0 against the CPU (values
// and gradients), and dropout's masks: the same elements on both devices. Compiled by nvcc for
// sm_90 in every CUDA build; skipped (not failed) when no GPU is present.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_ops_operators_cuda {
const Device kGpu = Device::cuda(0);

using ember::testing::require_near;

TEST_CASE("cuda: softmax, losses and their gradients match the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> x = randn<float>({37, 1000}, 1);
  const Tensor<std::int64_t> t = Tensor<std::int64_t>(
      cast<std::int64_t>(floor(rand<float>({37}, 2, Device::cpu(), 0.0, 1000.0))));
  require_near(softmax(x.to(kGpu), 1), softmax(x, 1), 1e-5);
  require_near(log_softmax(x.to(kGpu), 0), log_softmax(x, 0), 1e-5);
  const CrossEntropyOptions opt{0.1, -100, Reduction::mean};
  require_near(cross_entropy(x.to(kGpu), t.to(kGpu), opt), cross_entropy(x, t, opt), 1e-5);
  auto xc = param(x), xg = param(x.to(kGpu));
  cross_entropy(xc, t, opt).backward();
  cross_entropy(xg, t.to(kGpu), opt).backward();
  require_near(xg.grad(), xc.grad(), 1e-5);
  auto yc = param(x), yg = param(x.to(kGpu));
  sum(softmax(yc, 1) * x).backward();
  sum(softmax(yg, 1) * x.to(kGpu)).backward();
  require_near(yg.grad(), yc.grad(), 1e-5);
}

TEST_CASE("cuda: softmax and layer_norm rows (a warp per row) and long rows match the CPU",
          "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  // Rows shorter than a warp's stretch, ragged, and longer than a warp takes (the reduction path
  // on the GPU, rows on the CPU); bf16 rounds once at the store on both.
  for (const Shape& s : {Shape{300, 7}, Shape{33, 1031}, Shape{2, 40000}}) {
    INFO("shape " << s.str());
    const Tensor<float> x = randn<float>(s, 11, Device::cpu(), 0.0, 3.0);
    const Tensor<float> g = randn<float>(s, 12);
    for (bool log : {false, true}) {
      auto yc = param(x), yg = param(x.to(kGpu));
      const Var<float> oc = log ? log_softmax(yc, -1) : softmax(yc, -1);
      const Var<float> og = log ? log_softmax(yg, -1) : softmax(yg, -1);
      require_near(og.value(), oc.value(), 1e-5);
      oc.backward(g);
      og.backward(g.to(kGpu));
      require_near(yg.grad(), yc.grad(), 1e-5);
    }
    const Tensor<bf16> xb = Tensor<bf16>(cast<bf16>(x));
    require_near(softmax(xb.to(kGpu), -1), softmax(xb, -1), 1.0 / 128);
    const std::int64_t cols = s[1];
    const Tensor<float> w = randn<float>(Shape{cols}, 13), b = randn<float>(Shape{cols}, 14);
    auto lc = param(x), lg = param(x.to(kGpu));
    const Var<float> nc = layer_norm(lc, w, b), ng = layer_norm(lg, w.to(kGpu), b.to(kGpu));
    require_near(ng.value(), nc.value(), 1e-4);
    nc.backward(g);
    ng.backward(g.to(kGpu));
    require_near(lg.grad(), lc.grad(), 1e-4);
  }
}

TEST_CASE("cuda: layer_norm and batch_norm (channels-last) match the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> x = randn<float>({8, 16, 7, 5}, 3);
  const Tensor<float> w = randn<float>({16}, 4), b = randn<float>({16}, 5);
  Tensor<float> rm = zeros<float>({16}), rv = ones<float>({16});
  Tensor<float> rmg = rm.to(kGpu), rvg = rv.to(kGpu);
  const Tensor<float> xl = x.contiguous(MemoryFormat::channels_last);
  require_near(batch_norm(xl.to(kGpu), w.to(kGpu), b.to(kGpu), rmg, rvg, true),
               batch_norm(xl, w, b, rm, rv, true), 1e-4);
  require_near(rmg, rm, 1e-5);
  require_near(rvg, rv, 1e-5);
  const Tensor<float> lw = randn<float>({5}, 6);
  auto xc = param(x), xg = param(x.to(kGpu));
  sum(square(layer_norm(xc, lw, Tensor<float>()))).backward();
  sum(square(layer_norm(xg, lw.to(kGpu), Tensor<float>()))).backward();
  require_near(xg.grad(), xc.grad(), 1e-4);
}

TEST_CASE("cuda: dropout drops the same elements as the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> x = randn<float>({1000, 257}, 7);
  CHECK(dropout(x.to(kGpu), 0.3, true, 11, 1234).to(Device::cpu()).to_vector() ==
        dropout(x, 0.3, true, 11, 1234).to_vector());
  const Tensor<bf16> x16 = cast<bf16>(x);
  CHECK(dropout(x16.to(kGpu), 0.5, true, 3).to(Device::cpu()).to_vector() ==
        dropout(x16, 0.5, true, 3).to_vector());
}

}  // namespace test_ops_operators_cuda
}  // namespace
