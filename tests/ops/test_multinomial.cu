// multinomial on CUDA device 0 against the CPU: the same seed draws the same indices on both
// devices (Philox's uniforms; integer weights, so the running sums are exact), with and without
// replacement. Compiled by nvcc for sm_90 in every CUDA build; skipped (not failed) when no GPU
// is present.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_ops_multinomial_cuda {
const Device kGpu = Device::cuda(0);

TEST_CASE("cuda multinomial: the CPU's indices for the same seed", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  // Three rows of small integer weights, zeros among them.
  const Tensor<float> w = from_vector<float>(
      {1, 0, 3, 2, 0, 5, 5, 0, 1, 1, 1, 1, 0, 0, 7, 2, 4, 4, 0, 1, 3, 0, 6, 2}, Shape{3, 8});
  for (const bool replacement : {true, false}) {
    INFO("replacement " << replacement);
    const std::int64_t n = replacement ? 500 : 5;
    const Tensor<std::int64_t> gpu = multinomial(w.to(kGpu), n, replacement, 17);
    REQUIRE(gpu.device().is_cuda());
    CHECK(gpu.to(Device::cpu()).to_vector() == multinomial(w, n, replacement, 17).to_vector());
  }
}

}  // namespace test_ops_multinomial_cuda
}  // namespace
