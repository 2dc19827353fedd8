// Two sets of named tensors (two checkpoints read back) equal name for name and bit for bit:
// what a resumed run must end with.
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <type_traits>

#include <ember/tensor/any_tensor.hpp>

namespace ember::testing {

inline void require_identical(const NamedTensors& a, const NamedTensors& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    REQUIRE(a[i].first == b[i].first);
    a[i].second.visit([&](const auto& t) {
      using T = typename std::remove_cvref_t<decltype(t)>::value_type;
      REQUIRE(t.to_vector() == b[i].second.template as<T>().to_vector());
    });
  }
}

}  // namespace ember::testing
