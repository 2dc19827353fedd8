// The number of launches (kernels, or CPU passes) a piece of code makes: how tests prove fusion.
#pragma once

#include <cstdint>

#include <ember/ember.hpp>

namespace ember::testing {

template <class F>
std::uint64_t launches(F&& f) {
  const std::uint64_t l0 = launch_count();
  f();
  return launch_count() - l0;
}

}  // namespace ember::testing
