// cat, stack, split and chunk on CUDA device 0 against the CPU: values and gradients, bf16 and
// float, strided inputs. Compiled by nvcc for sm_90 in every CUDA build; skipped (not failed)
// when no GPU is present.
#include <catch2/catch.hpp>

#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_ops_concat_cuda {
const Device kGpu = Device::cuda(0);

template <class T>
void check_dtype() {
  const Tensor<T> a = Tensor<T>(cast<T>(randn<float>(Shape{3, 4}, 1))).t();  // strided
  const Tensor<T> b = Tensor<T>(cast<T>(randn<float>(Shape{4, 2}, 2)));
  const Tensor<T> y = cat({a, b}, 1);
  const Tensor<T> yg = cat({a.to(kGpu), b.to(kGpu)}, 1);
  REQUIRE(yg.device() == kGpu);
  REQUIRE(yg.to(Device::cpu()).to_vector() == y.to_vector());
  const Tensor<T> s = stack({b, b}, -1);
  REQUIRE(stack({b.to(kGpu), b.to(kGpu)}, -1).to(Device::cpu()).to_vector() == s.to_vector());
  const auto parts = chunk(yg, 2, 1);
  REQUIRE(parts.size() == 2);
  REQUIRE(parts[1].to(Device::cpu()).to_vector() == y.narrow(1, 3, 2).contiguous().to_vector());

  // Gradients: cat of two Vars, weighted, on both devices.
  const auto grads = [&](Device device) {
    Var<T> va = param(a.to(device).contiguous()), vb = param(b.to(device));
    const Var<T> w(Tensor<T>(cast<T>(randn<float>(Shape{4, 5}, 3))).to(device));
    sum(cat({va, vb}, 1) * w).backward();
    return std::vector<std::vector<T>>{va.grad().to(Device::cpu()).to_vector(),
                                       vb.grad().to(Device::cpu()).to_vector()};
  };
  REQUIRE(grads(kGpu) == grads(Device::cpu()));
}

TEST_CASE("cuda: cat, stack and chunk match the CPU: float", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<float>();
}
TEST_CASE("cuda: cat, stack and chunk match the CPU: bf16", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<bf16>();
}

}  // namespace test_ops_concat_cuda
}  // namespace
