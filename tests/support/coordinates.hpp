// Small helpers of the tests that check operators coordinate by coordinate: exact test values
// and row-major coordinates.
#pragma once

#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

namespace ember::testing {

/// A tensor of `s` holding small integers (exact in every element type), different per seed.
template <class T>
Tensor<T> counting(const Shape& s, int seed) {
  std::vector<T> v(static_cast<std::size_t>(s.numel()));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = T(static_cast<float>((static_cast<int>(i) * 7 + seed * 13) % 23 - 11));
  return from_vector<T>(v, s);
}

/// Element `flat` (row-major over `s`) as coordinates.
inline std::vector<std::int64_t> coords(std::int64_t flat, const Shape& s) {
  std::vector<std::int64_t> c(static_cast<std::size_t>(s.rank()));
  for (int k = s.rank() - 1; k >= 0; --k) {
    c[static_cast<std::size_t>(k)] = flat % s[k];
    flat /= s[k];
  }
  return c;
}

/// The row-major position of coordinates `c` in `s`.
inline std::int64_t flat_of(const std::vector<std::int64_t>& c, const Shape& s) {
  std::int64_t f = 0;
  for (int k = 0; k < s.rank(); ++k) f = f * s[k] + c[static_cast<std::size_t>(k)];
  return f;
}

}  // namespace ember::testing
