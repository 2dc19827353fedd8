// scaled_dot_product_attention and packed_qkv_attention on CUDA device 0 against the CPU: values
// (causal, masked, dropout with the same mask on both devices) and gradients. Compiled by nvcc for
// sm_90 in every CUDA build; skipped (not failed) when no GPU is present.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_ops_attention_cuda {
const Device kGpu = Device::cuda(0);

using ember::testing::require_near;

TEST_CASE("cuda attention: the score kernel runs; the CPU's flash kernel is refused", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> q = randn<float>({1, 4, 8}, 1).to(kGpu),
                      k = randn<float>({1, 6, 8}, 2).to(kGpu);
  REQUIRE(ops::attention_kernel(q) == AttentionKernel::scores);
  AttentionOptions o;
  o.kernel = AttentionKernel::flash;
  REQUIRE_THROWS_AS(scaled_dot_product_attention(q, k, k, {}, o), Error);
}

TEST_CASE("cuda attention: values and gradients match the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> q = randn<float>({2, 4, 33, 16}, 1), k = randn<float>({2, 4, 40, 16}, 2),
                      v = randn<float>({2, 4, 40, 8}, 3);
  const Tensor<bool> mask = Tensor<bool>(rand<float>({33, 40}, 4) > 0.2);
  for (bool causal : {false, true}) {
    AttentionOptions o;
    o.causal = causal;
    o.dropout_p = 0.1;
    o.seed = 5;
    require_near(scaled_dot_product_attention(q.to(kGpu), k.to(kGpu), v.to(kGpu), mask.to(kGpu), o),
                 scaled_dot_product_attention(q, k, v, mask, o), 1e-4);
    auto qc = param(q), kc = param(k), vc = param(v);
    auto qg = param(q.to(kGpu)), kg = param(k.to(kGpu)), vg = param(v.to(kGpu));
    sum(square(scaled_dot_product_attention(qc, kc, vc, mask, o))).backward();
    sum(square(scaled_dot_product_attention(qg, kg, vg, mask.to(kGpu), o))).backward();
    require_near(qg.grad(), qc.grad(), 1e-3);
    require_near(kg.grad(), kc.grad(), 1e-3);
    require_near(vg.grad(), vc.grad(), 1e-3);
  }
}

TEST_CASE("cuda attention: packed q, k and v match the CPU's flash kernel", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  // [B, L, 3, H, E]: the score kernel on the device's views, the flash kernel in place here.
  const Tensor<float> qkv = randn<float>({2, 37, 3, 4, 16}, 6);
  const Tensor<bool> keep = Tensor<bool>(rand<float>({2, 1, 1, 37}, 7) > 0.2);
  AttentionOptions o;
  o.dropout_p = 0.1;
  o.seed = 8;
  auto xc = param(qkv), xg = param(qkv.to(kGpu));
  const Var<float> yc = packed_qkv_attention(xc, keep, o),
                   yg = packed_qkv_attention(xg, keep.to(kGpu), o);
  require_near(yg.value(), yc.value(), 1e-4);
  sum(square(yc)).backward();
  sum(square(yg)).backward();
  require_near(xg.grad(), xc.grad(), 1e-3);
}

}  // namespace test_ops_attention_cuda
}  // namespace
