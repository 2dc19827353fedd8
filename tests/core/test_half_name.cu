// ember::half beside CUDA's headers in a user's .cu file: the ember target defines CUDA_NO_HALF,
// so cuda_fp16.h leaves out its global `half` typedef and, after `using namespace ember;`,
// `half` names ember's type. Compiling this file is most of the test; it runs without a GPU.
#include <catch2/catch.hpp>

#include <cuda_fp16.h>

#include <type_traits>

#include <ember/ember.hpp>

using namespace ember;

TEST_CASE("half in a .cu file with using namespace ember is ember::half", "[core][half]") {
  half h{1.0f};
  STATIC_REQUIRE(std::is_same_v<decltype(h), ember::half>);
  REQUIRE(float(h) == 1.0f);
  const __half cuda_value = __float2half(2.0f);  // CUDA's own type is still there
  REQUIRE(float(half(cuda_value)) == 2.0f);
}
