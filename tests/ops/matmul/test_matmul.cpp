// matmul and linear: against a naive float64 GEMM over shapes (vectors, broadcast batches, size 0,
// odd sizes), strided operands (transposed, sliced), dtypes with their tolerances; ONNX's
// reference data for MatMul and Gemm; gradcheck of both; errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <ember/ember.hpp>

#include "support/onnx.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_ops_matmul {

using ember::Activation;
using ember::bf16;
using ember::half;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;

Tensor<double> rand_tensor(const Shape& s, std::uint32_t seed) {
  return ember::testing::uniform_tensor(s, -1, 1, seed);
}

// matmul by the definition, in float64, on contiguous copies (NumPy's rules written out).
Tensor<double> naive_matmul(const Tensor<double>& a_in, const Tensor<double>& b_in) {
  const Tensor<double> a = a_in.rank() == 1 ? a_in.unsqueeze(0) : a_in;
  const Tensor<double> b = b_in.rank() == 1 ? b_in.unsqueeze(1) : b_in;
  const std::int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  Shape ba = a.shape(), bb = b.shape();
  ba.erase(ba.rank() - 1);
  ba.erase(ba.rank() - 1);
  bb.erase(bb.rank() - 1);
  bb.erase(bb.rank() - 1);
  const Shape batch = ember::broadcast_shapes(ba, bb, "test");
  Shape ea = batch, eb = batch, full = batch;
  ea.push_back(M);
  ea.push_back(K);
  eb.push_back(K);
  eb.push_back(N);
  full.push_back(M);
  full.push_back(N);
  const auto av = a.expand(ea).contiguous().to_vector();
  const auto bv = b.expand(eb).contiguous().to_vector();
  std::vector<double> out(static_cast<std::size_t>(full.numel()), 0.0);
  for (std::int64_t n = 0; n < batch.numel(); ++n) {
    for (std::int64_t i = 0; i < M; ++i) {
      for (std::int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < K; ++k) {
          s += av[static_cast<std::size_t>((n * M + i) * K + k)] *
               bv[static_cast<std::size_t>((n * K + k) * N + j)];
        }
        out[static_cast<std::size_t>((n * M + i) * N + j)] = s;
      }
    }
  }
  Shape out_shape = batch;
  if (a_in.rank() > 1) out_shape.push_back(M);
  if (b_in.rank() > 1) out_shape.push_back(N);
  return ember::from_vector<double>(out, out_shape);
}

// Relative to the sum of |a_ik b_kj|: tol per dtype (its unit roundoff times a small factor).
template <class T>
double tolerance() {
  if constexpr (std::is_same_v<T, double>) return 1e-13;
  if constexpr (std::is_same_v<T, float>) return 1e-6;
  if constexpr (std::is_same_v<T, bf16>) return 1.0 / 128;
  return 1.0 / 1024;
}

template <class T>
void require_close(const Tensor<T>& got, const Tensor<double>& want, double scale, double tol) {
  ember::testing::require_close(got, want, tol, scale);
}

struct ShapeCase {
  Shape a, b;
};
const std::vector<ShapeCase> kShapes = {
    {{3, 4}, {4, 5}},
    {{1, 1}, {1, 1}},
    {{17, 33}, {33, 9}},
    {{4}, {4}},
    {{4}, {4, 3}},
    {{2, 4}, {4}},
    {{2, 3, 4}, {4, 5}},
    {{3, 4}, {2, 4, 5}},
    {{2, 1, 3, 4}, {5, 4, 2}},
    {{0, 4}, {4, 3}},
    {{3, 0}, {0, 2}},
    {{2, 0, 3}, {3, 4}},
    {{1, 3, 4}, {7, 4, 2}},
    {{6, 5, 4}, {6, 4, 3}},
};

template <class T>
void check_shapes() {
  std::uint32_t seed = 1;
  for (const auto& c : kShapes) {
    INFO("a " << c.a.str() << " b " << c.b.str());
    const Tensor<double> a = rand_tensor(c.a, seed++), b = rand_tensor(c.b, seed++);
    // The inputs as T, and the reference computed from exactly those values.
    const Tensor<T> at = ember::cast<T>(a), bt = ember::cast<T>(b);
    const Tensor<double> want = naive_matmul(Tensor<double>(ember::cast<double>(at)),
                                             Tensor<double>(ember::cast<double>(bt)));
    const double k = static_cast<double>(c.a[c.a.rank() - 1]);
    require_close(ember::matmul(at, bt), want, k, tolerance<T>());
  }
}

TEMPLATE_TEST_CASE("matmul: NumPy shapes against a float64 GEMM", "[ops][matmul]", float, double,
                   bf16, half) {
  check_shapes<TestType>();
}

TEST_CASE("matmul: strided operands are read in place or packed", "[ops][matmul]") {
  const Tensor<double> base_a = rand_tensor(Shape{9, 12}, 41),
                       base_b = rand_tensor(Shape{10, 9}, 42);
  const std::vector<std::pair<Tensor<double>, Tensor<double>>> cases = {
      {base_a.t(), base_b.t()},                                    // both transposed (T, T)
      {base_a.slice(1, 0, 12, 2), base_b.slice(1, 1, 7)},          // column stride 2: packed
      {base_a.slice(0, 1, 9, 2).slice(1, 0, 10), base_b},          // row-sliced, ld > cols
      {base_a.t().slice(0, 0, 12, 3), base_b.t().slice(1, 2, 8)},  // both strides > 1
  };
  for (const auto& [a, b] : cases) {
    INFO("a " << a.shape().str() << " strides " << a.strides().str() << ", b " << b.shape().str());
    if (a.size(-1) != b.size(0)) continue;
    require_close(ember::matmul(a, b), naive_matmul(a.contiguous(), b.contiguous()), 12, 1e-13);
  }
  // Broadcast batch dims read with stride 0 (no copy of the shared operand).
  const Tensor<double> w = rand_tensor(Shape{4, 3}, 43);
  const Tensor<double> x = rand_tensor(Shape{5, 2, 4}, 44);
  require_close(ember::matmul(x, w.expand({5, 4, 3})), naive_matmul(x, w), 4, 1e-13);
}

TEST_CASE("matmul and linear: bad shapes are errors that name them", "[ops][matmul]") {
  const Tensor<float> a = ember::zeros<float>(Shape{2, 3}), b = ember::zeros<float>(Shape{4, 5});
  REQUIRE_THROWS_WITH(ember::matmul(a, b), Catch::Contains("[2, 3]") && Catch::Contains("[4, 5]"));
  REQUIRE_THROWS_AS(ember::matmul(ember::zeros<float>(Shape{}), b), ember::Error);
  REQUIRE_THROWS_AS(
      ember::matmul(ember::zeros<float>(Shape{2, 2, 3}), ember::zeros<float>(Shape{3, 3, 4})),
      ember::Error);
  REQUIRE_THROWS_AS(ember::linear(a, ember::zeros<float>(Shape{5, 4})), ember::Error);
  REQUIRE_THROWS_AS(
      ember::linear(a, ember::zeros<float>(Shape{5, 3}), ember::zeros<float>(Shape{4})),
      ember::Error);
}

TEST_CASE("linear: bias and activation against the definition", "[ops][linear]") {
  const Tensor<double> x = rand_tensor(Shape{2, 3, 4}, 51), w = rand_tensor(Shape{5, 4}, 52);
  const Tensor<double> b = rand_tensor(Shape{5}, 53);
  const Tensor<double> pre = Tensor<double>(naive_matmul(x, w.t().contiguous()) + b);
  require_close(ember::linear(x, w, b), pre, 4, 1e-13);
  require_close(ember::linear(x, w), naive_matmul(x, w.t().contiguous()), 4, 1e-13);
  require_close(ember::linear(x, w, b, Activation::relu), Tensor<double>(ember::relu(pre)), 4,
                1e-13);
  require_close(ember::linear(x, w, b, Activation::gelu), Tensor<double>(ember::gelu(pre)), 4,
                1e-13);
  require_close(ember::linear(x, w, b, Activation::gelu_tanh),
                Tensor<double>(ember::gelu_tanh(pre)), 4, 1e-13);
  require_close(ember::linear(x, w, Tensor<double>(), Activation::gelu),
                Tensor<double>(ember::gelu(naive_matmul(x, w.t().contiguous()))), 4, 1e-13);
}

TEST_CASE("matmul and Gemm: ONNX's reference data", "[ops][matmul][onnx]") {
  namespace onnx = ember::testing::onnx;
  if (!onnx::available("test_matmul_2d")) {
    WARN("libonnx-testdata is not installed: ONNX reference data not checked");
    return;
  }
  const auto tensor = onnx::to_tensor<float>;
  for (const char* name : {"test_matmul_2d", "test_matmul_3d", "test_matmul_4d"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    REQUIRE(t.inputs.size() == 2);
    const Tensor<float> want = tensor(t.outputs[0]);
    require_close(ember::matmul(tensor(t.inputs[0]), tensor(t.inputs[1])),
                  Tensor<double>(ember::cast<double>(want)), 4, 1e-5);
  }
  for (const char* name :
       {"test_gemm_all_attributes", "test_gemm_alpha", "test_gemm_beta",
        "test_gemm_default_matrix_bias", "test_gemm_default_no_bias",
        "test_gemm_default_scalar_bias", "test_gemm_default_single_elem_vector_bias",
        "test_gemm_default_vector_bias", "test_gemm_default_zero_bias", "test_gemm_transposeA",
        "test_gemm_transposeB"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    // Y = alpha op(A) op(B) + beta C, C broadcast (optional).
    Tensor<float> a = tensor(t.inputs[0]), b = tensor(t.inputs[1]);
    if (t.attributes.get("transA", 0) != 0) a = a.t();
    if (t.attributes.get("transB", 0) != 0) b = b.t();
    const double alpha = t.attributes.get("alpha", 1.0), beta = t.attributes.get("beta", 1.0);
    Tensor<float> y = ember::matmul(a, b);
    if (t.inputs.size() > 2) {
      y = Tensor<float>(y * alpha + tensor(t.inputs[2]) * beta);
    } else {
      y = Tensor<float>(y * alpha);
    }
    const Tensor<float> want = tensor(t.outputs[0]);
    require_close(y, Tensor<double>(ember::cast<double>(want)), 4, 1e-5);
  }
}

TEST_CASE("gradcheck: matmul over NumPy shapes, Vars and Tensors mixed",
          "[ops][matmul][gradcheck]") {
  std::uint32_t seed = 61;
  for (const auto& c : kShapes) {
    INFO("a " << c.a.str() << " b " << c.b.str());
    const Tensor<double> a = rand_tensor(c.a, seed++), b = rand_tensor(c.b, seed++);
    auto r = ember::gradcheck([](const Vars& v) { return ember::matmul(v[0], v[1]); }, {a, b});
    INFO(r);
    REQUIRE(r);
  }
  // A constant operand, and a transposed view of a Var.
  const Tensor<double> w = rand_tensor(Shape{4, 3}, 71);
  auto r = ember::gradcheck(
      [w](const Vars& v) { return Var<double>(ember::tanh(ember::matmul(v[0].t(), w)) * 2.0); },
      {rand_tensor(Shape{4, 5}, 72)});
  INFO(r);
  REQUIRE(r);
}

TEST_CASE("gradcheck: linear with each activation, with and without bias",
          "[ops][linear][gradcheck]") {
  const Tensor<double> x = rand_tensor(Shape{2, 3, 4}, 81), w = rand_tensor(Shape{5, 4}, 82);
  const Tensor<double> b = rand_tensor(Shape{5}, 83);
  for (Activation act :
       {Activation::none, Activation::relu, Activation::gelu, Activation::gelu_tanh}) {
    INFO("activation " << static_cast<int>(act));
    auto r = ember::gradcheck([act](const Vars& v) { return ember::linear(v[0], v[1], v[2], act); },
                              {x, w, b});
    INFO(r);
    REQUIRE(r);
    auto r2 = ember::gradcheck(
        [act](const Vars& v) { return ember::linear(v[0], v[1], Tensor<double>(), act); }, {x, w});
    INFO(r2);
    REQUIRE(r2);
  }
  // Only the weight a Var (a frozen input).
  auto r3 = ember::gradcheck(
      [x](const Vars& v) { return ember::linear(x, v[0], v[1], Activation::gelu); }, {w, b});
  INFO(r3);
  REQUIRE(r3);
}

// feed_forward (ops/matmul/feed_forward.hpp, autograd/feed_forward.hpp) is two linears recorded as
// one node; its tests live beside linear's.
TEST_CASE("feed_forward: the two linears by the definition, recorded or not", "[ops][linear]") {
  const Tensor<double> x = rand_tensor(Shape{2, 3, 4}, 101), w1 = rand_tensor(Shape{6, 4}, 102);
  const Tensor<double> b1 = rand_tensor(Shape{6}, 103), w2 = rand_tensor(Shape{5, 6}, 104);
  const Tensor<double> b2 = rand_tensor(Shape{5}, 105);
  for (Activation act :
       {Activation::none, Activation::relu, Activation::gelu, Activation::gelu_tanh}) {
    INFO("activation " << static_cast<int>(act));
    const Tensor<double> h = ember::linear(x, w1, b1, act);
    const Tensor<double> want = ember::linear(h, w2, b2);
    require_close(ember::feed_forward(x, w1, b1, w2, b2, act), want, 6, 1e-13);
    const Var<double> y = ember::feed_forward(ember::param(x), w1, b1, w2, b2, act);
    REQUIRE(y.value().shape() == Shape{2, 3, 5});
    require_close(y.value(), want, 6, 1e-13);
    require_close(ember::feed_forward(x, w1, Tensor<double>(), w2, Tensor<double>(), act),
                  ember::linear(ember::linear(x, w1, Tensor<double>(), act), w2), 6, 1e-13);
  }
}

TEST_CASE("gradcheck: feed_forward with each activation, with and without biases",
          "[ops][linear][gradcheck]") {
  // Hidden width 7 and 9 rows: nothing a multiple of a vector width.
  const Tensor<double> x = rand_tensor(Shape{3, 3, 4}, 111), w1 = rand_tensor(Shape{7, 4}, 112);
  const Tensor<double> b1 = rand_tensor(Shape{7}, 113), w2 = rand_tensor(Shape{5, 7}, 114);
  const Tensor<double> b2 = rand_tensor(Shape{5}, 115);
  for (Activation act :
       {Activation::none, Activation::relu, Activation::gelu, Activation::gelu_tanh}) {
    INFO("activation " << static_cast<int>(act));
    auto r = ember::gradcheck(
        [act](const Vars& v) { return ember::feed_forward(v[0], v[1], v[2], v[3], v[4], act); },
        {x, w1, b1, w2, b2});
    INFO(r);
    REQUIRE(r);
    auto r2 = ember::gradcheck(
        [act](const Vars& v) {
          return ember::feed_forward(v[0], v[1], Tensor<double>(), v[2], Tensor<double>(), act);
        },
        {x, w1, w2});
    INFO(r2);
    REQUIRE(r2);
  }
  // Constants mixed in: only the second linear's parameters, then only the input, are Vars.
  auto r3 = ember::gradcheck(
      [&](const Vars& v) { return ember::feed_forward(x, w1, b1, v[0], v[1], Activation::gelu); },
      {w2, b2});
  INFO(r3);
  REQUIRE(r3);
  auto r4 = ember::gradcheck(
      [&](const Vars& v) { return ember::feed_forward(v[0], w1, b1, w2, b2, Activation::relu); },
      {x});
  INFO(r4);
  REQUIRE(r4);
}

TEST_CASE("feed_forward: gradients equal two recorded linears', over dtypes and empty batches",
          "[ops][linear]") {
  const auto check = [&]<class T>(T, const Shape& xs, double rel) {
    INFO(ember::dtype_name<T> << " x " << xs.str());
    const auto make = [](const Shape& s, std::uint32_t seed) {
      return param(Tensor<T>(ember::cast<T>(ember::testing::uniform_tensor(s, -1, 1, seed))));
    };
    for (Activation act : {Activation::relu, Activation::gelu, Activation::gelu_tanh}) {
      INFO("activation " << static_cast<int>(act));
      auto x = make(xs, 121), w1 = make({16, 8}, 122), b1 = make({16}, 123);
      auto w2 = make({8, 16}, 124), b2 = make({8}, 125);
      auto xr = make(xs, 121), w1r = make({16, 8}, 122), b1r = make({16}, 123);
      auto w2r = make({8, 16}, 124), b2r = make({8}, 125);
      Shape ys = xs;
      ys[ys.rank() - 1] = 8;
      const Tensor<T> g = ember::cast<T>(ember::testing::uniform_tensor(ys, -1, 1, 126));
      ember::feed_forward(x, w1, b1, w2, b2, act).backward(g);
      ember::linear(ember::linear(xr, w1r, b1r, act), w2r, b2r).backward(g);
      const auto near = [rel](const Tensor<T>& got, const Tensor<T>& want) {
        require_close(got, Tensor<double>(ember::cast<double>(want)), 16, rel);
      };
      near(x.grad(), xr.grad());
      near(w1.grad(), w1r.grad());
      near(b1.grad(), b1r.grad());
      near(w2.grad(), w2r.grad());
      near(b2.grad(), b2r.grad());
    }
  };
  check(double{}, Shape{2, 5, 8}, 1e-13);
  check(float{}, Shape{2, 5, 8}, 1e-6);
  check(bf16{}, Shape{2, 5, 8}, 1.0 / 128);
  check(ember::half{}, Shape{2, 5, 8}, 1.0 / 1024);
  check(float{}, Shape{0, 8}, 1e-6);  // no rows: zero weight gradients, an empty input gradient
}

TEST_CASE("feed_forward: mismatched widths and biases are errors that name them", "[ops][linear]") {
  const Tensor<float> x = ember::zeros<float>(Shape{2, 4}), w1 = ember::zeros<float>(Shape{6, 4});
  const Tensor<float> w2 = ember::zeros<float>(Shape{5, 6}), none;
  REQUIRE_THROWS_WITH(
      ember::feed_forward(x, w1, none, ember::zeros<float>(Shape{5, 3}), none, Activation::relu),
      Catch::Contains("[5, 3]") && Catch::Contains("6 features"));
  REQUIRE_THROWS_WITH(
      ember::feed_forward(x, w1, none, w2, ember::zeros<float>(Shape{6}), Activation::relu),
      Catch::Contains("bias [6]"));
  REQUIRE_THROWS_AS(ember::feed_forward(ember::param(ember::zeros<float>(Shape{2, 3})), w1, none,
                                        w2, none, Activation::gelu),
                    ember::Error);
}

TEST_CASE("the built-in blocked GEMM (builds without BLAS) against float64", "[ops][matmul]") {
  using ember::ops::MatrixView;
  for (auto [M, N, K] :
       {std::tuple<int, int, int>{1, 1, 1}, {37, 530, 300}, {5, 3, 0}, {64, 1, 7}}) {
    INFO("M " << M << " N " << N << " K " << K);
    const Tensor<double> a = rand_tensor(Shape{K, M}, 91).t();  // a transposed view
    const Tensor<double> b = rand_tensor(Shape{K, N}, 92);
    Tensor<double> c = rand_tensor(Shape{M, N}, 93);
    const Tensor<double> c0 = c.clone();
    ember::ops::cpu::gemm_blocked<double>(
        MatrixView<const double>{a.data(), M, K, a.stride(0), a.stride(1)},
        MatrixView<const double>{b.data(), K, N, b.stride(0), b.stride(1)},
        MatrixView<double>{c.data(), M, N, c.stride(0), c.stride(1)}, 0.5, 2.0);
    const Tensor<double> want = Tensor<double>(naive_matmul(a, b) * 0.5 + c0 * 2.0);
    require_close(c, want, K, 1e-13);
  }
}

}  // namespace test_ops_matmul
}  // namespace
