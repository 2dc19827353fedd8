// Kernel launches through ember's one launch point (exec/kernel_launch.cuh), and, on the emulated
// device, the CUDA semantics it promises: barriers, warp shuffles, ordering. On a GPU only the
// first test runs (the others describe what a GPU does by construction).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

namespace {
namespace test_cuda_launches {

using ember::Device;

__global__ void write_index(int* out) { out[threadIdx.x] = static_cast<int>(threadIdx.x); }

TEST_CASE("cuda: a launch beyond sm_90's limits is an ember::Error naming the limit", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  auto out = ember::zeros<int>({2048}, Device::cuda(0));
  const auto before = ember::launch_count();
  try {
    ember::exec::gpu::launch_kernel("write_index", write_index, 1, 2048, 0,
                                    ember::cuda::current_stream(0), out.data());
    FAIL("a block of 2048 threads was launched");
  } catch (const ember::Error& e) {
    const std::string what = e.what();
    CHECK(what.find("cudaErrorInvalidConfiguration") != std::string::npos);
  }
  ember::exec::gpu::launch_kernel("write_index", write_index, 1, 1024, 0,
                                  ember::cuda::current_stream(0), out.data());
  CHECK(ember::launch_count() - before == 1);  // the failed launch is not counted
  const std::vector<int> v = out.to_vector();
  CHECK(v[1023] == 1023);
  CHECK(v[1024] == 0);
}

#if defined(EMBER_CUDA_EMULATION)

// Each thread publishes its index in shared memory and reads its right neighbour's, with or
// without the barrier between.
template <bool Barrier>
__global__ void read_neighbour(int* out) {
  __shared__ int slot[256];
  const unsigned t = threadIdx.x;
  slot[t] = static_cast<int>(blockIdx.x * 1000 + t);
  if (Barrier) __syncthreads();
  out[blockIdx.x * 256 + t] = slot[(t + 1) % 256];
}

std::int64_t wrong_neighbours(void (*kernel)(int*)) {
  auto out = ember::zeros<int>({2 * 256}, Device::cuda(0));
  ember::exec::gpu::launch_kernel("read_neighbour", kernel, 2, 256, 0,
                                  ember::cuda::current_stream(0), out.data());
  const std::vector<int> v = out.to_vector();
  std::int64_t wrong = 0;
  for (int b = 0; b < 2; ++b) {
    for (int t = 0; t < 256; ++t) wrong += v[b * 256 + t] != b * 1000 + (t + 1) % 256;
  }
  return wrong;
}

TEST_CASE("emulated cuda: a missing __syncthreads reads stale shared memory", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  CHECK(wrong_neighbours(read_neighbour<true>) == 0);
  // Without the barrier, the blocks that start from thread 0 read neighbours that have not
  // written yet (and the others read stale values left in the block's shared memory).
  CHECK(wrong_neighbours(read_neighbour<false>) > 0);
}

// out[lane] for each kind of shuffle, one warp.
__global__ void shuffles(int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  int sum = lane;
  for (int step = 16; step > 0; step /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, step);
  out[lane] = sum;                                                // 0 + 1 + ... + 31 = 496
  out[32 + lane] = __shfl_down_sync(0xffffffffu, lane, 3, 8);     // within segments of 8
  out[64 + lane] = __shfl_up_sync(0xffffffffu, lane, 1);          // lane 0 keeps its own
  out[96 + lane] = __shfl_sync(0xffffffffu, lane, lane + 5, 16);  // wraps within 16
  out[128 + lane] = static_cast<int>(__ballot_sync(0xffffffffu, lane % 2) == 0xaaaaaaaau);
}

TEST_CASE("emulated cuda: warp shuffles follow CUDA's rules, widths included", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  auto out = ember::zeros<int>({160}, Device::cuda(0));
  ember::exec::gpu::launch_kernel("shuffles", shuffles, 1, 32, 0, ember::cuda::current_stream(0),
                                  out.data());
  const std::vector<int> v = out.to_vector();
  for (int lane = 0; lane < 32; ++lane) {
    INFO("lane " << lane);
    CHECK(v[lane] == 496);
    CHECK(v[32 + lane] == (lane % 8 + 3 < 8 ? lane + 3 : lane));
    CHECK(v[64 + lane] == (lane == 0 ? 0 : lane - 1));
    CHECK(v[96 + lane] == lane / 16 * 16 + (lane + 5) % 16);
    CHECK(v[128 + lane] == 1);
  }
}

TEST_CASE("emulated cuda: a copy to pinned memory lands when the stream gets there", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  auto src = ember::full<float>({1 << 16}, 3.0f, Device::cuda(0));
  void* pinned = nullptr;
  ember::cuda::check(cudaHostAlloc(&pinned, sizeof(float) << 16, cudaHostAllocPortable),
                     "cudaHostAlloc");
  cudaStream_t s = ember::cuda::current_stream(0);
  cudaEvent_t done = nullptr;
  ember::cuda::check(cudaEventCreate(&done), "cudaEventCreate");
  ember::cuda::check(
      cudaMemcpyAsync(pinned, src.data(), sizeof(float) << 16, cudaMemcpyDeviceToHost, s),
      "cudaMemcpyAsync");
  ember::cuda::check(cudaEventRecord(done, s), "cudaEventRecord");
  ember::cuda::check(cudaEventSynchronize(done), "cudaEventSynchronize");
  CHECK(cudaEventQuery(done) == cudaSuccess);
  CHECK(static_cast<float*>(pinned)[(1 << 16) - 1] == 3.0f);
  // A copy whose pointers contradict its kind is refused, as CUDA refuses it.
  CHECK(cudaMemcpyAsync(src.data(), pinned, 4, cudaMemcpyDeviceToHost, s) == cudaErrorInvalidValue);
  (void)cudaGetLastError();
  ember::cuda::check(cudaEventDestroy(done), "cudaEventDestroy");
  ember::cuda::check(cudaFreeHost(pinned), "cudaFreeHost");
}

#endif

}  // namespace test_cuda_launches
}  // namespace
