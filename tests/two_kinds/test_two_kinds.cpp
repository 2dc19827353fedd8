// One program of both kinds of translation unit (docs/design.md, "One source, two kinds of
// translation unit"): host_side.cpp, compiled by the host compiler, and device_side.cu, compiled
// by nvcc, include the same user model header, which never names ember's translation-unit tag.
//
// - ember's own templates keep one instantiation per kind of translation unit, so the nvcc one,
//   which can launch kernels, is never replaced by the host one at link time;
// - a user's own template is one function to the linker whichever file instantiated it, which is
//   why the rule puts the model in the .cu file;
// - the model, run from the .cu file on data the .cpp file made, matches a float64 reference on
//   the CPU, and on the GPU matches the CPU;
// - both files construct the same optimizer over bf16 parameters (its constructor converts them
//   to float masters), and on the GPU the nvcc file's copy of the constructor is the one it runs;
// - a host-compiled file that meets a CUDA tensor throws ember::Error naming nvcc.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "cuda_test_support.hpp"
#include "user_model.hpp"

namespace {

using two_kinds::ModelRun;

// Entries of `got` within float's rounding of the float64 `want`: a few ulps of the terms summed.
void require_near(const ember::Tensor<float>& got, const std::vector<double>& want, double scale) {
  const std::vector<float> g = got.to_vector();
  REQUIRE(g.size() == want.size());
  const double tol = 16 * std::numeric_limits<float>::epsilon() * scale;
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(std::abs(double(g[i]) - want[i]) <= tol);
}

std::vector<double> widened(const ember::Tensor<float>& t) {
  const std::vector<float> v = t.to_vector();
  return {v.begin(), v.end()};
}

}  // namespace

TEST_CASE("ember's templates keep an instantiation per kind of translation unit", "[two_kinds]") {
  const two_kinds::Addresses host = two_kinds::host_side_addresses();
  const two_kinds::Addresses device = two_kinds::device_side_addresses();
  CHECK(host.library_evaluate != device.library_evaluate);
  // The user's own template is one function in the whole program (C++'s one definition rule).
  CHECK(host.user_template == device.user_template);
}

TEST_CASE("the model runs from the .cu file on data the .cpp file made", "[two_kinds]") {
  const ember::Tensor<float> x = two_kinds::host_side_inputs();
  const std::vector<float> xs = x.to_vector();
  REQUIRE(xs.size() == 12);
  CHECK(xs.front() == -1.0f);
  CHECK(xs.back() == 1.75f);
  const std::vector<float> shifted = two_kinds::host_side_shift(x).to_vector();
  for (std::size_t i = 0; i < xs.size(); ++i) CHECK(shifted[i] == xs[i] * 2.0f + 1.0f);

  const ModelRun run = two_kinds::device_side_run(x, ember::Device::cpu(), 7);
  const std::vector<float> w1 = run.w1.to_vector(), b1 = run.b1.to_vector();
  const std::vector<float> w2 = run.w2.to_vector(), b2 = run.b2.to_vector();
  REQUIRE(w1.size() == 20);
  REQUIRE(w2.size() == 10);
  // out = W2 relu(W1 x + b1) + b2 per row; d sum(out) / dW1[j][i] = sum over rows of
  // (sum_k W2[k][j]) [W1 x + b1 > 0]_j x_i.
  std::vector<double> out(6, 0.0), w1_grad(20, 0.0);
  for (int r = 0; r < 3; ++r) {
    for (int j = 0; j < 5; ++j) {
      double h = b1[j];
      for (int i = 0; i < 4; ++i) h += double(w1[j * 4 + i]) * xs[r * 4 + i];
      const double a = std::max(h, 0.0);
      double column = 0.0;
      for (int k = 0; k < 2; ++k) {
        out[r * 2 + k] += double(w2[k * 5 + j]) * a;
        column += w2[k * 5 + j];
      }
      if (h > 0.0)
        for (int i = 0; i < 4; ++i) w1_grad[j * 4 + i] += column * xs[r * 4 + i];
    }
    for (int k = 0; k < 2; ++k) out[r * 2 + k] += b2[k];
  }
  require_near(run.output, out, 8.0);
  require_near(run.w1_grad, w1_grad, 8.0);
}

TEST_CASE("both files construct the same optimizer over bf16 parameters", "[two_kinds]") {
  const std::vector<float> ones(3, 1.0f);
  CHECK(two_kinds::host_side_master(ember::Device::cpu()).to_vector() == ones);
  CHECK(two_kinds::device_side_master(ember::Device::cpu()).to_vector() == ones);
}

TEST_CASE("on the GPU, the .cu file's model matches the CPU", "[two_kinds][cuda]") {
  if (!ember::testing::cuda_device_or_skip("two kinds of translation unit on the GPU")) return;
  const ember::Tensor<float> x = two_kinds::host_side_inputs();
  const ModelRun cpu = two_kinds::device_side_run(x, ember::Device::cpu(), 7);
  const ModelRun gpu = two_kinds::device_side_run(x, ember::Device::cuda(0), 7);
  CHECK(gpu.w1.to_vector() == cpu.w1.to_vector());  // nn::manual_seed: the same draws on both
  require_near(gpu.output, widened(cpu.output), 8.0);
  require_near(gpu.w1_grad, widened(cpu.w1_grad), 8.0);
  // Both files construct an SGD over bf16 parameters: the nvcc file's constructor converts on
  // the GPU, which the host file's copy of it could not (it names its unit's Mode).
  CHECK(two_kinds::device_side_master(ember::Device::cuda(0)).to_vector() ==
        two_kinds::host_side_master(ember::Device::cpu()).to_vector());
  // The rule broken on purpose: the host-compiled file evaluating on a CUDA tensor.
  CHECK_THROWS_WITH(two_kinds::host_side_shift(x.to(ember::Device::cuda(0))),
                    Catch::Contains("compiled by nvcc"));
}
