// Pinned host memory on a machine without a GPU: a clear ember::Error, and ordinary tensors are
// not pinned. (tests/memory/test_pinned_allocator.cu covers a machine with one.)
#include <catch2/catch.hpp>

#include <ember/ember.hpp>

using namespace ember;
using Catch::Matchers::Contains;

TEST_CASE("Ordinary tensors are not pinned; pinning needs a CUDA device", "[memory]") {
  const Tensor<float> t = from_vector<float>({1, 2, 3});
  CHECK_FALSE(t.is_pinned());
  CHECK_FALSE(Tensor<float>().is_pinned());
  if (memory::pinned_memory_available()) {
    const Tensor<float> p = t.pin_memory();
    CHECK(p.is_pinned());
    CHECK(p.device() == Device::cpu());
    CHECK(p.to_vector() == t.to_vector());
    return;
  }
  CHECK_THROWS_WITH(t.pin_memory(), Contains("pinned host memory needs a CUDA device"));
  CHECK_THROWS_WITH(empty_pinned<float>(Shape{4}), Contains("needs a CUDA device"));
  // A non-blocking copy to the host of a host tensor is no copy at all.
  CHECK(t.to(Device::cpu(), /*non_blocking=*/true).data() == t.data());
}
