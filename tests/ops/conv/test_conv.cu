// conv2d on CUDA device 0 (cuDNN) against the CPU: NCHW and channels-last, groups, strides,
// dilations, dtypes, and the gradients of input, weight and bias. Compiled by nvcc for sm_90 in
// every CUDA build; skipped (not failed) when no GPU is present.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_ops_conv_cuda {
const Device kGpu = Device::cuda(0);

using ember::testing::require_near;

struct Case {
  Shape x, w;
  Conv2dOptions opt;
};
const std::vector<Case> kCases = {
    {{2, 3, 17, 15}, {8, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
    {{4, 64, 14, 14}, {64, 64, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, 1}},
    {{2, 8, 9, 8}, {12, 2, 3, 2}, {{2, 1}, {1, 0}, {1, 2}, 4}},
    {{1, 16, 8, 8}, {16, 1, 3, 3}, {{1, 1}, {2, 2}, {2, 2}, 16}},
    {{8, 256, 7, 7}, {64, 256, 1, 1}, {}},
};

template <class T>
void check_case(const Case& c, double rel) {
  INFO("x " << c.x.str() << " w " << c.w.str());
  const Tensor<T> x = cast<T>(randn<float>(c.x, 1)), w = cast<T>(randn<float>(c.w, 2));
  const Tensor<T> b = cast<T>(randn<float>(Shape{c.w[0]}, 3));
  const Tensor<T> want = conv2d(x, w, b, c.opt);
  require_near(conv2d(x.to(kGpu), w.to(kGpu), b.to(kGpu), c.opt), want, rel);
  const Tensor<T> yl =
      conv2d(x.contiguous(MemoryFormat::channels_last).to(kGpu), w.to(kGpu), b.to(kGpu), c.opt);
  CHECK(yl.is_contiguous(MemoryFormat::channels_last));
  require_near(yl, want, rel);
}

TEST_CASE("cuda conv2d: cuDNN matches the CPU, NCHW and channels-last", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  for (const auto& c : kCases) {
    check_case<float>(c, 1e-4);
    check_case<double>(c, 1e-11);
    check_case<bf16>(c, 1.0 / 32);
    check_case<ember::half>(c, 1.0 / 256);
  }
}

TEST_CASE("cuda conv2d: gradients match the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  for (const auto& c : kCases) {
    INFO("x " << c.x.str() << " w " << c.w.str());
    const Tensor<float> x = randn<float>(c.x, 4), w = randn<float>(c.w, 5);
    const Tensor<float> b = randn<float>(Shape{c.w[0]}, 6);
    for (bool channels_last : {false, true}) {
      const Tensor<float> xin = channels_last ? x.contiguous(MemoryFormat::channels_last) : x;
      auto xc = param(xin), wc = param(w), bc = param(b);
      auto xg = param(xin.to(kGpu)), wg = param(w.to(kGpu)), bg = param(b.to(kGpu));
      sum(square(conv2d(xc, wc, bc, c.opt))).backward();
      sum(square(conv2d(xg, wg, bg, c.opt))).backward();
      require_near(xg.grad(), xc.grad(), 1e-3);
      require_near(wg.grad(), wc.grad(), 1e-3);
      require_near(bg.grad(), bc.grad(), 1e-3);
    }
  }
}

}  // namespace test_ops_conv_cuda
}  // namespace
