// embedding on CUDA device 0 against the CPU: the lookup (the same bits), the weight's gradient
// (the same summation order on both devices), its determinism (two backward runs give the same
// bits), launch counts and the range check. Compiled by nvcc for sm_90 in every CUDA build;
// skipped (not failed) when no GPU is present.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"
#include "support/random_tensors.hpp"

using namespace ember;

namespace {
namespace test_ops_embedding_cuda {
const Device kGpu = Device::cuda(0);

Tensor<std::int64_t> rand_ids(const Shape& s, std::int64_t V, std::uint32_t seed) {
  std::mt19937 rng(seed);
  // Skewed: low ids repeat often (as frequent tokens do), some high ids never occur.
  std::geometric_distribution<std::int64_t> d(0.02);
  std::vector<std::int64_t> v(static_cast<std::size_t>(s.numel()));
  for (auto& x : v) x = std::min<std::int64_t>(d(rng), V - 1);
  return from_vector<std::int64_t>(v, s);
}

template <class T>
std::vector<double> values(const Tensor<T>& t) {
  return Tensor<double>(cast<double>(t.to(Device::cpu()))).to_vector();
}

template <class T>
void check_dtype() {
  const std::int64_t V = 1000, D = 96;
  const Tensor<T> w = cast<T>(randn<float>({V, D}, 21));
  const Tensor<std::int64_t> ids = rand_ids(Shape{16, 300}, V, 22);
  const Tensor<T> wg = w.to(kGpu);
  const Tensor<std::int64_t> idg = ids.to(kGpu);
  // The lookup copies rows: the same bits, from a dense or a transposed table.
  const Tensor<T> y = embedding(w, ids);
  std::uint64_t before = launch_count();
  const Tensor<T> yg = embedding(wg, idg);
  CHECK(launch_count() - before == 2);  // one range check, one gather
  CHECK(values(yg) == values(y));
  const Tensor<T> wt = w.to(kGpu).t().contiguous().t();
  CHECK(values(embedding(wt, idg)) == values(y));
  // The gradient: the same order of additions on both devices.
  const Tensor<T> g = cast<T>(randn<float>(y.shape(), 23));
  auto wc = param(w), wv = param(wg);
  embedding(wc, ids).backward(g);
  const Var<T> yv = embedding(wv, idg);
  before = launch_count();
  yv.backward(g.to(kGpu));
  CHECK(launch_count() - before == 5);  // zeros, sort input, CUB's sort, run starts, sums
  const auto gc = values(wc.grad()), gg = values(wv.grad());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < gc.size(); ++i) {
    if (!(std::fabs(gg[i] - gc[i]) <=
          ember::testing::dtype_tolerance<T>() * (1.0 + std::fabs(gc[i]))))
      ++bad;
  }
  CHECK(bad == 0);
  // Same order, same arithmetic: expected bit-identical to the CPU, too.
  CHECK(gg == gc);
  // Determinism: a second backward on the GPU gives the same bits.
  auto wv2 = param(wg);
  embedding(wv2, idg).backward(g.to(kGpu));
  const auto a = wv.grad().to_vector(), b = wv2.grad().to_vector();
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

TEST_CASE("cuda: embedding matches the CPU: float", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<float>();
}
TEST_CASE("cuda: embedding matches the CPU: double", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<double>();
}
TEST_CASE("cuda: embedding matches the CPU: bf16", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<bf16>();
}
TEST_CASE("cuda: embedding matches the CPU: half", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  check_dtype<ember::half>();
}

TEST_CASE("cuda: embedding's backward at scale is deterministic", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  // Many positions per id and a large vocabulary: every run sorts and sums the same way.
  const std::int64_t V = 50000, D = 64;
  const Tensor<std::int64_t> ids = rand_ids(Shape{64, 2048}, V, 31).to(kGpu);
  const Tensor<float> w = randn<float>({V, D}, 32, kGpu);
  const Tensor<float> g = randn<float>({64, 2048, D}, 33, kGpu);
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    auto wv = param(w);
    embedding(wv, ids).backward(g);
    const auto got = wv.grad().to_vector();
    if (run == 0) first = got;
    CHECK(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)) == 0);
  }
  // And against the CPU (the same order of additions).
  auto wc = param(w.to(Device::cpu()));
  embedding(wc, ids.to(Device::cpu())).backward(g.to(Device::cpu()));
  CHECK(wc.grad().to_vector() == first);
}

TEST_CASE("cuda: embedding's edge cases and errors", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> w = randn<float>({7, 5}, 41, kGpu);
  CHECK_THROWS_AS(embedding(w, from_vector<std::int64_t>({0, 7}, Shape{2}, kGpu)), Error);
  CHECK_THROWS_AS(embedding(w, from_vector<std::int64_t>({-2}, Shape{1}, kGpu)), Error);
  CHECK_THROWS_AS(embedding(w, from_vector<std::int64_t>({1}, Shape{1})), Error);  // device
  // No ids: an empty output and an all-zero gradient.
  auto wv = param(w);
  const Var<float> y = embedding(wv, empty<std::int64_t>(Shape{0}, kGpu));
  CHECK(y.shape() == Shape{0, 5});
  y.backward(empty<float>(Shape{0, 5}, kGpu));
  CHECK(wv.grad().to_vector() == std::vector<float>(35, 0.0f));
  // One id: its row gets the sum, the others 0.
  auto wv1 = param(w);
  sum(embedding(wv1, from_vector<std::int64_t>({3, 3, 3}, Shape{3}, kGpu))).backward();
  std::vector<float> want(35, 0.0f);
  for (int d = 0; d < 5; ++d) want[static_cast<std::size_t>(15 + d)] = 3.0f;
  CHECK(wv1.grad().to_vector() == want);
  // padding_idx: that row's gradient is zero on the GPU too.
  auto wv2 = param(w);
  sum(embedding(wv2, from_vector<std::int64_t>({3, 3, 1}, Shape{3}, kGpu), 3)).backward();
  std::vector<float> padded(35, 0.0f);
  for (int d = 0; d < 5; ++d) padded[static_cast<std::size_t>(5 + d)] = 1.0f;
  CHECK(wv2.grad().to_vector() == padded);
}

TEST_CASE("cuda: embedding with max_norm renormalises the rows the CPU does", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const std::int64_t V = 1000, D = 96;
  const Tensor<std::int64_t> ids = rand_ids({8, 64}, V, 41);
  for (const double p : {2.0, 1.0, 3.0}) {
    INFO("norm_type " << p);
    // Rows of norm about sqrt(96) ~ 10 against max_norm 4: every named row is scaled.
    const Tensor<float> wc = randn<float>({V, D}, 42), wg = wc.to(kGpu);
    const Tensor<float> yc = embedding(wc, ids, std::nullopt, 4.0, p);
    const Tensor<float> yg = embedding(wg, ids.to(kGpu), std::nullopt, 4.0, p);
    const std::vector<double> a = values(wg), b = values(wc), ya = values(yg), yb = values(yc);
    for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(std::fabs(a[i] - b[i]) <= 1e-5);
    for (std::size_t i = 0; i < ya.size(); ++i) REQUIRE(std::fabs(ya[i] - yb[i]) <= 1e-5);
  }
}

}  // namespace test_ops_embedding_cuda
}  // namespace
