// The host allocator: alignment, the counters, and the cache of large blocks (reuse of the same
// size, reserved bytes, emptying it).
#include <catch2/catch.hpp>

#include <cstdint>

#include <ember/ember.hpp>

using ember::Device;
using ember::Shape;
using ember::Tensor;

TEST_CASE("host blocks are 64-byte aligned and counted", "[memory]") {
  const auto before = ember::memory_stats(Device::cpu());
  {
    Tensor<float> t = ember::empty<float>(Shape{1000});
    REQUIRE(reinterpret_cast<std::uintptr_t>(t.data()) % 64 == 0);
    const auto during = ember::memory_stats(Device::cpu());
    REQUIRE(during.bytes_in_use == before.bytes_in_use + 4000);
    REQUIRE(during.active_allocations == before.active_allocations + 1);
  }
  REQUIRE(ember::memory_stats(Device::cpu()).bytes_in_use == before.bytes_in_use);
}

TEST_CASE("large host blocks are cached and reused for the same size", "[memory]") {
  ember::memory::host_empty_cache();
  const std::int64_t n = 1 << 20;  // 4 MiB of float: cached when freed
  const float* first = nullptr;
  {
    Tensor<float> a = ember::empty<float>(Shape{n});
    first = a.data();
  }
  const auto stats = ember::memory_stats(Device::cpu());
  REQUIRE(ember::memory::host_cached_bytes() >= 4 * n);
  REQUIRE(stats.reserved_bytes == stats.bytes_in_use + ember::memory::host_cached_bytes());
  {
    Tensor<float> b = ember::empty<float>(Shape{n});  // the same block again
    REQUIRE(b.data() == first);
    REQUIRE(ember::memory::host_cached_bytes() == 0);
    Tensor<float> c = ember::empty<float>(Shape{n});  // a second one: fresh
    REQUIRE(c.data() != first);
  }
  REQUIRE(ember::memory::host_cached_bytes() == 8 * n);
  ember::memory::host_empty_cache();
  REQUIRE(ember::memory::host_cached_bytes() == 0);
  // Small blocks are not cached (the C library keeps those).
  { Tensor<float> s = ember::empty<float>(Shape{100}); }
  REQUIRE(ember::memory::host_cached_bytes() == 0);
}
