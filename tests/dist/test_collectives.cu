// The NCCL side of dist's collectives and DistributedDataParallel: CUDA tensors on each rank's
// device (Device::cuda(local_rank)), against the same collectives on CPU tensors. On a machine
// with one GPU this is a world of one through NCCL. Compiled by nvcc for sm_90 in every CUDA
// build; skipped (not failed) when no GPU is present.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>
#include <ember/nn/linear.hpp>

#include "cuda_test_support.hpp"

namespace {

namespace dist = ember::dist;
using ember::Device;
using ember::Shape;
using ember::Tensor;

Device gpu() { return Device::cuda(dist::detail::state().local_rank); }

template <class T>
Tensor<T> ramp(std::int64_t n, int r) {
  std::vector<T> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(T(static_cast<double>((r + 1) * (i % 5) - r)));
  return ember::from_vector<T>(v);
}

template <class T>
std::vector<double> host_doubles(const Tensor<T>& t) {
  std::vector<double> out;
  for (const T& x : t.to(Device::cpu()).contiguous().to_vector())
    out.push_back(static_cast<double>(x));
  return out;
}

template <class T>
void same_as_cpu() {
  const int r = dist::rank(), n = dist::world_size();
  for (const dist::ReduceOp op : {dist::ReduceOp::sum, dist::ReduceOp::max, dist::ReduceOp::min}) {
    Tensor<T> on_gpu = ramp<T>(1000, r).to(gpu());
    Tensor<T> on_cpu = ramp<T>(1000, r);
    dist::all_reduce(on_gpu, op);
    dist::all_reduce(on_cpu, op);
    REQUIRE(host_doubles(on_gpu) == host_doubles(on_cpu));
  }
  Tensor<T> b = ramp<T>(64, r).to(gpu());
  dist::broadcast(b, n - 1);
  REQUIRE(host_doubles(b) == host_doubles(ramp<T>(64, n - 1)));
  Tensor<T> gathered = ember::empty<T>(Shape{n * 64}, gpu());
  dist::all_gather(gathered, ramp<T>(64, r).to(gpu()));
  Tensor<T> gathered_cpu = ember::empty<T>(Shape{n * 64});
  dist::all_gather(gathered_cpu, ramp<T>(64, r));
  REQUIRE(host_doubles(gathered) == host_doubles(gathered_cpu));
  Tensor<T> part = ember::empty<T>(Shape{64}, gpu());
  dist::reduce_scatter(part, ramp<T>(64 * n, r).to(gpu()));
  Tensor<T> part_cpu = ember::empty<T>(Shape{64});
  dist::reduce_scatter(part_cpu, ramp<T>(64 * n, r));
  REQUIRE(host_doubles(part) == host_doubles(part_cpu));
}

}  // namespace

TEST_CASE("dist on CUDA tensors: NCCL gives what MPI gives on the CPU", "[dist][cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  same_as_cpu<float>();
  same_as_cpu<double>();
  same_as_cpu<ember::bf16>();
  same_as_cpu<std::int64_t>();
  Tensor<float> strided = ember::zeros<float>(Shape{4, 4}, gpu()).t();
  REQUIRE_THROWS_WITH(dist::all_reduce(strided), Catch::Contains("must be contiguous"));
}

TEST_CASE("DistributedDataParallel on CUDA: the averaged gradients equal the CPU's",
          "[dist][cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  ember::nn::manual_seed(2);
  ember::nn::Linear<float> cpu_layer(8, 4);
  ember::nn::manual_seed(2);
  ember::nn::Linear<float> gpu_layer(8, 4, {}, gpu());
  dist::DistributedDataParallel on_cpu(cpu_layer), on_gpu(gpu_layer);
  const Tensor<float> x =
      ember::randn<float>(Shape{16, 8}, 3 + static_cast<std::uint64_t>(dist::rank()));
  ember::sum(cpu_layer.forward(ember::Var<float>(x))).backward();
  ember::sum(gpu_layer.forward(ember::Var<float>(x.to(gpu())))).backward();
  ember::testing::require_near(gpu_layer.weight.grad(), cpu_layer.weight.grad(), 1e-5);
  ember::testing::require_near(gpu_layer.bias.grad(), cpu_layer.bias.grad(), 1e-5);
}
