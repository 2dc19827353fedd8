// Helpers for the CUDA tests (tests/**/test_*.cu).
//
// EMBER_REQUIRE_CUDA_DEVICE() at the top of a TEST_CASE returns from it when no CUDA device is
// usable, after printing "SKIPPED: no CUDA device (<reason>)". CTest's SKIP_REGULAR_EXPRESSION
// (set in tests/CMakeLists.txt for every test labelled `cuda`) turns that line into "Skipped",
// so a CI machine without a GPU compiles the CUDA tests and reports them as skipped, not passed.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include <ember/ember.hpp>

namespace ember::testing {

/// True when CUDA device 0 can be used; otherwise prints the skip line once per process and
/// returns false.
inline bool cuda_device_or_skip(const char* test_name) {
  if (ember::cuda::available()) return true;
  static bool printed = false;
  if (!printed) {
    printed = true;
    std::printf("SKIPPED: no CUDA device (%s)\n", ember::cuda::unavailable_reason().c_str());
  }
  std::printf("  skipping: %s\n", test_name);
  std::fflush(stdout);
  return false;
}

/// A tensor computed on the GPU against the same computation on the CPU: same shape, and every
/// element within rel (1 + |cpu|) (NaN where the CPU has NaN). Counts the misses, so one CHECK
/// reports them all.
template <class T>
void require_near(const Tensor<T>& gpu, const Tensor<T>& cpu, double rel) {
  REQUIRE(gpu.defined());
  REQUIRE(gpu.device().is_cuda());
  REQUIRE(gpu.shape() == cpu.shape());
  const std::vector<double> g =
      Tensor<double>(cast<double>(gpu.to(Device::cpu()))).contiguous().to_vector();
  const std::vector<double> c = Tensor<double>(cast<double>(cpu)).contiguous().to_vector();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const bool both_nan = std::isnan(g[i]) && std::isnan(c[i]);
    if (!both_nan && !(std::fabs(g[i] - c[i]) <= rel * (1.0 + std::fabs(c[i])))) ++bad;
  }
  CHECK(bad == 0);
}

}  // namespace ember::testing

/// Returns from the enclosing TEST_CASE (or SECTION) unless a CUDA device is usable.
#define EMBER_REQUIRE_CUDA_DEVICE()                                      \
  do {                                                                   \
    if (!::ember::testing::cuda_device_or_skip(                          \
            ::Catch::getResultCapture().getCurrentTestName().c_str())) { \
      return;                                                            \
    }                                                                    \
  } while (0)
