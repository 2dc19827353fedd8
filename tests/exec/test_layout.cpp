// The index math both executors share: fast division and iteration-space collapsing.
#include <catch2/catch.hpp>

#include <cstdint>
#include <ember/ember.hpp>
#include <ember/exec/fastdiv.hpp>
#include <random>

using namespace ember;
using exec::FastDivmod;

TEST_CASE("fast division equals integer division below 2^31", "[exec][layout]") {
  std::mt19937_64 rng(1234);
  std::vector<std::uint32_t> divisors = {1,
                                         2,
                                         3,
                                         5,
                                         7,
                                         10,
                                         255,
                                         256,
                                         257,
                                         1000,
                                         65535,
                                         65536,
                                         65537,
                                         (1u << 20) + 1,
                                         (1u << 30) - 1,
                                         1u << 30,
                                         (1u << 31) - 1,
                                         1u << 31};
  for (int i = 0; i < 200; ++i)
    divisors.push_back(static_cast<std::uint32_t>(rng() % (1u << 31)) + 1);
  for (std::uint32_t d : divisors) {
    const FastDivmod f(d);
    std::vector<std::uint32_t> ns = {0,     1,         d - 1,          d,
                                     d + 1, 2 * d - 1, (1u << 31) - 1, (1u << 31) - 2};
    for (int k = 0; k < 2000; ++k) ns.push_back(static_cast<std::uint32_t>(rng() % (1u << 31)));
    for (std::uint32_t n : ns) {
      if (n >= (1u << 31)) continue;
      std::uint32_t q, r;
      f.divmod(n, q, r);
      REQUIRE(q == n / d);
      REQUIRE(r == n % d);
    }
  }
}

TEST_CASE("layouts collapse dense dimensions and keep broadcast ones", "[exec][layout]") {
  const Shape shape{4, 5, 6};
  SECTION("all dense: one unit-stride dimension") {
    auto L = exec::make_layout(shape, {contiguous_strides(shape), contiguous_strides(shape)});
    CHECK(L.dense);
    CHECK(L.sizes == Shape{120});
  }
  SECTION("a broadcast row keeps two dimensions") {
    const Strides row = broadcast_strides(Shape{6}, Strides{1}, shape);
    auto L = exec::make_layout(shape, {contiguous_strides(shape), row});
    CHECK_FALSE(L.dense);
    CHECK(L.sizes == Shape{20, 6});
    CHECK(L.arrays[1] == Strides{0, 1});
  }
  SECTION("size-1 dimensions vanish") {
    const Shape s{1, 7, 1};
    auto L = exec::make_layout(s, {contiguous_strides(s)});
    CHECK(L.dense);
    CHECK(L.sizes == Shape{7});
  }
  SECTION("iteration follows the output's memory order") {
    const Shape s{2, 3, 4, 5};
    auto L = exec::make_layout(s, {channels_last_strides(s), contiguous_strides(s)});
    // N outermost, then H and W (merged: dense in both operands), then C: the output is
    // written in memory order and the NCHW input is read with stride 20 along C.
    CHECK(L.sizes == Shape{2, 20, 3});
    CHECK(L.arrays[0] == Strides{60, 3, 1});
    CHECK(L.arrays[1] == Strides{60, 1, 20});
  }
  SECTION("empty") {
    const Shape s{3, 0};
    auto L = exec::make_layout(s, {contiguous_strides(s)});
    CHECK(L.numel == 0);
  }
}

TEST_CASE("the same expression gives the same values through dense and strided paths",
          "[exec][layout]") {
  auto a = randn<float>({37, 53}, 1);
  auto b = randn<float>({53, 37}, 2).t();  // strided view
  Tensor<float> dense = a * 2 + exp(a) - a * a;
  Tensor<float> strided = b * 2 + exp(b) - b * b;
  auto bc = b.contiguous();
  Tensor<float> dense_b = bc * 2 + exp(bc) - bc * bc;
  CHECK(strided.to_vector() == dense_b.to_vector());
  (void)dense;
}
