// index_select, gather, scatter_add, flip, roll, pad, cumsum, tril on CUDA device 0 against the
// CPU: values and gradients, float and bf16, strided inputs. Compiled by nvcc for sm_90 in every
// CUDA build; skipped (not failed) when no GPU is present.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_ops_indexing_cuda {
const Device kGpu = Device::cuda(0);

template <class T>
std::vector<T> on_cpu(const Tensor<T>& t) {
  return t.to(Device::cpu()).contiguous().to_vector();
}

template <class T>
void check_dtype() {
  const Tensor<T> x = Tensor<T>(cast<T>(randn<float>(Shape{5, 4, 3}, 1))).permute({2, 0, 1});
  const Tensor<T> xg = x.to(kGpu);
  const Tensor<std::int64_t> sel = from_vector<std::int64_t>({4, 0, 4, 2}, Shape{4});
  const Tensor<std::int64_t> idx =
      from_vector<std::int64_t>({0, 3, 1, 1, 2, 0, 3, 3, 0, 1, 2, 3}, Shape{3, 2, 2});
  const Tensor<T> src = Tensor<T>(cast<T>(randn<float>(Shape{3, 2, 2}, 2)));
  REQUIRE(on_cpu(index_select(xg, 1, sel.to(kGpu))) == on_cpu(index_select(x, 1, sel)));
  REQUIRE(on_cpu(gather(xg, 2, idx.to(kGpu))) == on_cpu(gather(x, 2, idx)));
  REQUIRE(on_cpu(scatter_add(xg, 2, idx.to(kGpu), src.to(kGpu))) ==
          on_cpu(scatter_add(x, 2, idx, src)));
  REQUIRE(on_cpu(flip(xg, {0, 2})) == on_cpu(flip(x, {0, 2})));
  REQUIRE(on_cpu(roll(xg, -3, 1)) == on_cpu(roll(x, -3, 1)));
  for (const PadMode mode :
       {PadMode::constant, PadMode::reflect, PadMode::replicate, PadMode::circular}) {
    REQUIRE(on_cpu(pad(xg, {2, 1, 1, 3}, mode, 1.5)) == on_cpu(pad(x, {2, 1, 1, 3}, mode, 1.5)));
  }
  REQUIRE(on_cpu(cumsum(xg, 1)) == on_cpu(cumsum(x, 1)));
  REQUIRE(on_cpu(tril(xg, 1)) == on_cpu(tril(x, 1)));

  // Gradients through every backward rule, on both devices.
  const auto grads = [&](Device device) {
    Var<T> v = param(x.to(device).contiguous());
    const Var<T> w(Tensor<T>(cast<T>(randn<float>(Shape{3, 4, 2}, 3))).to(device));
    const Var<T> a = index_select(v, 1, sel.to(device));                           // [3, 4, 4]
    const Var<T> b = gather(pad(v, {1, 1}, PadMode::reflect), 2, idx.to(device));  // [3, 2, 2]
    const Var<T> c = cumsum(roll(flip(v, {1}), 2, 0), 2).narrow(2, 0, 2);          // [3, 5, 2]
    Var<T> loss = sum(a * 2.0) + sum(b * b) + sum(c.narrow(1, 0, 4) * w);
    loss.backward();
    return on_cpu(v.grad());
  };
  REQUIRE(grads(kGpu) == grads(Device::cpu()));
}

TEST_CASE("cuda: indexing and rearranging match the CPU: float", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<float>();
}
TEST_CASE("cuda: indexing and rearranging match the CPU: bf16", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<bf16>();
}

TEST_CASE("cuda: sort and topk match the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> x = randn<float>(Shape{7, 300}, 4);
  const Tensor<float> tied = Tensor<float>(floor(x * 2.0)).t();  // [300, 7], strided, many ties
  for (const bool desc : {false, true}) {
    for (const int d : {0, 1}) {
      const auto cpu = sort(tied, d, desc);
      const auto gpu = sort(tied.to(kGpu), d, desc);
      REQUIRE(on_cpu(gpu.indices) == on_cpu(cpu.indices));
      REQUIRE(on_cpu(gpu.values) == on_cpu(cpu.values));
    }
  }
  const auto cpu = topk(x, 5, 1);
  const auto gpu = topk(x.to(kGpu), 5, 1);
  REQUIRE(on_cpu(gpu.indices) == on_cpu(cpu.indices));
  // The backward of sort's values (the inverse permutation) on both devices.
  const auto grads = [&](Device device) {
    Var<float> v = param(x.to(device));
    const Var<float> w(randn<float>(Shape{7, 300}, 5).to(device));
    sum(sort(v, 1, true).values * w).backward();
    return on_cpu(v.grad());
  };
  REQUIRE(grads(kGpu) == grads(Device::cpu()));
}

}  // namespace test_ops_indexing_cuda
}  // namespace
