// sort, argsort and topk (ops/indexing/sort.hpp, autograd/indexing.hpp): against std::stable_sort
// of every line, over element types, dimensions, ties (equal elements keep their order, descending
// too), NaN (largest), -0 and +0 (equal), rank 0 and size 0; the errors; gradcheck.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include <ember/ember.hpp>

#include "support/onnx.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_ops_sort {

using Catch::Matchers::Contains;
using ember::bf16;
using ember::half;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;

/// Values with many ties (a few distinct small integers), different per seed.
template <class T>
Tensor<T> tied(const Shape& s, int seed) {
  std::vector<T> v(static_cast<std::size_t>(s.numel()));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = T(static_cast<float>((static_cast<int>(i) * 5 + seed * 3) % 7 - 3));
  return ember::from_vector<T>(v, s);
}

/// The order torch.sort(stable=True) gives one line: NaN largest, equal elements in position
/// order for both directions.
std::vector<std::int64_t> reference_order(const std::vector<double>& line, bool descending) {
  std::vector<std::int64_t> o(line.size());
  std::iota(o.begin(), o.end(), std::int64_t{0});
  const auto rank = [&](std::int64_t i) {
    const double v = line[static_cast<std::size_t>(i)];
    return std::isnan(v) ? std::numeric_limits<double>::infinity() * 2 : v;  // nan above inf
  };
  std::stable_sort(o.begin(), o.end(), [&](std::int64_t a, std::int64_t b) {
    const double x = rank(a), y = rank(b);
    const bool xn = std::isnan(line[static_cast<std::size_t>(a)]);
    const bool yn = std::isnan(line[static_cast<std::size_t>(b)]);
    if (xn || yn) return descending ? (xn && !yn) : (!xn && yn);
    return descending ? x > y : x < y;
  });
  return o;
}

/// Checks sort(t, d, descending) line by line against reference_order.
template <class T>
void check_sort(const Tensor<T>& t, int d, bool descending) {
  INFO("dim " << d << (descending ? " descending" : " ascending"));
  const auto [values, indices] = ember::sort(t, d, descending);
  REQUIRE(values.shape() == t.shape());
  REQUIRE(indices.shape() == t.shape());
  REQUIRE(ember::argsort(t, d, descending).to_vector() == indices.contiguous().to_vector());
  // Lines along d: move d last.
  std::vector<std::int64_t> order;
  for (int k = 0; k < t.rank(); ++k) {
    if (k != d) order.push_back(k);
  }
  order.push_back(d);
  const ember::Dims perm(order);
  const auto tv = t.permute(perm).contiguous().to_vector();
  const auto vv = values.permute(perm).contiguous().to_vector();
  const auto iv = indices.permute(perm).contiguous().to_vector();
  const std::int64_t n = t.size(d);
  for (std::size_t l = 0; n > 0 && l < tv.size() / static_cast<std::size_t>(n); ++l) {
    std::vector<double> line;
    for (std::int64_t j = 0; j < n; ++j) line.push_back(static_cast<double>(tv[l * n + j]));
    const auto want = reference_order(line, descending);
    for (std::int64_t j = 0; j < n; ++j) {
      REQUIRE(iv[l * n + j] == want[static_cast<std::size_t>(j)]);
      const double got = static_cast<double>(vv[l * n + j]);
      const double w = line[static_cast<std::size_t>(want[static_cast<std::size_t>(j)])];
      REQUIRE(((std::isnan(got) && std::isnan(w)) || got == w));
    }
  }
}

TEMPLATE_TEST_CASE("sort and argsort: stable, both directions, every dimension", "[ops][sort]",
                   float, double, bf16, half, std::int64_t) {
  using T = TestType;
  const Tensor<T> t = tied<T>(Shape{3, 17, 4}, 1);
  for (int d = 0; d < 3; ++d) {
    check_sort(t, d, false);
    check_sort(t, d, true);
  }
  check_sort(tied<T>(Shape{5, 6}, 2).t(), 1, true);  // a strided input
  check_sort(tied<T>(Shape{0, 4}, 1), 1, false);     // no lines
  const auto [v0, i0] = ember::sort(tied<T>(Shape{}, 3));
  REQUIRE(v0.shape() == Shape{});
  REQUIRE(i0.to_vector() == std::vector<std::int64_t>{0});
}

TEST_CASE("sort: NaN is largest, -0 equals +0, infinities in place", "[ops][sort]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const bool desc : {false, true}) {
    check_sort(ember::from_vector<float>({1.f, float(nan), -0.f, float(-inf), 0.f, float(inf),
                                          float(nan), -2.5f, 1e-40f, -1e-40f},
                                         Shape{10}),
               0, desc);
    check_sort(
        ember::from_vector<double>({nan, 3.0, -0.0, 0.0, -inf, 1e-310, -1e-310, inf}, Shape{8}), 0,
        desc);
  }
  const auto [v, i] = ember::sort(ember::from_vector<float>({0.f, -0.f, 0.f}, Shape{3}));
  REQUIRE(i.to_vector() == std::vector<std::int64_t>{0, 1, 2});  // equal: in position order
}

TEMPLATE_TEST_CASE("topk: the k largest or smallest in order, ties to the lower index",
                   "[ops][sort]", float, double, bf16, std::int64_t) {
  using T = TestType;
  const Tensor<T> t = tied<T>(Shape{4, 9}, 2);
  for (const bool largest : {true, false}) {
    for (const std::int64_t k : {0, 1, 4, 9}) {
      const auto [values, indices] = ember::topk(t, k, -1, largest);
      REQUIRE(values.shape() == Shape{4, k});
      const auto [sv, si] = ember::sort(t, 1, largest);
      REQUIRE(indices.to_vector() == si.narrow(1, 0, k).contiguous().to_vector());
      REQUIRE(values.to_vector() == sv.narrow(1, 0, k).contiguous().to_vector());
    }
  }
  const auto [v0, i0] = ember::topk(t, 2, 0);  // along the first dimension
  REQUIRE(i0.shape() == Shape{2, 9});
  REQUIRE_THROWS_WITH(ember::topk(t, 10), Contains("k = 10 for an extent of 9"));
  REQUIRE_THROWS_WITH(ember::sort(t, 2), Contains("sort"));
}

TEST_CASE("gradcheck: sort and topk values", "[ops][sort][gradcheck]") {
  const auto u = [](const Shape& s, std::uint32_t seed) {
    return ember::testing::uniform_tensor(s, -1, 1, seed);
  };
  for (int which = 0; which < 4; ++which) {
    INFO("case " << which);
    auto r = ember::gradcheck(
        [&](const Vars& v) -> Var<double> {
          switch (which) {
            case 0:
              return ember::sin(ember::sort(v[0], 1).values) * v[0];
            case 1:
              return ember::sort(v[0], 0, true).values * ember::cos(v[0]);
            case 2:
              return ember::exp(ember::topk(v[0], 2, 1).values);
            default:
              return ember::topk(v[0], 1, 0, false).values * 3.0;
          }
        },
        {u(Shape{3, 5}, 1)});
    REQUIRE(r.ok);
  }
}

TEST_CASE("ONNX's reference data: TopK", "[ops][sort][onnx]") {
  namespace onnx = ember::testing::onnx;
  if (!onnx::available("test_top_k")) {
    WARN("libonnx-testdata is not installed: ONNX reference data not checked");
    return;
  }
  for (const char* name : {"test_top_k", "test_top_k_negative_axis", "test_top_k_smallest"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    const auto [values, indices] = ember::topk(
        onnx::to_tensor<double>(t.inputs[0]), static_cast<std::int64_t>(t.inputs[1].values.at(0)),
        static_cast<std::int64_t>(t.attributes.get("axis", -1)),
        t.attributes.get("largest", 1) != 0);
    const Tensor<double> want_values = onnx::to_tensor<double>(t.outputs[0]);
    REQUIRE(values.shape() == want_values.shape());
    REQUIRE(values.to_vector() == want_values.to_vector());
    REQUIRE(indices.to_vector() == onnx::to_tensor<std::int64_t>(t.outputs[1]).to_vector());
  }
}

}  // namespace test_ops_sort
}  // namespace
