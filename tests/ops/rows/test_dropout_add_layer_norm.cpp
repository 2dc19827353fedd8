// dropout_add_layer_norm: against layer_norm(dropout(x) + residual) from the definitions in
// float64 (shapes including rank 1, rows of one element and size 0; with and without weight and
// bias; with and without dropout), over dtypes; one pass forward; the same elements dropped as
// ember::dropout; gradcheck; its gradients against the unfused layers; nn's form; errors.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

#include "support/random_tensors.hpp"

namespace {
namespace test_ops_dropout_add_layer_norm {

using ember::bf16;
using ember::DropoutOptions;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using ember::testing::require_close;
using Vars = std::vector<Var<double>>;

Tensor<double> rand_tensor(const Shape& s, std::uint32_t seed, double mean = 0) {
  return ember::testing::normal_tensor(s, mean, 1.5, seed);
}

// layer_norm over the last dimension of s = dropout(x) + residual (s rounded to T, as the
// operator promises), in float64 from the textbook definition.
template <class T>
Tensor<double> reference(const Tensor<double>& x, const Tensor<double>& residual,
                         const Tensor<double>& w, const Tensor<double>& b, double eps,
                         const DropoutOptions& d) {
  const Tensor<double> dropped = ember::dropout(x, d.p, true, d.seed, d.offset);
  const Tensor<double> s =
      Tensor<double>(ember::cast<double>(Tensor<T>(ember::cast<T>(dropped + residual))));
  const ember::Dims last{s.rank() - 1};
  const Tensor<double> mean = ember::mean(s, last, true);
  const Tensor<double> var = ember::mean(ember::square(s - mean), last, true);
  Tensor<double> y = Tensor<double>((s - mean) / ember::sqrt(var + eps));
  if (w.defined()) y = Tensor<double>(y * w);
  if (b.defined()) y = Tensor<double>(y + b);
  return y;
}

template <class T>
Tensor<T> as(const Tensor<double>& t) {
  return t.defined() ? Tensor<T>(ember::cast<T>(t)) : Tensor<T>();
}

// Inputs rounded to T, so the reference sees exactly what the operator reads.
template <class T>
Tensor<double> rounded(const Tensor<double>& t) {
  return t.defined() ? Tensor<double>(ember::cast<double>(as<T>(t))) : Tensor<double>();
}

template <class T>
void check_against_reference() {
  const double tol = ember::testing::dtype_tolerance<T>();
  const std::vector<Shape> shapes{Shape{4, 7}, Shape{2, 3, 33}, Shape{5},
                                  Shape{3, 1}, Shape{0, 6},     Shape{2, 0}};
  std::uint32_t seed = 10;
  for (const Shape& shape : shapes) {
    const std::int64_t cols = shape[shape.rank() - 1];
    const Tensor<double> x = rounded<T>(rand_tensor(shape, ++seed));
    const Tensor<double> r = rounded<T>(rand_tensor(shape, ++seed, 0.5));
    const Tensor<double> w = rounded<T>(rand_tensor(Shape{cols}, ++seed, 1.0));
    const Tensor<double> b = rounded<T>(rand_tensor(Shape{cols}, ++seed));
    for (double p : {0.0, 0.3}) {
      for (bool affine : {true, false}) {
        const DropoutOptions d{p, 7, 3};
        const Tensor<double> wd = affine ? w : Tensor<double>(), bd = affine ? b : Tensor<double>();
        INFO("shape " << shape.str() << " p " << p << " affine " << affine);
        const Tensor<T> got =
            ember::dropout_add_layer_norm(as<T>(x), as<T>(r), as<T>(wd), as<T>(bd), 1e-5, d);
        require_close(got, reference<T>(x, r, wd, bd, 1e-5, d), tol);
      }
    }
  }
}

TEST_CASE("dropout_add_layer_norm against the definition, over dtypes and shapes",
          "[ops][norm][dropout]") {
  check_against_reference<double>();
  check_against_reference<float>();
  check_against_reference<bf16>();
  check_against_reference<ember::half>();
}

TEST_CASE("dropout_add_layer_norm: one pass, the elements ember::dropout drops, strided inputs",
          "[ops][norm][dropout]") {
  const Tensor<float> x = ember::randn<float>(Shape{16, 64}, 1),
                      r = ember::randn<float>(Shape{16, 64}, 2);
  const Tensor<float> w = ember::randn<float>(Shape{64}, 3), b = ember::randn<float>(Shape{64}, 4);
  const DropoutOptions d{0.25, 11, 40};
  const std::uint64_t before = ember::launch_count();
  const Tensor<float> y = ember::dropout_add_layer_norm(x, r, w, b, 1e-12, d);
  CHECK(ember::launch_count() - before == 1);
  // The unfused layers, the dropout drawing from the same stream.
  const Tensor<float> dropped = ember::dropout(x, d.p, true, d.seed, d.offset);
  require_close(y,
                Tensor<double>(ember::cast<double>(
                    ember::layer_norm(Tensor<float>(dropped + r), w, b, 1e-12))),
                1e-5);
  // p = 1 drops everything: the residual alone is normalised.
  require_close(ember::dropout_add_layer_norm(x, r, w, b, 1e-5, DropoutOptions{1.0, 1, 0}),
                Tensor<double>(ember::cast<double>(ember::layer_norm(r, w, b, 1e-5))), 1e-5);
  // A transposed input is read through its strides (made contiguous first).
  const Tensor<float> xt = ember::randn<float>(Shape{64, 16}, 5);
  require_close(ember::dropout_add_layer_norm(xt.transpose(0, 1), r, w, b),
                Tensor<double>(ember::cast<double>(
                    ember::layer_norm(Tensor<float>(xt.transpose(0, 1) + r), w, b))),
                1e-5);
}

TEST_CASE("gradcheck: dropout_add_layer_norm", "[ops][norm][dropout][gradcheck]") {
  const Tensor<double> x = rand_tensor(Shape{3, 2, 5}, 21), r = rand_tensor(Shape{3, 2, 5}, 22);
  const Tensor<double> w = rand_tensor(Shape{5}, 23, 1.0), b = rand_tensor(Shape{5}, 24);
  for (double p : {0.0, 0.4}) {
    const DropoutOptions d{p, 3, 9};
    auto all = ember::gradcheck(
        [&](const Vars& v) {
          return Var<double>(
              ember::square(ember::dropout_add_layer_norm(v[0], v[1], v[2], v[3], 1e-5, d)));
        },
        {x, r, w, b});
    INFO("p " << p << ": " << all);
    REQUIRE(all);
    // A constant residual and weight, no bias.
    auto some = ember::gradcheck(
        [&](const Vars& v) {
          return Var<double>(
              ember::tanh(ember::dropout_add_layer_norm(v[0], r, w, Tensor<double>(), 1e-5, d)));
        },
        {x});
    INFO("p " << p << ": " << some);
    REQUIRE(some);
  }
}

TEST_CASE("dropout_add_layer_norm: gradients equal the unfused layers'", "[ops][norm][dropout]") {
  const Tensor<float> x0 = ember::randn<float>(Shape{6, 40}, 31),
                      r0 = ember::randn<float>(Shape{6, 40}, 32);
  const Tensor<float> w0 = ember::randn<float>(Shape{40}, 33),
                      b0 = ember::randn<float>(Shape{40}, 34);
  const Tensor<float> g = ember::randn<float>(Shape{6, 40}, 35);
  const DropoutOptions d{0.2, 5, 0};
  auto fused = std::vector<Var<float>>{ember::param(x0), ember::param(r0), ember::param(w0),
                                       ember::param(b0)};
  auto plain = std::vector<Var<float>>{ember::param(x0), ember::param(r0), ember::param(w0),
                                       ember::param(b0)};
  ember::sum(ember::dropout_add_layer_norm(fused[0], fused[1], fused[2], fused[3], 1e-5, d) * g)
      .backward();
  ember::sum(ember::layer_norm(
                 Var<float>(ember::dropout(plain[0], d.p, true, d.seed, d.offset) + plain[1]),
                 plain[2], plain[3], 1e-5) *
             g)
      .backward();
  for (std::size_t i = 0; i < fused.size(); ++i) {
    INFO("operand " << i);
    require_close(fused[i].grad(), Tensor<double>(ember::cast<double>(plain[i].grad())), 1e-4);
  }
}

TEST_CASE("nn::dropout_add_layer_norm: LayerNorm(Dropout(x) + residual), fused", "[nn][norm]") {
  ember::nn::manual_seed(4);
  ember::nn::LayerNorm<double> ln(5, {.eps = 1e-6});
  ember::nn::Dropout<double> drop(0.5);
  Tensor<double> weight = ln.weight.value();  // a handle on the parameter's storage
  weight.copy_(rand_tensor(Shape{5}, 41, 1.0));
  const Var<double> x(rand_tensor(Shape{2, 3, 5}, 42)), r(rand_tensor(Shape{2, 3, 5}, 43));
  drop.eval();
  require_close(ember::nn::dropout_add_layer_norm(x, r, drop, ln).value(),
                ln.forward(Var<double>(x + r)).value(), 1e-12);
  // In training the dropout's stream comes from reserve_random, as nn::Dropout's does.
  drop.train();
  ember::nn::manual_seed(9);
  const Tensor<double> fused = ember::nn::dropout_add_layer_norm(x, r, drop, ln).value();
  ember::nn::manual_seed(9);
  require_close(fused, ln.forward(Var<double>(drop.forward(x) + r)).value(), 1e-12);
  REQUIRE_THROWS_AS(
      ember::nn::dropout_add_layer_norm(Var<double>(rand_tensor(Shape{2, 4}, 44)),
                                        Var<double>(rand_tensor(Shape{2, 4}, 45)), drop, ln),
      ember::Error);
}

TEST_CASE("dropout_add_layer_norm: bad input is an ember::Error", "[ops][norm][dropout]") {
  const Tensor<float> x = ember::randn<float>(Shape{2, 4}, 1), w = ember::ones<float>(Shape{4});
  const Tensor<float> b = ember::zeros<float>(Shape{4});
  using ember::dropout_add_layer_norm;
  REQUIRE_THROWS_AS(dropout_add_layer_norm(x, ember::randn<float>(Shape{2, 3}, 2), w, b),
                    ember::Error);
  REQUIRE_THROWS_AS(dropout_add_layer_norm(x, x, ember::ones<float>(Shape{2, 4}), b), ember::Error);
  REQUIRE_THROWS_AS(dropout_add_layer_norm(x, x, w, ember::zeros<float>(Shape{3})), ember::Error);
  REQUIRE_THROWS_AS(dropout_add_layer_norm(x, x, w, b, 1e-5, DropoutOptions{1.5, 0, 0}),
                    ember::Error);
  REQUIRE_THROWS_AS(dropout_add_layer_norm(x, x, w, b, 0.0), ember::Error);
  const Tensor<float> scalar = ember::full<float>(Shape{}, 1.0f);
  REQUIRE_THROWS_AS(dropout_add_layer_norm(scalar, scalar, Tensor<float>(), Tensor<float>()),
                    ember::Error);
}

}  // namespace test_ops_dropout_add_layer_norm
}  // namespace
