// softmax and log_softmax: against the textbook definition in float64 over axes, dtypes and
// extreme values; ONNX's reference data; gradcheck; launch counts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <ember/ember.hpp>

#include "support/onnx.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_ops_softmax {

using ember::bf16;
using ember::half;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;

Tensor<double> rand_tensor(const Shape& s, double scale, std::uint32_t seed) {
  return ember::testing::normal_tensor(s, 0, scale, seed);
}

// softmax along `axis` by the definition (max-shifted), in float64; log when `log`.
Tensor<double> naive_softmax(const Tensor<double>& x, int axis, bool log) {
  const Tensor<double> c = x.contiguous();
  const int ax = ember::normalize_axis(axis, x.rank(), "test");
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < ax; ++d) outer *= x.size(d);
  for (int d = ax + 1; d < x.rank(); ++d) inner *= x.size(d);
  const std::int64_t n = x.size(ax);
  auto v = c.to_vector();
  std::vector<double> out(v.size());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      auto at = [&](std::int64_t k) { return static_cast<std::size_t>((o * n + k) * inner + i); };
      double m = -INFINITY;
      for (std::int64_t k = 0; k < n; ++k) m = std::max(m, v[at(k)]);
      double s = 0;
      for (std::int64_t k = 0; k < n; ++k) s += std::exp(v[at(k)] - m);
      for (std::int64_t k = 0; k < n; ++k) {
        out[at(k)] = log ? v[at(k)] - m - std::log(s) : std::exp(v[at(k)] - m) / s;
      }
    }
  }
  return ember::from_vector<double>(out, x.shape());
}

template <class T>
double tolerance() {
  if constexpr (std::is_same_v<T, double>) return 1e-14;
  if constexpr (std::is_same_v<T, float>) return 1e-6;
  if constexpr (std::is_same_v<T, bf16>) return 1.0 / 128;
  return 1.0 / 1024;
}

using ember::testing::require_close;

TEMPLATE_TEST_CASE("softmax and log_softmax against the definition", "[ops][softmax]", float,
                   double, bf16, half) {
  using T = TestType;
  for (const Shape& s : {Shape{7}, Shape{3, 5}, Shape{2, 3, 4}, Shape{1, 1}, Shape{0, 3}}) {
    for (int axis = -s.rank(); axis < s.rank(); ++axis) {
      INFO("shape " << s.str() << " axis " << axis);
      const Tensor<T> x = ember::cast<T>(rand_tensor(s, 3.0, 5));
      const Tensor<double> x64 = ember::cast<double>(x);
      // Results are rounded to T once: a few ulp of T, relative to 1.
      require_close(ember::softmax(x, axis), naive_softmax(x64, axis, false), 2 * tolerance<T>());
      require_close(ember::log_softmax(x, axis), naive_softmax(x64, axis, true),
                    8 * tolerance<T>());
    }
  }
  // Large and -inf inputs: no overflow, no NaN. x - lse loses the ulps of |x| ~ 1000.
  const Tensor<double> big = ember::from_vector<double>({1000, 1001, -INFINITY, 999}, Shape{4});
  require_close(ember::softmax(big, 0), naive_softmax(big, 0, false), 4 * 1000 * 1.2e-16);
}

TEST_CASE("softmax: one launch each way along the last axis, two along another", "[ops][softmax]") {
  for (int axis : {1, 0}) {
    auto x = ember::param(rand_tensor(Shape{64, 33}, 1.0, 7));
    const std::uint64_t l0 = ember::launch_count();
    Var<double> y = ember::softmax(x, axis);
    CHECK(ember::launch_count() - l0 == (axis == 1 ? 1 : 2));
    const Tensor<double> g = rand_tensor(Shape{64, 33}, 1.0, 8);
    const std::uint64_t l1 = ember::launch_count();
    y.backward(g);
    CHECK(ember::launch_count() - l1 == (axis == 1 ? 1 : 2));
  }
}

TEST_CASE("softmax: rows and the reduction path agree, special values included", "[ops][softmax]") {
  const double inf = INFINITY, nan = NAN;
  // Rows: large values, all -inf, a +inf, a NaN, constants.
  const Tensor<double> x = ember::from_vector<double>(
      {1000, 1001, -inf, 999, -inf, -inf, -inf, -inf, inf, 1, 2, 3, nan, 1, 2, 3, 0, 0, 0, 0},
      Shape{5, 4});
  for (bool log : {false, true}) {
    // Along the last axis of a contiguous tensor: rows. The same data transposed: reductions.
    const Tensor<double> rows = log ? ember::log_softmax(x, 1) : ember::softmax(x, 1);
    const Tensor<double> xt = x.transpose(0, 1).contiguous();
    const Tensor<double> reduced =
        (log ? ember::log_softmax(xt, 0) : ember::softmax(xt, 0)).transpose(0, 1).contiguous();
    const std::vector<double> a = rows.to_vector(), b = reduced.to_vector();
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO("log " << log << " element " << i << ": " << a[i] << " vs " << b[i]);
      if (std::isnan(b[i])) {
        CHECK(std::isnan(a[i]));
      } else {
        CHECK(a[i] == Approx(b[i]).epsilon(1e-15).margin(1e-300));
      }
    }
  }
}

TEST_CASE("softmax and log_softmax: ONNX's reference data", "[ops][softmax][onnx]") {
  namespace onnx = ember::testing::onnx;
  if (!onnx::available("test_softmax_axis_0")) {
    WARN("libonnx-testdata is not installed: ONNX reference data not checked");
    return;
  }
  for (const char* prefix : {"test_softmax_", "test_logsoftmax_"}) {
    for (const char* suffix :
         {"axis_0", "axis_1", "axis_2", "default_axis", "large_number", "negative_axis"}) {
      const std::string name = std::string(prefix) + suffix;
      INFO(name);
      const auto t = onnx::read_node_test(name);
      const Tensor<float> x = onnx::to_tensor<float>(t.inputs[0]);
      const Shape s = x.shape();
      const int axis = static_cast<int>(t.attributes.get("axis", -1));
      // x - lse in float loses the ulps of the largest |x| (the large_number case has 10^4).
      double big = 1;
      for (double v : t.inputs[0].values) big = std::max(big, std::fabs(v));
      const Tensor<float> y =
          prefix[5] == 's' ? ember::softmax(x, axis) : ember::log_softmax(x, axis);
      require_close(y, ember::from_vector<double>(t.outputs[0].values, s), 4 * 6e-8 * big);
    }
  }
}

TEST_CASE("gradcheck: softmax and log_softmax over every axis", "[ops][softmax][gradcheck]") {
  const Tensor<double> x = rand_tensor(Shape{2, 3, 4}, 1.0, 9);
  for (int axis = -3; axis < 3; ++axis) {
    for (bool log : {false, true}) {
      auto r = ember::gradcheck(
          [axis, log](const Vars& v) {
            // A strided view in, and more arithmetic after.
            const Var<double> a = v[0].transpose(0, 2).transpose(0, 2);
            Var<double> y = log ? ember::log_softmax(a, axis) : ember::softmax(a, axis);
            return Var<double>(y * y);
          },
          {x});
      INFO("axis " << axis << " log " << log << ": " << r);
      REQUIRE(r);
    }
  }
}

}  // namespace test_ops_softmax
}  // namespace
