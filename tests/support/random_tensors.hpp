// Random float64 test inputs from a fixed seed, and the closeness check of results against a
// float64 reference, shared by the autograd and operator tests.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include <ember/ember.hpp>

namespace ember::testing {

/// Uniform values in [lo, hi) (std::mt19937 seeded with `seed`), on the CPU.
inline Tensor<double> uniform_tensor(const Shape& s, double lo, double hi, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(s.numel()));
  for (auto& x : v) x = d(rng);
  return from_vector<double>(v, s);
}

/// n values uniform in [-1, 1), drawn in float and converted to T (std::mt19937 seeded with
/// `seed`): the raw operands of the CPU matrix-product tests.
template <class T = float>
std::vector<T> uniform_values(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<T> v(n);
  for (T& x : v) x = T(d(rng));
  return v;
}

/// Normal(mean, stddev) values (std::mt19937 seeded with `seed`), on the CPU.
inline Tensor<double> normal_tensor(const Shape& s, double mean, double stddev,
                                    std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(mean, stddev);
  std::vector<double> v(static_cast<std::size_t>(s.numel()));
  for (auto& x : v) x = d(rng);
  return from_vector<double>(v, s);
}

/// Every element of `got` (any dtype, any layout) within tol (scale + |want|) of `want`.
template <class T>
void require_close(const Tensor<T>& got, const Tensor<double>& want, double tol,
                   double scale = 1.0) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<double> g = Tensor<double>(cast<double>(got)).contiguous().to_vector();
  const std::vector<double> w = want.contiguous().to_vector();
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": " << g[i] << " vs " << w[i]);
    REQUIRE(std::fabs(g[i] - w[i]) <= tol * (scale + std::fabs(w[i])));
  }
}

/// Every element of `got` within tol (1 + |want|); reports how many differ and the first.
inline void require_close(const std::vector<double>& got, const std::vector<double>& want,
                          double tol) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol * (1.0 + std::fabs(want[i]))) && bad++ == 0) first = i;
  }
  INFO(bad << " of " << got.size() << " differ; the first, element " << first << ": "
           << (bad ? got[first] : 0.0) << " vs " << (bad ? want[first] : 0.0));
  REQUIRE(bad == 0);
}

/// The tolerance of a result computed in the compute type and rounded once to T: a few units of
/// float's precision, or half a unit of T's for the 16-bit types (bf16: 8 bits, half: 11).
template <class T>
double dtype_tolerance() {
  if constexpr (std::is_same_v<T, double>) return 1e-12;
  if constexpr (std::is_same_v<T, float>) return 1e-5;
  if constexpr (std::is_same_v<T, bf16>) return 1.0 / 128;
  return 1.0 / 1024;
}

}  // namespace ember::testing
