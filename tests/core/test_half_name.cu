// ember::half beside CUDA's headers in a user's .cu file: the ember target defines CUDA_NO_HALF,
// so cuda_fp16.h leaves out its global `half` typedef and, after `using namespace ember;`,
// `half` names ember's type. Compiling this file is most of the test; it runs without a GPU.
// (The emulated CUDA device has no cuda_fp16.h: there, only ember's half is checked.)
#include <catch2/catch.hpp>

#if !defined(EMBER_CUDA_EMULATION)
#include <cuda_fp16.h>
#endif

#include <type_traits>

#include <ember/ember.hpp>

using namespace ember;

TEST_CASE("half in a .cu file with using namespace ember is ember::half", "[core][half]") {
  half h{1.0f};
  STATIC_REQUIRE(std::is_same_v<decltype(h), ember::half>);
  REQUIRE(float(h) == 1.0f);
#if !defined(EMBER_CUDA_EMULATION)
  const __half cuda_value = __float2half(2.0f);  // CUDA's own type is still there
  REQUIRE(float(half(cuda_value)) == 2.0f);
#endif
}
