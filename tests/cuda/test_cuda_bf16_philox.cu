// The GPU's bf16/half conversions and Philox streams, bit for bit against the host code.
// Compiled by nvcc for sm_90 in every CUDA build; skipped (not failed) when no GPU is present.
// The emulated device runs the host's conversions, so only a GPU can check the intrinsics; the
// Philox streams run there on a shorter stream.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

namespace {
namespace test_cuda_bf16_philox {

// Counts, over all 2^32 floats, where the device intrinsics differ from the portable host code.
[[maybe_unused]] __global__ void conversion_mismatches(unsigned long long* bad) {
  unsigned long long local = 0;
  const unsigned long long stride = 1ull * gridDim.x * blockDim.x;
  for (unsigned long long i = 1ull * blockIdx.x * blockDim.x + threadIdx.x; i < (1ull << 32);
       i += stride) {
    const float f = __uint_as_float(static_cast<unsigned>(i));
    local += ember::float_to_bf16_bits(f) != ember::detail::float_to_bf16_bits_portable(f);
    local += ember::float_to_half_bits(f) != ember::detail::float_to_half_bits_portable(f);
    if (i < 65536) {
      const auto b = static_cast<std::uint16_t>(i);
      local += __float_as_uint(ember::half_bits_to_float(b)) !=
               __float_as_uint(ember::detail::half_bits_to_float_portable(b));
      local += __float_as_uint(ember::bf16_bits_to_float(b)) !=
               __float_as_uint(ember::detail::bf16_bits_to_float_portable(b));
    }
  }
  atomicAdd(bad, local);
}

__global__ void philox_streams(float* normal, float* uniform, std::uint64_t n) {
  const std::uint64_t stride = 1ull * gridDim.x * blockDim.x;
  for (std::uint64_t i = 1ull * blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    normal[i] = ember::philox_normal(1234, 56, i);
    uniform[i] = ember::philox_uniform(1234, 56, i);
  }
}

TEST_CASE("cuda: device bf16/half conversions equal the host's for all 2^32 floats", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
#if defined(EMBER_CUDA_EMULATION)
  SUCCEED("the emulated device converts with the host code: nothing to compare");
#else
  auto bad = ember::zeros<std::int64_t>({1}, ember::Device::cuda(0));
  ember::exec::gpu::launch_kernel("conversion_mismatches", conversion_mismatches, 1024, 256, 0,
                                  ember::cuda::current_stream(0),
                                  reinterpret_cast<unsigned long long*>(bad.data()));
  CHECK(bad.item() == 0);
#endif
}

TEST_CASE("cuda: Philox normals and uniforms equal the host's bit for bit", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
#if defined(EMBER_CUDA_EMULATION)
  const std::int64_t n = 1 << 18;
#else
  const std::int64_t n = 1 << 24;
#endif
  auto z = ember::empty<float>({n}, ember::Device::cuda(0));
  auto u = ember::empty<float>({n}, ember::Device::cuda(0));
  ember::exec::gpu::launch_kernel("philox_streams", philox_streams, 1024, 256, 0,
                                  ember::cuda::current_stream(0), z.data(), u.data(),
                                  static_cast<std::uint64_t>(n));
  const std::vector<float> zs = z.to_vector(), us = u.to_vector();
  std::int64_t zbad = 0, ubad = 0;
#pragma omp parallel for reduction(+ : zbad, ubad)
  for (std::int64_t i = 0; i < n; ++i) {
    const float hz = ember::philox_normal(1234, 56, static_cast<std::uint64_t>(i));
    const float hu = ember::philox_uniform(1234, 56, static_cast<std::uint64_t>(i));
    zbad += std::memcmp(&hz, &zs[static_cast<std::size_t>(i)], 4) != 0;
    ubad += std::memcmp(&hu, &us[static_cast<std::size_t>(i)], 4) != 0;
  }
  CHECK(zbad == 0);
  CHECK(ubad == 0);
}

}  // namespace test_cuda_bf16_philox
}  // namespace
