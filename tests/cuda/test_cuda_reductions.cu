// Reductions, random numbers, memory and streams on CUDA device 0, checked against the CPU.
// Compiled by nvcc for sm_90 in every CUDA build; skipped (not failed) when no GPU is present.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_cuda_reductions {
const Device kGpu = Device::cuda(0);

using ember::testing::require_near;

TEST_CASE("cuda: rand and randn give the CPU's bits for the same seed", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  CHECK(rand<float>({10007}, 5, kGpu).to_vector() == rand<float>({10007}, 5).to_vector());
  CHECK(randn<float>({10007}, 5, kGpu).to_vector() == randn<float>({10007}, 5).to_vector());
  CHECK(randn<double>({999}, 9, kGpu, 1.0, 2.0, 4).to_vector() ==
        randn<double>({999}, 9, Device::cpu(), 1.0, 2.0, 4).to_vector());
}

TEST_CASE("cuda: reductions over axes match the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const auto x = randn<float>({33, 257, 5}, 1);
  const auto xg = x.to(kGpu);
  // Float accumulation in a different order: a few ulp per term of the reduced length.
  const double rel = 257 * 33 * 1.2e-7;
  for (Dims axes : {Dims{0}, Dims{1}, Dims{2}, Dims{0, 2}, Dims{-1, 1}, Dims{}}) {
    INFO("axes " << axes);
    require_near(sum(xg * 2 + 1, axes), sum(x * 2 + 1, axes), rel);
    require_near(mean(xg, axes, true), mean(x, axes, true), rel);
    require_near(max(xg, axes), max(x, axes), 0);
    require_near(min(exp(xg), axes), min(exp(x), axes), 1e-6);
    require_near(var(xg, axes), var(x, axes), rel);
    require_near(logsumexp(xg, axes), logsumexp(x, axes), 1e-5);
    require_near(norm(xg, axes), norm(x, axes), rel);
  }
  CHECK(argmax(xg, 1).to_vector() == argmax(x, 1).to_vector());
  CHECK(argmin(xg).item() == argmin(x).item());
}

TEST_CASE("cuda: long reductions split across blocks and stay deterministic", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const auto big = rand<float>({1 << 24}, 3, kGpu);
  const auto before = launch_count();
  const float s1 = sum(big).item();
  CHECK(launch_count() - before == 1);
  const float s2 = sum(big).item();
  CHECK(s1 == s2);
  const double expect = sum(cast<double>(big.to(Device::cpu()))).item();
  CHECK(std::fabs(s1 - expect) <= 1e-5 * expect);
  // Column sums (outputs adjacent, reduced dimension outer).
  const auto m = randn<float>({4096, 1024}, 4);
  require_near(sum(m.to(kGpu), {0}), sum(m, {0}), 4096 * 1.2e-7);
  // bf16 accumulates in float.
  const auto h = rand<bf16>({1 << 20}, 6, kGpu);
  CHECK(std::fabs(float(mean(h).item()) - 0.5f) < 0.01f);
}

TEST_CASE("cuda: softmax written as expressions matches the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const auto x = randn<float>({64, 1000}, 8);
  auto softmax = [](const Tensor<float>& t) {
    Tensor<float> m = max(t, {1}, true);
    Tensor<float> e = exp(t - m);
    return Tensor<float>(e / sum(e, {1}, true));
  };
  require_near(softmax(x.to(kGpu)), softmax(x), 1e-5);
}

TEST_CASE("cuda: memory returns to the pool and out of memory is an ember::Error", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const auto before = memory_stats(kGpu);
  {
    auto t = empty<float>({1 << 20}, kGpu);
    CHECK(memory_stats(kGpu).bytes_in_use == before.bytes_in_use + (4 << 20));
  }
  CHECK(memory_stats(kGpu).bytes_in_use == before.bytes_in_use);
  CHECK_THROWS_WITH(empty<float>({std::int64_t{1} << 46}, kGpu), Catch::Contains("out of memory"));
}

TEST_CASE("cuda: mixing devices in one expression is an ember::Error", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  auto a = zeros<float>({4});
  auto b = zeros<float>({4}, kGpu);
  CHECK_THROWS_WITH(a + b, Catch::Contains("different devices"));
}

TEST_CASE("cuda: views of device memory come back to the host in order", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const auto x = arange<float>(24).reshape({2, 3, 4});
  const auto xg = x.to(kGpu);
  CHECK(xg.permute({2, 0, 1}).to_vector() == x.permute({2, 0, 1}).contiguous().to_vector());
  CHECK(xg.slice(2, 1, 4, 2).to(Device::cpu()).to_vector() ==
        x.slice(2, 1, 4, 2).contiguous().to_vector());
  const auto cl = xg.reshape({1, 2, 3, 4}).contiguous(MemoryFormat::channels_last);
  CHECK(cl.to_vector() == x.to_vector());
}

}  // namespace test_cuda_reductions
}  // namespace
