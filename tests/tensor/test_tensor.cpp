// Tensor handles, factories, views, copies and the errors of bad input.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ember/ember.hpp>
#include <numeric>
#include <vector>

using namespace ember;

namespace {
namespace test_tensor {
std::vector<float> iota(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

TEST_CASE("factories fill shapes with the values asked for", "[tensor]") {
  auto z = zeros<float>({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.numel() == 6);
  CHECK(z.to_vector() == std::vector<float>(6, 0.0f));
  CHECK(ones<double>({4}).to_vector() == std::vector<double>(4, 1.0));
  CHECK(full<std::int32_t>({2, 2}, 7).to_vector() == std::vector<std::int32_t>(4, 7));
  CHECK(full<bf16>({3}, 1.5).to_vector()[2] == bf16(1.5f));

  CHECK(arange<float>(5).to_vector() == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(arange<std::int64_t>(2, 11, 3).to_vector() == std::vector<std::int64_t>{2, 5, 8});
  CHECK(arange<float>(1, 0, -0.25).to_vector() == std::vector<float>{1, 0.75f, 0.5f, 0.25f});
  CHECK(arange<float>(3, 3).numel() == 0);

  const auto ls = linspace<double>(-1, 1, 5).to_vector();
  CHECK(ls == std::vector<double>{-1, -0.5, 0, 0.5, 1});
  CHECK(linspace<float>(0, 1, 1).to_vector() == std::vector<float>{0});
  CHECK(linspace<float>(0, 1, 0).numel() == 0);

  auto s = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(s.shape() == Shape{2, 3});
  CHECK(from_vector<float>({42}, Shape{}).item() == 42.0f);
  CHECK(from_vector<float>({42}, Shape{}).rank() == 0);
}

TEST_CASE("from_blob wraps caller memory without copying", "[tensor]") {
  std::vector<float> mem = iota(6);
  bool released = false;
  {
    auto t = from_blob(mem.data(), {2, 3}, Device::cpu(), [&](void*) { released = true; });
    t += 1;
    CHECK(mem[5] == 6.0f);
    auto tt = from_blob(mem.data(), {3, 2}, Strides{1, 3}, Device::cpu());
    CHECK(tt.contiguous().to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});
  }
  CHECK(released);
}

TEST_CASE("rand and randn are reproducible from the seed and have the right moments", "[tensor]") {
  auto a = rand<float>({1000}, 7).to_vector();
  auto b = rand<float>({1000}, 7).to_vector();
  auto c = rand<float>({1000}, 8).to_vector();
  CHECK(a == b);
  CHECK(a != c);
  for (float v : a) REQUIRE((v >= 0.0f && v < 1.0f));
  // The first elements of a larger draw are the same: values depend on the index only.
  auto longer = rand<float>({2000}, 7).to_vector();
  CHECK(std::equal(a.begin(), a.end(), longer.begin()));

  const std::int64_t n = 1 << 18;
  auto g = randn<double>({n}, 3).to_vector();
  double mean = 0, m2 = 0;
  for (double v : g) mean += v;
  mean /= double(n);
  for (double v : g) m2 += (v - mean) * (v - mean);
  const double variance = m2 / double(n - 1);
  // Standard errors: mean 1/sqrt(n) ~ 0.002, variance sqrt(2/n) ~ 0.0028; allow 6 sigma.
  CHECK(std::abs(mean) < 6.0 / std::sqrt(double(n)));
  CHECK(std::abs(variance - 1.0) < 6.0 * std::sqrt(2.0 / double(n)));

  auto u = rand<float>({4, 4}, 1, Device::cpu(), -2.0, 3.0).to_vector();
  for (float v : u) REQUIRE((v >= -2.0f && v < 3.0f));
}

TEST_CASE("rand and randn give Philox's element-by-element values however they are evaluated",
          "[tensor]") {
  // Dense runs take whole Philox blocks at once; the values must be those of drawing each
  // element alone: every length around the block and vector sizes, an offset, a strided output.
  const auto bits = [](float v) { return std::bit_cast<std::uint32_t>(v); };
  for (std::int64_t n = 0; n <= 37; ++n) {
    INFO("n = " << n);
    const std::vector<float> u = rand<float>({n}, 11, Device::cpu(), -2.0, 3.0, 5).to_vector();
    const std::vector<float> z = randn<float>({n}, 12, Device::cpu(), 0.5, 2.0, 6).to_vector();
    for (std::int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::uint64_t>(i);
      REQUIRE(bits(u[static_cast<std::size_t>(i)]) ==
              bits(std::fma(5.0f, philox_uniform(11, 5, k), -2.0f)));
      REQUIRE(bits(z[static_cast<std::size_t>(i)]) ==
              bits(std::fma(2.0f, philox_normal(12, 6, k), 0.5f)));
    }
  }
  // Into a transposed view: element (i, j) of the view is draw number i * 5 + j.
  Tensor<float> out = empty<float>({5, 9});
  Tensor<float> view = out.transpose(0, 1);  // [9, 5], strides (1, 9)
  view = expr::Generated<float, expr::NormalGen>(view.shape(), Device::cpu(), {13, 0, 0.0f, 1.0f});
  for (std::int64_t i = 0; i < 9; ++i) {
    for (std::int64_t j = 0; j < 5; ++j) {
      REQUIRE(bits(out.data()[j * 9 + i]) ==
              bits(philox_normal(13, 0, static_cast<std::uint64_t>(i * 5 + j))));
    }
  }
}

TEST_CASE("views share memory and index like PyTorch", "[tensor][views]") {
  auto t = from_vector<float>(iota(24), {2, 3, 4});

  SECTION("reshape and view") {
    auto r = t.reshape({4, -1});
    CHECK(r.shape() == Shape{4, 6});
    CHECK(r.storage() == t.storage());
    CHECK(t.view({24}).to_vector() == iota(24));
    // A transposed tensor cannot be viewed flat, but reshape copies.
    auto tr = t.transpose(1, 2);
    CHECK_THROWS_AS(tr.view({24}), Error);
    auto flat = tr.reshape({24});
    CHECK(flat.storage() != t.storage());
    CHECK(flat.to_vector()[1] == 4.0f);
    // Splitting a dimension of a permuted tensor is still a view.
    auto p = t.permute({1, 0, 2});  // [3, 2, 4]
    CHECK(p.reshape({3, 2, 2, 2}).storage() == t.storage());
    CHECK(p.reshape({3, 2, 2, 2}).contiguous().to_vector() == p.contiguous().to_vector());
    CHECK_THROWS_WITH(t.reshape({5, 5}), Catch::Contains("24 elements"));
    CHECK_THROWS_AS(t.reshape({-1, -1}), Error);
  }

  SECTION("permute and transpose") {
    auto p = t.permute({2, 0, 1});
    CHECK(p.shape() == Shape{4, 2, 3});
    CHECK(p.strides() == Strides{1, 12, 4});
    CHECK(p.contiguous().to_vector()[1] == 4.0f);
    CHECK(transpose(t, 0, -1).shape() == Shape{4, 3, 2});
    CHECK_THROWS_AS(t.permute({0, 0, 1}), Error);
    CHECK_THROWS_AS(t.permute({0, 1}), Error);
    CHECK_THROWS_AS(t.transpose(0, 3), Error);
  }

  SECTION("slice, narrow, select") {
    auto s = t.slice(2, 1, 4, 2);  // elements 1 and 3 of the last axis
    CHECK(s.shape() == Shape{2, 3, 2});
    CHECK(s.contiguous().to_vector() ==
          std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23});
    CHECK(t.slice(1, -2, 3).shape() == Shape{2, 2, 4});
    CHECK(t.slice(0, 1, 1).numel() == 0);
    CHECK(t.narrow(1, 1, 2).contiguous().to_vector()[0] == 4.0f);
    CHECK(t.select(0, 1).shape() == Shape{3, 4});
    CHECK(t.select(0, -1).contiguous().to_vector()[0] == 12.0f);
    CHECK_THROWS_AS(t.slice(2, 0, 5), Error);
    CHECK_THROWS_AS(t.slice(2, 0, 2, 0), Error);
    CHECK_THROWS_AS(t.narrow(0, 1, 2), Error);
    CHECK_THROWS_AS(t.select(1, 3), Error);
    // A view of a view.
    auto ss = s.slice(1, 1, 3).select(2, 1);
    CHECK(ss.contiguous().to_vector() == std::vector<float>{7, 11, 19, 23});
  }

  SECTION("squeeze, unsqueeze, expand") {
    auto u = t.unsqueeze(0).unsqueeze(-1);
    CHECK(u.shape() == Shape{1, 2, 3, 4, 1});
    CHECK(u.squeeze().shape() == t.shape());
    CHECK(u.squeeze(0).shape() == Shape{2, 3, 4, 1});
    CHECK_THROWS_AS(u.squeeze(1), Error);
    auto row = from_vector<float>({1, 2, 3}, {3});
    auto e = row.expand({2, 3});
    CHECK(e.strides() == Strides{0, 1});
    CHECK(e.contiguous().to_vector() == std::vector<float>{1, 2, 3, 1, 2, 3});
    CHECK(row.unsqueeze(1).expand({-1, 4}).shape() == Shape{3, 4});
    CHECK_THROWS_AS(row.expand({2, 4}), Error);
    CHECK(row.broadcast_to(Shape{5, 3}).shape() == Shape{5, 3});
  }

  SECTION("channels_last") {
    auto x = from_vector<float>(iota(24), {1, 2, 3, 4});
    auto cl = x.contiguous(MemoryFormat::channels_last);
    CHECK(cl.is_contiguous(MemoryFormat::channels_last));
    CHECK_FALSE(cl.is_contiguous());
    CHECK(cl.strides() == Strides{24, 1, 8, 2});
    // Same logical values, NHWC in memory.
    CHECK(cl.to_vector() == x.to_vector());
    std::vector<float> raw(24);
    std::memcpy(raw.data(), cl.data(), sizeof(float) * 24);
    CHECK(raw[1] == 12.0f);  // (n=0, h=0, w=0, c=1)
    CHECK_THROWS_AS(t.contiguous(MemoryFormat::channels_last), Error);
    CHECK(cl.memory_format() == MemoryFormat::channels_last);
    CHECK(x.memory_format() == MemoryFormat::contiguous);
  }

  SECTION("one channel: dense in both layouts, the strides name which") {
    auto x = from_vector<float>(iota(12), {1, 1, 3, 4});
    CHECK(x.is_contiguous(MemoryFormat::channels_last));
    CHECK(x.memory_format() == MemoryFormat::contiguous);
    // contiguous(channels_last) restrides the same memory: no copy, channels-last from then on.
    auto cl = x.contiguous(MemoryFormat::channels_last);
    CHECK(cl.data() == x.data());
    CHECK(cl.strides() == Strides{12, 1, 4, 1});
    CHECK(cl.memory_format() == MemoryFormat::channels_last);
    CHECK(cl.is_contiguous());
    CHECK(empty<float>(Shape{2, 1, 3, 4}, Device::cpu(), MemoryFormat::channels_last)
              .memory_format() == MemoryFormat::channels_last);
    // And back: contiguous() names NCHW again, still without a copy.
    auto back = cl.contiguous();
    CHECK(back.data() == x.data());
    CHECK(back.memory_format() == MemoryFormat::contiguous);
    // One element per image and channel: both layouts' strides are the same, NCHW by default.
    CHECK(empty<float>(Shape{3, 1, 1, 1}, Device::cpu(), MemoryFormat::channels_last)
              .memory_format() == MemoryFormat::contiguous);
  }
}

TEST_CASE("is_dense_like: one dense layout, whichever order its dims lie in", "[tensor][views]") {
  const auto x = empty<float>(Shape{2, 5, 3, 4});  // [B, L, H, E]
  const auto heads = x.transpose(1, 2);            // [B, H, L, E], heads after rows
  CHECK(x.is_dense_like(x));
  CHECK(heads.is_dense_like(heads));
  CHECK(empty<float>(Shape{2, 5, 3, 4}).transpose(1, 2).is_dense_like(heads));
  CHECK_FALSE(empty<float>(Shape{2, 3, 5, 4}).is_dense_like(heads));  // dense, another layout
  CHECK_FALSE(heads.is_dense_like(empty<float>(Shape{2, 3, 5, 4})));
  // A slice is not dense, nor is anything laid out like it.
  const auto part = empty<float>(Shape{2, 5, 3, 3, 4}).select(2, 0).transpose(1, 2);
  CHECK_FALSE(heads.is_dense_like(part));
  CHECK_FALSE(part.is_dense_like(part));
  // Channels-last images; unit dimensions' strides do not matter.
  const auto nhwc = empty<float>(Shape{2, 3, 4, 5}, Device::cpu(), MemoryFormat::channels_last);
  CHECK(empty<float>(Shape{2, 3, 4, 5}, Device::cpu(), MemoryFormat::channels_last)
            .is_dense_like(nhwc));
  CHECK(empty<float>(Shape{1, 3, 1, 5}).is_dense_like(empty<float>(Shape{1, 3, 1, 5})));
  CHECK_FALSE(empty<float>(Shape{2, 3}).is_dense_like(empty<float>(Shape{3, 2})));
}

TEST_CASE("copies: clone, to, copy_, to_vector of views", "[tensor]") {
  auto a = from_vector<float>(iota(6), {2, 3});
  auto b = a.clone();
  b += 1;
  CHECK(a.to_vector()[0] == 0.0f);
  CHECK(b.to_vector()[0] == 1.0f);
  CHECK(a.to(Device::cpu()).storage() == a.storage());
  auto c = zeros<double>({3, 2});
  c.copy_(a.t());
  CHECK(c.to_vector() == std::vector<double>{0, 3, 1, 4, 2, 5});
  auto d = zeros<float>({2, 3});
  d.copy_(from_vector<float>({9, 8, 7}, {3}));  // broadcast
  CHECK(d.to_vector() == std::vector<float>{9, 8, 7, 9, 8, 7});
}

TEST_CASE("handles are refcounted: expressions outlive their tensors", "[tensor]") {
  auto make = [] {
    auto a = from_vector<float>({1, 2, 3}, {3});
    auto b = from_vector<float>({4, 5, 6}, {3});
    return a * b + 1;  // a and b go out of scope here
  };
  auto e = make();
  Tensor<float> y = e;
  CHECK(y.to_vector() == std::vector<float>{5, 11, 19});
}

TEST_CASE("memory stats count bytes and return to baseline", "[tensor][memory]") {
  const auto before = memory_stats(Device::cpu());
  {
    auto t = empty<float>({1024});
    const auto during = memory_stats(Device::cpu());
    CHECK(during.bytes_in_use - before.bytes_in_use == 4096);
    CHECK(during.allocations == before.allocations + 1);
    CHECK(during.peak_bytes_in_use >= during.bytes_in_use);
  }
  const auto after = memory_stats(Device::cpu());
  CHECK(after.bytes_in_use == before.bytes_in_use);
  CHECK(after.active_allocations == before.active_allocations);
}

TEST_CASE("bad input throws ember::Error with the cause", "[tensor][errors]") {
  auto a = zeros<float>({2, 3});
  auto b = zeros<float>({4});
  CHECK_THROWS_WITH(a + b,
                    Catch::Contains("[2, 3]") && Catch::Contains("[4]") && Catch::Contains("add"));
  CHECK_THROWS_WITH(Tensor<float>(zeros<float>({2}) * zeros<float>({3})), Catch::Contains("mul"));
  auto y = zeros<float>({3, 2});
  CHECK_THROWS_WITH(y = a + 1, Catch::Contains("cannot be written"));
  CHECK_THROWS_AS(from_vector<float>({1, 2, 3}, {2, 2}), Error);
  CHECK_THROWS_AS(a.size(2), Error);
  CHECK_THROWS_AS(sum(a, {2}), Error);
  CHECK_THROWS_AS(sum(a, {1, 1}), Error);
  CHECK_THROWS_AS(empty<float>({-1}), Error);
  CHECK_THROWS_AS(Tensor<float>().to_vector(), Error);
  CHECK_THROWS_AS(Shape({1, 2, 3, 4, 5, 6, 7, 8, 9}), Error);
  // Without a GPU (or without CUDA support) asking for one says so.
  if (!cuda::available()) {
    CHECK_THROWS_WITH(zeros<float>({2}, Device::cuda(0)), Catch::Contains("CUDA"));
    CHECK_THROWS_AS(a.to(Device::cuda(0)), Error);
  }
}

TEST_CASE("writing through a broadcast view is refused", "[tensor][errors]") {
  auto row = zeros<float>({3});
  auto wide = row.expand({4, 3});
  CHECK_THROWS_WITH(wide = ones<float>({4, 3}) * 2, Catch::Contains("broadcast view"));
  CHECK(row.to_vector() == std::vector<float>{0, 0, 0});
}

}  // namespace test_tensor
}  // namespace
