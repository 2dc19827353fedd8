// The host allocator: alignment, the counters, the cache of large blocks (reuse of the same
// size, reserved bytes, emptying it), and running out of memory under an address-space limit.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include <ember/ember.hpp>

#include "support/child_process.hpp"

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

TEST_CASE("out of host memory (RLIMIT_AS) is an ember::Error with the bytes asked and the figures",
          "[memory]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  WARN("built with a sanitizer, whose shadow memory needs an unlimited address space: not checked");
#else
  // In a child process: the limit is the child's alone. 0 when the allocation failed as it
  // should.
  const int status = ember::testing::run_in_child([] {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;  // the address space in use now
    const rlim_t in_use = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
    const rlimit limit{in_use + (rlim_t{256} << 20), in_use + (rlim_t{256} << 20)};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) return 3;
    try {
      const Tensor<float> t = ember::empty<float>(Shape{std::int64_t{1} << 29});  // 2 GiB
      return 2;  // allocated past the limit
    } catch (const ember::Error& e) {
      const std::string what = e.what();
      const bool named =
          what.find("out of host memory allocating 2147483648 bytes") != std::string::npos &&
          what.find("in use") != std::string::npos;
      if (!named) std::fprintf(stderr, "unexpected message: %s\n", e.what());
      return named ? 0 : 1;
    }  // another exception type: run_in_child's 98
  });
  REQUIRE(status == 0);
#endif
}
