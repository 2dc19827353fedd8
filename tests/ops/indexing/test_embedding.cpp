// embedding: the lookup and the weight's gradient against float64 references written here, over
// id shapes (rank 0 to 3, empty), repeated and absent ids, a strided weight and the four dtypes;
// the backward's fixed summation order (bit-exact against a float sum in position order, the
// same bits every run); gradcheck; launch counts; errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "support/random_tensors.hpp"

namespace {
namespace test_ops_embedding {

using ember::testing::require_close;

using ember::bf16;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;
using Ids = Tensor<std::int64_t>;

Tensor<double> rand_tensor(const Shape& s, std::uint32_t seed) {
  return ember::testing::normal_tensor(s, 0, 1.5, seed);
}

Ids rand_ids(const Shape& s, std::int64_t V, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int64_t> d(0, V - 1);
  std::vector<std::int64_t> v(static_cast<std::size_t>(s.numel()));
  for (auto& x : v) x = d(rng);
  return ember::from_vector<std::int64_t>(v, s);
}

template <class T>
std::vector<double> values(const Tensor<T>& t) {
  return Tensor<double>(ember::cast<double>(t)).contiguous().to_vector();
}

// out[p, d] = w[ids[p], d]; dw[v, d] = sum of g[p, d] over ids[p] == v.
std::vector<double> ref_lookup(const std::vector<double>& w, const std::vector<std::int64_t>& ids,
                               std::int64_t D) {
  std::vector<double> out;
  for (const std::int64_t id : ids) {
    for (std::int64_t d = 0; d < D; ++d) out.push_back(w[static_cast<std::size_t>(id * D + d)]);
  }
  return out;
}
std::vector<double> ref_grad(const std::vector<double>& g, const std::vector<std::int64_t>& ids,
                             std::int64_t V, std::int64_t D) {
  std::vector<double> dw(static_cast<std::size_t>(V * D), 0.0);
  for (std::size_t p = 0; p < ids.size(); ++p) {
    for (std::int64_t d = 0; d < D; ++d) {
      dw[static_cast<std::size_t>(ids[p] * D + d)] += g[p * static_cast<std::size_t>(D) + d];
    }
  }
  return dw;
}

template <class T>
void check_dtype() {
  const std::int64_t V = 13, D = 7;
  const Tensor<double> w64 = rand_tensor(Shape{V, D}, 1);
  const Tensor<T> w = ember::cast<T>(w64);
  // The same table as a transposed view of a [D, V] tensor: read in place.
  const Tensor<T> wt = Tensor<T>(ember::cast<T>(w64.t().contiguous())).t();
  REQUIRE(!wt.is_contiguous());
  const auto wr = values(w);
  for (const Shape& s : {Shape{}, Shape{1}, Shape{9}, Shape{4, 6}, Shape{2, 3, 5}, Shape{0, 3}}) {
    INFO("ids of shape " << s.str());
    const Ids ids = rand_ids(s, V, 2);
    const auto idv = ids.to_vector();
    Shape out_shape = s;
    out_shape.push_back(D);
    for (const Tensor<T>& table : {w, wt}) {
      const Tensor<T> y = ember::embedding(table, ids);
      REQUIRE(y.shape() == out_shape);
      CHECK(values(y) == ref_lookup(wr, idv, D));  // a copy: exact
    }
    // The gradient: repeated ids add up, absent ids get 0.
    const Tensor<T> g = ember::cast<T>(rand_tensor(out_shape, 3));
    auto wv = ember::param(w);
    ember::embedding(wv, ids).backward(g);
    REQUIRE(wv.grad().shape() == Shape{V, D});
    require_close(values(wv.grad()), ref_grad(values(g), idv, V, D),
                  ember::testing::dtype_tolerance<T>());
  }
}

TEST_CASE("embedding against the float64 reference: float", "[ops][embedding]") {
  check_dtype<float>();
}
TEST_CASE("embedding against the float64 reference: double", "[ops][embedding]") {
  check_dtype<double>();
}
TEST_CASE("embedding against the float64 reference: bf16", "[ops][embedding]") {
  check_dtype<bf16>();
}
TEST_CASE("embedding against the float64 reference: half", "[ops][embedding]") {
  check_dtype<ember::half>();
}

TEST_CASE("embedding backward: a fixed summation order, the same bits every run",
          "[ops][embedding]") {
  // Many repeats of few ids, values of very different magnitudes: the order of the sum shows.
  const std::int64_t V = 5, D = 33, M = 4000;
  const Ids ids = rand_ids(Shape{M}, V - 1, 4);  // id V - 1 never occurs
  std::mt19937 rng(5);
  std::vector<float> gv(static_cast<std::size_t>(M * D));
  for (auto& x : gv)
    x = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng), int(rng() % 30));
  const Tensor<float> g = ember::from_vector<float>(gv, Shape{M, D});
  const Tensor<float> w = ember::zeros<float>(Shape{V, D});
  // The documented order: each id's positions in increasing order, summed in float.
  std::vector<float> want(static_cast<std::size_t>(V * D), 0.0f);
  const auto idv = ids.to_vector();
  for (std::int64_t p = 0; p < M; ++p) {
    for (std::int64_t d = 0; d < D; ++d) {
      want[static_cast<std::size_t>(idv[p] * D + d)] += gv[static_cast<std::size_t>(p * D + d)];
    }
  }
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    auto wv = ember::param(w);
    const std::uint64_t before = ember::launch_count();
    const Var<float> y = ember::embedding(wv, ids);
    CHECK(ember::launch_count() - before == 2);  // one range check, one gather
    const std::uint64_t b2 = ember::launch_count();
    y.backward(g);
    CHECK(ember::launch_count() - b2 == 3);  // the zeros, the counting sort, the sums
    const auto got = wv.grad().to_vector();
    if (run == 0) first = got;
    REQUIRE(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)) == 0);
    REQUIRE(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  }
}

TEMPLATE_TEST_CASE(
    "embedding backward into a gradient the table already has (a tied output "
    "projection): the same bits as adding a separate gradient",
    "[ops][embedding]", float, bf16, ember::half) {
  using T = TestType;
  const std::int64_t V = 40, D = 24, M = 30;
  const Tensor<T> w = ember::cast<T>(rand_tensor(Shape{V, D}, 11));
  const Tensor<T> x = ember::cast<T>(rand_tensor(Shape{M, D}, 12));
  const Tensor<T> a = ember::cast<T>(rand_tensor(Shape{M, D}, 13));
  const Ids ids = rand_ids(Shape{M}, V, 14);
  for (const std::optional<std::int64_t> padding : {std::optional<std::int64_t>{}, {7}}) {
    INFO("padding_idx " << (padding ? std::to_string(*padding) : "none"));
    // Tied: the projection's backward runs first (the embedding came first), so the lookup's
    // gradient is added into the table's, the rows named only.
    auto tied = ember::param(w);
    const Var<T> y = ember::embedding(tied, ids, padding) * Var<T>(a);
    const Var<T> logits = ember::matmul(Var<T>(x), tied.t());
    Var<T>(ember::sum(y) + ember::sum(logits * logits)).backward();
    // Separate: two copies of the table, their gradients added.
    auto first = ember::param(w), second = ember::param(w);
    const Var<T> y2 = ember::embedding(first, ids, padding) * Var<T>(a);
    const Var<T> logits2 = ember::matmul(Var<T>(x), second.t());
    Var<T>(ember::sum(y2) + ember::sum(logits2 * logits2)).backward();
    const Tensor<T> want =
        Tensor<T>(ember::expr::Leaf<T>(second.grad()) + ember::expr::Leaf<T>(first.grad()));
    const auto got = tied.grad().to_vector(), expect = want.to_vector();
    REQUIRE(std::memcmp(got.data(), expect.data(), got.size() * sizeof(T)) == 0);
  }
}

TEST_CASE("gradcheck: embedding", "[ops][embedding][gradcheck]") {
  const Tensor<double> w = rand_tensor(Shape{6, 4}, 6);
  const Ids ids = ember::from_vector<std::int64_t>({5, 0, 5, 2, 2, 5, 1}, Shape{7});
  auto r = ember::gradcheck(
      [&](const Vars& v) {
        // Used twice (the gradients accumulate), and through a strided view of the table.
        return Var<double>(ember::tanh(ember::embedding(v[0], ids)) *
                           ember::embedding(v[0].t().t(), ids.reshape({7})));
      },
      {w});
  INFO(r);
  REQUIRE(r);
}

TEST_CASE("embedding: padding_idx gets no gradient, the other rows theirs", "[ops][embedding]") {
  const Tensor<double> w = rand_tensor(Shape{6, 4}, 8);
  const Ids ids = ember::from_vector<std::int64_t>({5, 0, 5, 2, 2, 5, 1}, Shape{7});
  const Tensor<double> g = rand_tensor(Shape{7, 4}, 9);
  auto grad = [&](std::optional<std::int64_t> padding) {
    auto v = ember::param(w);
    const Var<double> y = ember::embedding(v, ids, padding);
    // The forward reads the padding row like any other (PyTorch's F.embedding).
    REQUIRE(y.value().to_vector() == ember::embedding(w, ids).to_vector());
    y.backward(g);
    return v.grad().to_vector();
  };
  const std::vector<double> plain = grad(std::nullopt);
  for (std::int64_t padding : {2, -4, 3}) {  // -4 is row 2; row 3 is never looked up
    INFO("padding_idx " << padding);
    const std::int64_t row = padding < 0 ? padding + 6 : padding;
    const std::vector<double> padded = grad(padding);
    for (std::size_t i = 0; i < padded.size(); ++i) {
      REQUIRE(padded[i] == (static_cast<std::int64_t>(i) / 4 == row ? 0.0 : plain[i]));
    }
  }
  REQUIRE_THROWS_AS(ember::embedding(w, ids, 6), ember::Error);
  REQUIRE_THROWS_AS(ember::embedding(w, ids, -7), ember::Error);
}

// PyTorch's embedding_renorm_ written out: each row named by an id whose p-norm exceeds
// max_norm is scaled by max_norm / (norm + 1e-7).
std::vector<double> ref_renorm(std::vector<double> w, const std::vector<std::int64_t>& ids,
                               std::int64_t D, double max_norm, double p) {
  std::vector<bool> named(w.size() / static_cast<std::size_t>(D), false);
  for (const std::int64_t id : ids) named[static_cast<std::size_t>(id)] = true;
  for (std::size_t v = 0; v < named.size(); ++v) {
    if (!named[v]) continue;
    double norm = 0;
    for (std::int64_t d = 0; d < D; ++d) {
      const double a = std::fabs(w[v * static_cast<std::size_t>(D) + d]);
      norm = std::isinf(p) ? std::max(norm, a) : norm + std::pow(a, p);
    }
    if (!std::isinf(p)) norm = std::pow(norm, 1 / p);
    if (norm <= max_norm) continue;
    for (std::int64_t d = 0; d < D; ++d) {
      w[v * static_cast<std::size_t>(D) + d] *= max_norm / (norm + 1e-7);
    }
  }
  return w;
}

TEMPLATE_TEST_CASE("embedding with max_norm: the rows looked up are renormalised in place",
                   "[ops][embedding]", float, double, bf16, ember::half) {
  using T = TestType;
  const double tol = std::is_same_v<T, double>  ? 1e-14
                     : std::is_same_v<T, float> ? 1e-6
                     : std::is_same_v<T, bf16>  ? 1.0 / 128
                                                : 1.0 / 1024;
  const std::int64_t V = 9, D = 5;
  // Row norms from about 0.5 to 6 (rows scaled by v): some above max_norm, some below.
  std::vector<double> table = rand_tensor(Shape{V, D}, 31).to_vector();
  for (std::size_t i = 0; i < table.size(); ++i) {
    table[i] *= 0.25 + 0.5 * static_cast<double>(i / static_cast<std::size_t>(D));
  }
  const Tensor<double> w64 = ember::from_vector<double>(table, Shape{V, D});
  const Ids ids = ember::from_vector<std::int64_t>({7, 1, 7, 4, 8, 0}, Shape{2, 3});
  for (const double p : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
    INFO("norm_type " << p);
    const double max_norm = 1.5;
    // A transposed view: renormalised through its strides.
    Tensor<T> w = Tensor<T>(ember::cast<T>(w64.t().contiguous())).t();
    const auto before = values(w);
    const auto want = ref_renorm(before, ids.to_vector(), D, max_norm, p);
    REQUIRE(want != before);  // some named row was over the norm
    const Tensor<T> y = ember::embedding(w, ids, std::nullopt, max_norm, p);
    // The table itself changed (named rows over the norm), and the lookup read the new rows.
    require_close(w, ember::from_vector<double>(want, Shape{V, D}), tol);
    require_close(
        y, ember::from_vector<double>(ref_lookup(want, ids.to_vector(), D), Shape{2, 3, D}), tol);
    const auto after = values(w);
    for (std::int64_t v : {2, 3, 5, 6}) {  // not named: untouched
      for (std::int64_t d = 0; d < D; ++d) {
        REQUIRE(after[static_cast<std::size_t>(v * D + d)] ==
                before[static_cast<std::size_t>(v * D + d)]);
      }
    }
  }
}

TEST_CASE("embedding with max_norm: no gradient through the renorm; the table's version moves",
          "[ops][embedding]") {
  const Tensor<double> w = rand_tensor(Shape{6, 4}, 41);
  const Ids ids = ember::from_vector<std::int64_t>({5, 0, 5, 2}, Shape{4});
  const Tensor<double> g = rand_tensor(Shape{4, 4}, 42);
  auto v = ember::param(w.clone());
  const Var<double> y = ember::embedding(v, ids, std::nullopt, 1.0);
  // The renormalised rows are what the parameter now holds, and the gradient is the plain
  // scatter-add (PyTorch computes the renorm under no_grad).
  require_close(y.value(), ember::embedding(v.value(), ids), 1e-15);
  y.backward(g);
  require_close(
      v.grad(),
      ember::from_vector<double>(ref_grad(g.to_vector(), ids.to_vector(), 6, 4), Shape{6, 4}),
      1e-15);
  // A recorded op that saved the table before the renorm cannot run its backward after it.
  auto t = ember::param(w.clone());
  const Var<double> saved = ember::sum(ember::matmul(t, t.t()));
  (void)ember::embedding(t, ids, std::nullopt, 1.0);
  REQUIRE_THROWS_WITH(saved.backward(), Catch::Contains("modified in place"));
  // Bad norms.
  REQUIRE_THROWS_AS(ember::embedding(w, ids, std::nullopt, -1.0), ember::Error);
  REQUIRE_THROWS_AS(ember::embedding(w, ids, std::nullopt, 1.0, 0.0), ember::Error);
  REQUIRE_THROWS_AS(ember::embedding(w, ember::full<std::int64_t>(Shape{1}, 6), std::nullopt, 1.0),
                    ember::Error);
}

TEST_CASE("embedding: errors", "[ops][embedding]") {
  const Tensor<float> w = ember::ones<float>(Shape{4, 3});
  auto throws_with = [](auto f, const std::string& what) {
    try {
      f();
      FAIL("no error for " << what);
    } catch (const ember::Error& err) {
      INFO(err.what());
      CHECK(std::string(err.what()).find(what) != std::string::npos);
    }
  };
  throws_with(
      [&] {
        ember::embedding(w, ember::from_vector<std::int64_t>({0, 4}, Shape{2}));
      },
      "id 4 is outside [0, 4)");
  throws_with(
      [&] {
        ember::embedding(w, ember::from_vector<std::int64_t>({-1, 2}, Shape{2}));
      },
      "id -1 is outside");
  throws_with([&] { ember::embedding(ember::param(w), ember::full<std::int64_t>(Shape{2}, 7)); },
              "embedding");
  throws_with([&] { ember::embedding(w.reshape({12}), ember::zeros<std::int64_t>(Shape{2})); },
              "weight must be [V, D]");
  throws_with(
      [&] {
        ember::embedding(w, ember::zeros<std::int64_t>(Shape{1, 1, 1, 1, 1, 1, 1, 1}));
      },
      "at most rank 7");
}

}  // namespace test_ops_embedding
}  // namespace
