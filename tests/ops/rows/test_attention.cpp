// scaled_dot_product_attention, both kernels (flash and scores): against a naive float64
// attention (loops over the definition) with causal and boolean masks, an explicit scale, dropout
// (its mask is rand's stream), batch broadcasting and the four dtypes; fully masked rows;
// gradcheck; errors. The flash kernel against the float64 scores kernel over tiles with tails,
// every mask kind, strided operands and dropout; its memory without the score matrix.
#include <omp.h>
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

using ember::AttentionKernel;
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
  // Causal: key j for query i when j <= i (PyTorch's is_causal), or j <= i + Lk - Lq.
  const std::int64_t shift = o.causal_align == ember::CausalAlign::lower_right ? Lk - Lq : 0;
  std::vector<double> out(static_cast<std::size_t>(B * Lq * Ev), 0.0);
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t i = 0; i < Lq; ++i) {
      std::vector<double> s(static_cast<std::size_t>(Lk), -INFINITY);
      double m = -INFINITY;
      for (std::int64_t j = 0; j < Lk; ++j) {
        const bool ok = keep[static_cast<std::size_t>(i * Lk + j)] && (!o.causal || j <= i + shift);
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
  const AttentionKernel kernel = GENERATE(AttentionKernel::flash, AttentionKernel::scores);
  INFO("kernel " << (kernel == AttentionKernel::flash ? "flash" : "scores"));
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
  const auto align = GENERATE(ember::CausalAlign::upper_left, ember::CausalAlign::lower_right);
  INFO("causal alignment " << (align == ember::CausalAlign::upper_left ? "upper left"
                                                                       : "lower right"));
  for (bool causal : {false, true}) {
    for (double p : {0.0, 0.25}) {
      INFO("causal " << causal << " dropout " << p);
      AttentionOptions o;
      o.kernel = kernel;
      o.causal = causal;
      o.causal_align = align;
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
  const AttentionKernel kernel = GENERATE(AttentionKernel::flash, AttentionKernel::scores);
  AttentionOptions opt;
  opt.kernel = kernel;
  const Tensor<double> q = rand_tensor(Shape{2, 3, 4, 8}, 5);  // [batch, heads, Lq, E]
  const Tensor<double> k = rand_tensor(Shape{2, 1, 6, 8}, 6), v = rand_tensor(Shape{2, 1, 6, 5}, 7);
  const Tensor<double> out = ember::scaled_dot_product_attention(q, k, v, {}, opt);
  REQUIRE(out.shape() == Shape{2, 3, 4, 5});
  const Tensor<double> one =
      ember::scaled_dot_product_attention(q.select(1, 2), k.select(1, 0), v.select(1, 0), {}, opt);
  require_close(out.select(1, 2).contiguous(), one, 1e-13);
  // A query row with every key masked out attends to nothing: zeros, not NaN.
  std::vector<bool> m(4 * 6, true);
  for (int j = 0; j < 6; ++j) m[static_cast<std::size_t>(6 + j)] = false;  // row 1
  const auto r =
      ember::scaled_dot_product_attention(q, k, v, ember::from_vector<bool>(m, Shape{4, 6}), opt)
          .select(2, 1)
          .contiguous()
          .to_vector();
  for (double x : r) REQUIRE(x == 0.0);
  REQUIRE_THROWS_AS(
      ember::scaled_dot_product_attention(q, rand_tensor(Shape{2, 1, 6, 7}, 8), v, {}, opt),
      ember::Error);
  // A mask that broadcasts to no score matrix of these shapes.
  REQUIRE_THROWS_AS(
      ember::scaled_dot_product_attention(
          q, k, v, ember::from_vector<bool>(std::vector<bool>(5, true), Shape{5}), opt),
      ember::Error);
  AttentionOptions bad = opt;
  bad.dropout_p = 1.0;
  REQUIRE_THROWS_AS(ember::scaled_dot_product_attention(q, k, v, {}, bad), ember::Error);
}

TEST_CASE("gradcheck: scaled_dot_product_attention", "[ops][attention][gradcheck]") {
  const AttentionKernel kernel = GENERATE(AttentionKernel::flash, AttentionKernel::scores);
  INFO("kernel " << (kernel == AttentionKernel::flash ? "flash" : "scores"));
  const Tensor<double> q = rand_tensor(Shape{2, 3, 4}, 11), k = rand_tensor(Shape{2, 5, 4}, 12),
                       v = rand_tensor(Shape{2, 5, 3}, 13);
  const Tensor<bool> mask = ember::from_vector<bool>({true, false, true, true, true}, Shape{5});
  for (bool causal : {false, true}) {
    for (double p : {0.0, 0.3}) {
      AttentionOptions o;
      o.kernel = kernel;
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
  AttentionOptions o;
  o.kernel = kernel;
  auto r2 = ember::gradcheck(
      [&](const Vars& x) { return ember::scaled_dot_product_attention(x[0], x[1], x[2], {}, o); },
      {rand_tensor(Shape{2, 2, 3, 4}, 14), rand_tensor(Shape{2, 1, 5, 4}, 15),
       rand_tensor(Shape{2, 1, 5, 3}, 16)});
  INFO(r2);
  REQUIRE(r2);
}

// The output and the three gradients of attention on inputs cast to T, with gradient g.
template <class T>
std::vector<Tensor<T>> attention_with_grads(const Tensor<double>& q, const Tensor<double>& k,
                                            const Tensor<double>& v, const Tensor<double>& g,
                                            const Tensor<bool>& mask, const AttentionOptions& o) {
  Var<T> qv = ember::param(Tensor<T>(ember::cast<T>(q))),
         kv = ember::param(Tensor<T>(ember::cast<T>(k))),
         vv = ember::param(Tensor<T>(ember::cast<T>(v)));
  Var<T> out = ember::scaled_dot_product_attention(qv, kv, vv, mask, o);
  out.backward(Tensor<T>(ember::cast<T>(g)));
  return {out.value(), qv.grad(), kv.grad(), vv.grad()};
}

TEMPLATE_TEST_CASE("flash attention against the float64 scores kernel: tails, masks, strides",
                   "[ops][attention]", float, double, bf16, ember::half) {
  using T = TestType;
  // A few roundings to T (the output, the gradients, D = rowsum(dout o out) from the rounded
  // output); float and double accumulate 70-150 terms.
  const double tol = std::is_same_v<T, double>  ? 1e-12
                     : std::is_same_v<T, float> ? 1e-5
                                                : 4 * ember::testing::dtype_tolerance<T>();
  struct Case {
    const char* name;
    Shape q, k, v;
    Tensor<bool> mask;
    bool causal;
    double dropout;
    ember::CausalAlign align = ember::CausalAlign::upper_left;
  };
  const std::int64_t B = 2, H = 3, E = 16, Ev = 24;
  std::vector<bool> some(static_cast<std::size_t>(H * 70 * 150));
  for (std::size_t i = 0; i < some.size(); ++i) some[i] = (i * 7 + 3) % 5 != 0;
  for (std::size_t j = 0; j < 150; ++j) some[5 * 150 + j] = false;  // query 5 of head 0: nothing
  std::vector<bool> padding(static_cast<std::size_t>(B * 150), true);
  for (std::size_t j = 100; j < 150; ++j) padding[j] = false;  // entry 0: 50 padding keys
  const Tensor<bool> some_mask = ember::from_vector<bool>(some, Shape{H, 70, 150});
  const Tensor<bool> key_padding = ember::from_vector<bool>(padding, Shape{B, 1, 1, 150});
  const std::vector<Case> cases = {
      {"no mask", {B, H, 70, E}, {B, H, 150, E}, {B, H, 150, Ev}, {}, false, 0},
      {"causal, fewer queries", {B, H, 37, E}, {B, H, 150, E}, {B, H, 150, Ev}, {}, true, 0},
      {"causal, more queries", {B, H, 150, E}, {B, H, 37, E}, {B, H, 37, Ev}, {}, true, 0},
      {"causal lower right, fewer queries",
       {B, H, 37, E},
       {B, H, 150, E},
       {B, H, 150, Ev},
       {},
       true,
       0,
       ember::CausalAlign::lower_right},
      {"causal lower right, more queries",
       {B, H, 150, E},
       {B, H, 37, E},
       {B, H, 37, Ev},
       {},
       true,
       0,
       ember::CausalAlign::lower_right},
      {"key padding", {B, H, 70, E}, {B, H, 150, E}, {B, H, 150, Ev}, key_padding, false, 0},
      {"a full mask over heads",
       {B, H, 70, E},
       {B, H, 150, E},
       {B, H, 150, Ev},
       some_mask,
       false,
       0},
      {"heads share k and v", {B, H, 70, E}, {B, 1, 150, E}, {150, Ev}, key_padding, true, 0},
      {"dropout", {B, H, 70, E}, {B, H, 150, E}, {B, H, 150, Ev}, some_mask, true, 0.2},
      // Head sizes that are multiples of 32: bf16 runs on AMX or AVX512-BF16 where the CPU has it.
      {"d 64, causal, dropout", {B, H, 70, 64}, {B, H, 300, 64}, {B, H, 300, 32}, {}, true, 0.2},
      {"d 64, a full mask", {B, H, 70, 64}, {B, H, 150, 64}, {B, H, 150, 64}, some_mask, false, 0},
  };
  const char* products[] = {"the float tile kernel", "AMX", "AVX512-BF16"};
  INFO("bf16 products: " << products[static_cast<int>(ember::ops::flash_bf16_products())]);
  for (const Case& c : cases) {
    INFO(c.name);
    const Tensor<double> q = rand_tensor(c.q, 21), k = rand_tensor(c.k, 22),
                         v = rand_tensor(c.v, 23);
    AttentionOptions o;
    o.causal = c.causal;
    o.causal_align = c.align;
    o.dropout_p = c.dropout;
    o.seed = 9;
    o.offset = 12;
    o.kernel = AttentionKernel::scores;
    const Tensor<double> out64 = ember::scaled_dot_product_attention(q, k, v, c.mask, o);
    const Tensor<double> g = rand_tensor(out64.shape(), 24);
    // The reference sees the inputs T holds.
    auto widened = [](const Tensor<double>& x) {
      return Tensor<double>(ember::cast<double>(Tensor<T>(ember::cast<T>(x))));
    };
    const auto want =
        attention_with_grads<double>(widened(q), widened(k), widened(v), widened(g), c.mask, o);
    o.kernel = AttentionKernel::flash;
    const auto got = attention_with_grads<T>(q, k, v, g, c.mask, o);
    const char* what[] = {"output", "dq", "dk", "dv"};
    for (std::size_t i = 0; i < want.size(); ++i) {
      INFO(what[i]);
      require_close(got[i], want[i], tol);
    }
  }
  // q, k and v as the strided views of one projection [B, L, 3, H, E] (rows 3 H E apart), and a
  // k whose last dim is strided (a transpose).
  const Tensor<double> qkv = rand_tensor(Shape{B, 70, 3, H, E}, 25);
  const Tensor<double> q = qkv.select(2, 0).transpose(1, 2), v = qkv.select(2, 2).transpose(1, 2);
  const Tensor<double> k = rand_tensor(Shape{B, H, E, 70}, 26).transpose(-1, -2);
  const Tensor<double> g = rand_tensor(Shape{B, H, 70, E}, 27);
  AttentionOptions o;
  o.causal = true;
  o.kernel = AttentionKernel::scores;
  const auto want =
      attention_with_grads<double>(q.contiguous(), k.contiguous(), v.contiguous(), g, {}, o);
  o.kernel = AttentionKernel::flash;
  const auto got = attention_with_grads<double>(q, k, v, g, {}, o);
  for (std::size_t i = 0; i < want.size(); ++i) require_close(got[i], want[i], 1e-12);
}

// The output and the gradient of packed_qkv_attention on qkv cast to T, with gradient g.
template <class T>
std::vector<Tensor<T>> packed_with_grad(const Tensor<double>& qkv, const Tensor<double>& g,
                                        const Tensor<bool>& mask, const AttentionOptions& o) {
  Var<T> x = ember::param(Tensor<T>(ember::cast<T>(qkv)));
  Var<T> out = ember::packed_qkv_attention(x, mask, o);
  out.backward(Tensor<T>(ember::cast<T>(g)));
  return {out.value(), x.grad()};
}

TEMPLATE_TEST_CASE("packed_qkv_attention equals scaled_dot_product_attention of its parts",
                   "[ops][attention]", float, double, bf16) {
  using T = TestType;
  // The same kernel on the same values either way: equal but for the order of a few sums.
  const double tol = std::is_same_v<T, double>  ? 1e-12
                     : std::is_same_v<T, float> ? 1e-5
                                                : 2 * ember::testing::dtype_tolerance<T>();
  const std::int64_t B = 2, L = 45, H = 3;
  const AttentionKernel kernel = GENERATE(AttentionKernel::flash, AttentionKernel::scores);
  const std::int64_t E = GENERATE(16, 32);  // 32: bf16 on its bf16 products where the CPU has them
  INFO("kernel " << (kernel == AttentionKernel::flash ? "flash" : "scores") << ", E " << E);
  std::vector<bool> padding(static_cast<std::size_t>(B * L), true);
  for (std::size_t j = 30; j < static_cast<std::size_t>(L); ++j) padding[j] = false;
  const Tensor<bool> key_padding = ember::from_vector<bool>(padding, Shape{B, 1, 1, L});
  const Tensor<double> qkv = rand_tensor(Shape{B, L, 3, H, E}, 31);
  const Tensor<double> g = rand_tensor(Shape{B, L, H, E}, 32);
  for (bool causal : {false, true}) {
    for (double p : {0.0, 0.25}) {
      INFO("causal " << causal << ", dropout " << p);
      AttentionOptions o;
      o.kernel = kernel;
      o.causal = causal;
      o.dropout_p = p;
      o.seed = 5;
      o.offset = 7;
      const Tensor<bool> mask = causal ? Tensor<bool>() : key_padding;
      const auto got = packed_with_grad<T>(qkv, g, mask, o);
      // The reference: q, k and v as separate tensors [B, H, L, E], their gradients stacked back.
      Var<T> x = ember::param(Tensor<T>(ember::cast<T>(qkv)));
      auto part = [&](int i) { return x.select(2, i).transpose(1, 2); };
      Var<T> out = ember::scaled_dot_product_attention(part(0), part(1), part(2), mask, o);
      out = out.transpose(1, 2);
      out.backward(Tensor<T>(ember::cast<T>(g)));
      REQUIRE(got[0].shape() == Shape{B, L, H, E});
      auto wide = [](const Tensor<T>& t) { return Tensor<double>(ember::cast<double>(t)); };
      require_close(got[0], wide(out.value()), tol);
      require_close(got[1], wide(x.grad()), tol);
      // The flash kernel's output is dense: reshaping to [B, L, H E] is a view.
      if (kernel == AttentionKernel::flash) REQUIRE(got[0].is_contiguous());
    }
  }
}

TEST_CASE("gradcheck: packed_qkv_attention", "[ops][attention][gradcheck]") {
  const AttentionKernel kernel = GENERATE(AttentionKernel::flash, AttentionKernel::scores);
  INFO("kernel " << (kernel == AttentionKernel::flash ? "flash" : "scores"));
  const Tensor<bool> mask = ember::from_vector<bool>({true, false, true, true, true}, Shape{5});
  for (bool causal : {false, true}) {
    AttentionOptions o;
    o.kernel = kernel;
    o.causal = causal;
    o.dropout_p = 0.3;
    o.seed = 4;
    auto r =
        ember::gradcheck([&](const Vars& x) { return ember::packed_qkv_attention(x[0], mask, o); },
                         {rand_tensor(Shape{2, 5, 3, 2, 4}, 33)});
    INFO("causal " << causal << ": " << r);
    REQUIRE(r);
  }
  REQUIRE_THROWS_AS(ember::packed_qkv_attention(rand_tensor(Shape{2, 5, 2, 2, 4}, 34)),
                    ember::Error);
  REQUIRE_THROWS_AS(ember::packed_qkv_attention(rand_tensor(Shape{5, 3, 4}, 35)), ember::Error);
}

TEST_CASE(
    "flash attention lays heads after rows: outputs and projections' gradients reshape "
    "without a copy",
    "[ops][attention]") {
  const std::int64_t B = 2, L = 9, H = 3, E = 8;
  // q, k and v as the heads of three [B, L, H E] projections (BERT's), viewed [B, H, L, E].
  auto heads = [&](std::uint32_t seed) {
    return ember::param(Tensor<double>(rand_tensor(Shape{B, L, H, E}, seed)));
  };
  Var<double> q = heads(41), k = heads(42), v = heads(43);
  Var<double> out =
      ember::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2));
  // [B, H, L, E] in [B, L, H, E]'s memory, as PyTorch's CPU flash attention lays it out.
  REQUIRE(out.value().transpose(1, 2).is_contiguous());
  out.transpose(1, 2).backward(rand_tensor(Shape{B, L, H, E}, 44));
  for (const Var<double>* x : {&q, &k, &v}) REQUIRE(x->grad().is_contiguous());
  // Dense [B, H, L, E] inputs keep dense gradients.
  Var<double> dense = ember::param(Tensor<double>(rand_tensor(Shape{B, H, L, E}, 45)));
  ember::scaled_dot_product_attention(dense, dense, dense)
      .backward(rand_tensor(Shape{B, H, L, E}, 46));
  REQUIRE(dense.grad().is_contiguous());
}

TEST_CASE("flash attention runs on the CPU by default, scores when asked; no keys give zeros",
          "[ops][attention]") {
  const Tensor<float> q = ember::zeros<float>(Shape{1, 4, 8});
  REQUIRE(ember::ops::attention_kernel(q) == AttentionKernel::flash);
  REQUIRE(ember::ops::attention_kernel(q, AttentionKernel::scores) == AttentionKernel::scores);
  // No keys at all: every query attends to nothing, zeros of the right shape.
  const Tensor<float> none = ember::scaled_dot_product_attention(
      q, ember::zeros<float>(Shape{1, 0, 8}), ember::zeros<float>(Shape{1, 0, 3}));
  REQUIRE(none.shape() == Shape{1, 4, 3});
  for (float x : none.to_vector()) REQUIRE(x == 0.0f);
}

TEST_CASE("flash attention's memory is O(T): B H = 8, T = 4096 without the 512 MiB of scores",
          "[ops][attention]") {
  const std::int64_t BH = 8, T = 4096, D = 64;
  const Shape shape{1, BH, T, D};
  const auto bytes = [&](std::int64_t n) { return n * static_cast<std::int64_t>(sizeof(float)); };
  const Tensor<float> g = ember::zeros<float>(shape);
  Var<float> q = ember::param(ember::rand<float>(shape, 1)),
             k = ember::param(ember::rand<float>(shape, 2)),
             v = ember::param(ember::rand<float>(shape, 3));
  AttentionOptions o;
  o.causal = true;
  const std::int64_t before = ember::memory_stats(ember::Device::cpu()).bytes_in_use;
  ember::reset_peak_memory_stats(ember::Device::cpu());
  {
    Var<float> out = ember::scaled_dot_product_attention(q, k, v, {}, o);
    out.backward(g);
  }
  const std::int64_t peak = ember::memory_stats(ember::Device::cpu()).peak_bytes_in_use - before;
  // What must exist: the output and the three gradients (4 x 8 MiB), the logsumexp, and the
  // backward's workspace for each thread (a few rows of T floats per entry).
  const ember::ops::FlashProblem<float> p =
      ember::ops::flash_problem(q.value(), k.value(), v.value(), {}, o, 0.125);
  const std::int64_t threads = std::min<std::int64_t>(omp_get_max_threads(), BH);
  const std::int64_t needed = 4 * bytes(BH * T * D) + bytes(BH * T);
  const std::int64_t workspace = threads * bytes(ember::ops::flash_backward_workspace(p));
  INFO("peak " << peak << " B beyond the inputs; outputs " << needed << " B, workspace "
               << workspace << " B");
  REQUIRE(peak <= needed + workspace + (std::int64_t{1} << 20));
  REQUIRE(workspace <= threads * 6 * bytes(T * D));  // O(T) a thread
  REQUIRE(peak < bytes(BH * T * T) / 8);             // the score matrix: 512 MiB
}

}  // namespace test_ops_attention
}  // namespace
