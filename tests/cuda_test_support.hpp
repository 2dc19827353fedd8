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

namespace detail {
/// CHECKs that every element of the GPU tensor is within bound(cpu element) of the CPU's (equal
/// values always are, infinities included, and NaN against NaN), counting the misses so that one
/// CHECK reports them all, and naming the first.
template <class T, class Bound>
void check_within(const Tensor<T>& gpu, const Tensor<T>& cpu, const Bound& bound,
                  const std::string& scale) {
  REQUIRE(gpu.defined());
  REQUIRE(gpu.device().is_cuda());
  REQUIRE(gpu.shape() == cpu.shape());
  const std::vector<double> g =
      Tensor<double>(cast<double>(gpu.to(Device::cpu()))).contiguous().to_vector();
  const std::vector<double> c = Tensor<double>(cast<double>(cpu)).contiguous().to_vector();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const bool same = g[i] == c[i] || (std::isnan(g[i]) && std::isnan(c[i]));
    if (!same && !(std::fabs(g[i] - c[i]) <= bound(c[i])) && bad++ == 0) first = i;
  }
  INFO("of " << g.size() << " elements" << scale << "; the first miss at " << first << ": gpu "
             << (bad ? g[first] : 0.0) << ", cpu " << (bad ? c[first] : 0.0));
  CHECK(bad == 0);
}
}  // namespace detail

/// A tensor computed on the GPU against the same computation on the CPU: same shape, and every
/// element within rel (1 + |cpu|) (NaN where the CPU has NaN, the same infinity where it has one).
template <class T>
void require_near(const Tensor<T>& gpu, const Tensor<T>& cpu, double rel) {
  detail::check_within(
      gpu, cpu, [rel](double c) { return rel * (1.0 + std::fabs(c)); }, "");
}

/// As require_near, for results of long sums in bf16 or half, whose rounding errors scale with
/// the terms rather than with the result (an entry that cancels to near zero still carries its
/// terms' errors): every element within rel (|cpu| + s), s the root mean square of cpu.
template <class T>
void require_near_normwise(const Tensor<T>& gpu, const Tensor<T>& cpu, double rel) {
  const std::vector<double> c = Tensor<double>(cast<double>(cpu)).contiguous().to_vector();
  double squares = 0;
  for (double v : c) squares += v * v;
  const double s = c.empty() ? 0.0 : std::sqrt(squares / static_cast<double>(c.size()));
  detail::check_within(
      gpu, cpu, [rel, s](double v) { return rel * (std::fabs(v) + s); },
      " (rms " + std::to_string(s) + ")");
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
