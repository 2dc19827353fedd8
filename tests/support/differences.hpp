// How far apart two tensors are, as the tests that compare runs measure it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <catch2/catch.hpp>
#include <ember/ember.hpp>

namespace ember::testing {
/// The largest |a - b| / max(1, |b|) over the elements (relative where b is large, absolute
/// where it is small); the shapes must match.
template <class T>
double max_relative_difference(const Tensor<T>& a, const Tensor<T>& b) {
  REQUIRE(a.shape() == b.shape());
  const auto x = a.contiguous().to_vector(), y = b.contiguous().to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double xi = static_cast<double>(x[i]), yi = static_cast<double>(y[i]);
    worst = std::max(worst, std::abs(xi - yi) / std::max(1.0, std::abs(yi)));
  }
  return worst;
}
}  // namespace ember::testing
