// scaled_dot_product_attention: against a naive float64 attention (loops over the definition)
// with causal and boolean masks, an explicit scale, dropout (its mask is rand's stream), batch
// broadcasting and the four dtypes; fully masked rows; gradcheck; errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <ember/ember.hpp>

#include "support/random_tensors.hpp"

namespace {
namespace test_ops_attention {

using ember::AttentionOptions;
using ember::bf16;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;

Tensor<double> rand_tensor(const Shape& s, std::uint32_t seed) {
  return ember::testing::normal_tensor(s, 0, 1, seed);
}

// One batch of [Lq, E] x [Lk, E] x [Lk, Ev], keep[Lq * Lk] (and the dropout draws u).
Tensor<double> naive_attention(const Tensor<double>& q, const Tensor<double>& k,
                               const Tensor<double>& v, const std::vector<bool>& keep,
                               const AttentionOptions& o, const std::vector<float>& u) {
  const std::int64_t B = q.size(0), Lq = q.size(1), E = q.size(2), Lk = k.size(1), Ev = v.size(2);
  const auto qv = q.to_vector(), kv = k.to_vector(), vv = v.to_vector();
  const double scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(E)));
  std::vector<double> out(static_cast<std::size_t>(B * Lq * Ev), 0.0);
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t i = 0; i < Lq; ++i) {
      std::vector<double> s(static_cast<std::size_t>(Lk), -INFINITY);
      double m = -INFINITY;
      for (std::int64_t j = 0; j < Lk; ++j) {
        const bool ok =
            keep[static_cast<std::size_t>(i * Lk + j)] && (!o.causal || j <= i + Lk - Lq);
        if (!ok) continue;
        double d = 0;
        for (std::int64_t e = 0; e < E; ++e) {
          d += qv[static_cast<std::size_t>((b * Lq + i) * E + e)] *
               kv[static_cast<std::size_t>((b * Lk + j) * E + e)];
        }
        s[static_cast<std::size_t>(j)] = d * scale;
        m = std::max(m, d * scale);
      }
      double z = 0;
      for (double x : s) z += std::isinf(x) ? 0.0 : std::exp(x - m);
      for (std::int64_t j = 0; j < Lk; ++j) {
        double p = std::isinf(s[static_cast<std::size_t>(j)])
                       ? 0.0
                       : std::exp(s[static_cast<std::size_t>(j)] - m) / z;
        if (o.dropout_p > 0) {
          const float draw = u[static_cast<std::size_t>((b * Lq + i) * Lk + j)];
          p = draw >= o.dropout_p ? p / (1 - o.dropout_p) : 0.0;
        }
        for (std::int64_t e = 0; e < Ev; ++e) {
          out[static_cast<std::size_t>((b * Lq + i) * Ev + e)] +=
              p * vv[static_cast<std::size_t>((b * Lk + j) * Ev + e)];
        }
      }
    }
  }
  return ember::from_vector<double>(out, Shape{B, Lq, Ev});
}

using ember::testing::require_close;

TEMPLATE_TEST_CASE("scaled_dot_product_attention against the definition", "[ops][attention]", float,
                   double, bf16) {
  using T = TestType;
  const double tol = std::is_same_v<T, double> ? 1e-12 : std::is_same_v<T, float> ? 1e-5 : 1.0 / 16;
  const Tensor<T> q = ember::cast<T>(rand_tensor(Shape{2, 5, 8}, 1));
  const Tensor<T> k = ember::cast<T>(rand_tensor(Shape{2, 7, 8}, 2));
  const Tensor<T> v = ember::cast<T>(rand_tensor(Shape{2, 7, 3}, 3));
  const Tensor<double> q64 = ember::cast<double>(q), k64 = ember::cast<double>(k),
                       v64 = ember::cast<double>(v);
  const std::vector<bool> all(5 * 7, true);
  std::vector<bool> some(5 * 7);
  for (std::size_t i = 0; i < some.size(); ++i) some[i] = (i * 7 + 3) % 5 != 0;
  const Tensor<bool> some_mask = ember::from_vector<bool>(some, Shape{5, 7});
  for (bool causal : {false, true}) {
    for (double p : {0.0, 0.25}) {
      INFO("causal " << causal << " dropout " << p);
      AttentionOptions o;
      o.causal = causal;
      o.dropout_p = p;
      o.seed = 17;
      o.offset = 4;
      const auto u =
          ember::rand<float>(Shape{2, 5, 7}, 17, ember::Device::cpu(), 0.0, 1.0, 4).to_vector();
      require_close(ember::scaled_dot_product_attention(q, k, v, {}, o),
                    naive_attention(q64, k64, v64, all, o, u), tol);
      require_close(ember::scaled_dot_product_attention(q, k, v, some_mask, o),
                    naive_attention(q64, k64, v64, some, o, u), tol);
      o.scale = 0.3;
      require_close(ember::scaled_dot_product_attention(q, k, v, {}, o),
                    naive_attention(q64, k64, v64, all, o, u), tol);
    }
  }
}

TEST_CASE("scaled_dot_product_attention: heads share k and v by broadcasting; masked rows are 0",
          "[ops][attention]") {
  const Tensor<double> q = rand_tensor(Shape{2, 3, 4, 8}, 5);  // [batch, heads, Lq, E]
  const Tensor<double> k = rand_tensor(Shape{2, 1, 6, 8}, 6), v = rand_tensor(Shape{2, 1, 6, 5}, 7);
  const Tensor<double> out = ember::scaled_dot_product_attention(q, k, v);
  REQUIRE(out.shape() == Shape{2, 3, 4, 5});
  const Tensor<double> one =
      ember::scaled_dot_product_attention(q.select(1, 2), k.select(1, 0), v.select(1, 0));
  require_close(out.select(1, 2).contiguous(), one, 1e-13);
  // A query row with every key masked out attends to nothing: zeros, not NaN.
  std::vector<bool> m(4 * 6, true);
  for (int j = 0; j < 6; ++j) m[static_cast<std::size_t>(6 + j)] = false;  // row 1
  const auto r =
      ember::scaled_dot_product_attention(q, k, v, ember::from_vector<bool>(m, Shape{4, 6}))
          .select(2, 1)
          .contiguous()
          .to_vector();
  for (double x : r) REQUIRE(x == 0.0);
  REQUIRE_THROWS_AS(ember::scaled_dot_product_attention(q, rand_tensor(Shape{2, 1, 6, 7}, 8), v),
                    ember::Error);
  AttentionOptions bad;
  bad.dropout_p = 1.0;
  REQUIRE_THROWS_AS(ember::scaled_dot_product_attention(q, k, v, {}, bad), ember::Error);
}

TEST_CASE("gradcheck: scaled_dot_product_attention", "[ops][attention][gradcheck]") {
  const Tensor<double> q = rand_tensor(Shape{2, 3, 4}, 11), k = rand_tensor(Shape{2, 5, 4}, 12),
                       v = rand_tensor(Shape{2, 5, 3}, 13);
  const Tensor<bool> mask = ember::from_vector<bool>({true, false, true, true, true}, Shape{5});
  for (bool causal : {false, true}) {
    for (double p : {0.0, 0.3}) {
      AttentionOptions o;
      o.causal = causal;
      o.dropout_p = p;
      o.seed = 3;
      auto r = ember::gradcheck(
          [&](const Vars& x) {
            return ember::scaled_dot_product_attention(x[0], x[1], x[2], mask, o);
          },
          {q, k, v});
      INFO("causal " << causal << " dropout " << p << ": " << r);
      REQUIRE(r);
    }
  }
  // Heads broadcast over a shared k and v (their gradients summed over the heads).
  auto r2 = ember::gradcheck(
      [](const Vars& x) { return ember::scaled_dot_product_attention(x[0], x[1], x[2]); },
      {rand_tensor(Shape{2, 2, 3, 4}, 14), rand_tensor(Shape{2, 1, 5, 4}, 15),
       rand_tensor(Shape{2, 1, 5, 3}, 16)});
  INFO(r2);
  REQUIRE(r2);
}

}  // namespace test_ops_attention
}  // namespace
