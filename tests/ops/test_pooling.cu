// max_pool2d, avg_pool2d and adaptive_avg_pool2d on CUDA device 0 against the CPU: values and
// gradients over the four dtypes, NCHW and channels-last inputs (channels-last out), ceil_mode,
// dilation, padding; one launch each way. Compiled by nvcc for sm_90 in every CUDA build;
// skipped (not failed) when no GPU is present.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"
#include "support/random_tensors.hpp"

using namespace ember;

namespace {
namespace test_ops_pooling_cuda {
const Device kGpu = Device::cuda(0);

using ember::testing::require_near;

enum class Kind { max, avg, adaptive };

struct Case {
  Shape x;
  Kind kind;
  Pool2dOptions o;
  std::array<std::int64_t, 2> out{1, 1};
};

template <class T>
void check_case(const Case& cs, bool channels_last) {
  const MemoryFormat fmt = channels_last ? MemoryFormat::channels_last : MemoryFormat::contiguous;
  const Tensor<T> x = Tensor<T>(cast<T>(randn<float>(cs.x, 11))).contiguous(fmt);
  const Tensor<T> xg = x.to(kGpu).contiguous(fmt);
  auto run = [&](const auto& v) {
    if (cs.kind == Kind::max) return max_pool2d(v, cs.o);
    if (cs.kind == Kind::avg) return avg_pool2d(v, cs.o);
    return adaptive_avg_pool2d(v, cs.out);
  };
  const Tensor<T> y = run(x);
  const std::uint64_t before = launch_count();
  const Tensor<T> yg = run(xg);
  CHECK(launch_count() - before == 1);
  CHECK(yg.is_contiguous(fmt));
  if (cs.kind == Kind::max) {
    // Max pooling picks an input element: the same bits on both devices.
    CHECK(Tensor<T>(yg.to(Device::cpu())).to_vector() == y.contiguous().to_vector());
  } else {
    require_near(yg, y, ember::testing::dtype_tolerance<T>());
  }
  // Gradients: the same seed on both devices, read in place on the GPU.
  const Tensor<T> g = cast<T>(randn<float>(y.shape(), 12));
  auto xc = param(x), xv = param(xg);
  run(xc).backward(g);
  const Var<T> yv = run(xv);
  const std::uint64_t b2 = launch_count();
  yv.backward(g.to(kGpu));
  CHECK(launch_count() - b2 == 1);
  require_near(xv.grad(), xc.grad(), ember::testing::dtype_tolerance<T>());
  // The gather backward has no atomics: a second run gives the same bits.
  auto xv2 = param(xg);
  run(xv2).backward(g.to(kGpu));
  const auto a = xv.grad().to_vector(), b = xv2.grad().to_vector();
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

std::vector<Case> cases() {
  return {
      {Shape{8, 64, 56, 56}, Kind::max, {{3, 3}, {2, 2}, {1, 1}}},  // ResNet's stem pool
      {Shape{3, 5, 17, 13}, Kind::max, {{3, 2}, {2, 3}, {1, 1}, {2, 1}, true}},
      {Shape{2, 7, 9, 11}, Kind::max, {{2, 2}, {2, 2}, {1, 1}, {1, 1}, true}},
      {Shape{3, 5, 17, 13}, Kind::avg, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true}},
      {Shape{3, 5, 17, 13}, Kind::avg, {{3, 2}, {1, 2}, {1, 1}, {1, 1}, false, false}},
      {Shape{8, 512, 7, 7}, Kind::adaptive, {}, {1, 1}},  // ResNet's head
      {Shape{2, 6, 13, 10}, Kind::adaptive, {}, {4, 3}},
      {Shape{2, 6, 5, 4}, Kind::adaptive, {}, {7, 9}},
  };
}

template <class T>
void check_dtype() {
  for (const Case& c : cases()) {
    for (const bool cl : {false, true}) {
      INFO("input " << c.x.str() << ", kind " << int(c.kind) << ", channels-last " << cl);
      check_case<T>(c, cl);
    }
  }
}

TEST_CASE("cuda: pooling matches the CPU: float", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<float>();
}
TEST_CASE("cuda: pooling matches the CPU: double", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<double>();
}
TEST_CASE("cuda: pooling matches the CPU: bf16", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<bf16>();
}
TEST_CASE("cuda: pooling matches the CPU: half", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<ember::half>();
}

TEST_CASE("cuda: pooling's Tensor backward writes either memory order", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> x = randn<float>({2, 6, 11, 9}, 13).contiguous(MemoryFormat::channels_last);
  const Pool2dOptions o{{3, 3}, {2, 2}, {1, 1}};
  const ops::Pool2dGeometry geo = ops::pool2d_geometry(x, o, "max_pool2d");
  const Tensor<float> g = randn<float>(geo.out_shape(), 14);
  const Tensor<std::int32_t> argmax = ops::max_pool2d_forward(x, geo, true).second;
  const Tensor<float> xg = x.to(kGpu).contiguous(MemoryFormat::channels_last);
  const ops::Pool2dGeometry geo_g = ops::pool2d_geometry(xg, o, "max_pool2d");
  const Tensor<std::int32_t> argmax_g = ops::max_pool2d_forward(xg, geo_g, true).second;
  CHECK(argmax_g.to(Device::cpu()).to_vector() == argmax.contiguous().to_vector());
  for (const MemoryFormat f : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
    const Tensor<float> gx = ops::max_pool2d_backward(g, argmax, geo, f);
    const Tensor<float> gxg = ops::max_pool2d_backward(g.to(kGpu), argmax_g, geo_g, f);
    CHECK(gxg.is_contiguous(f));
    require_near(gxg, gx, 1e-6);
    const Tensor<float> ga = ops::avg_pool2d_backward(g, geo, true, f);
    const Tensor<float> gag = ops::avg_pool2d_backward(g.to(kGpu), geo_g, true, f);
    require_near(gag, ga, 1e-6);
  }
}

}  // namespace test_ops_pooling_cuda
}  // namespace
