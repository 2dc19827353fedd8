// layer_norm and batch_norm: against the textbook definitions in float64 (over shapes, with and
// without affine parameters, NCHW and channels-last, training and evaluation, the running
// statistics PyTorch keeps), dtypes; ONNX's LayerNormalization and BatchNormalization reference
// data; gradcheck; errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "support/onnx.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_ops_normalization {

using ember::bf16;
using ember::Dims;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;

Tensor<double> rand_tensor(const Shape& s, std::uint32_t seed, double mean = 0) {
  return ember::testing::normal_tensor(s, mean, 1.5, seed);
}

// Normalises x over `axes` (biased variance), then y = xh * w + b with w, b broadcast as given.
Tensor<double> naive_normalize(const Tensor<double>& x, const Dims& axes, double eps,
                               const Tensor<double>& w, const Tensor<double>& b) {
  const Tensor<double> mean = ember::mean(x, axes, true);
  const Tensor<double> var = ember::mean(ember::square(x - mean), axes, true);
  Tensor<double> y = Tensor<double>((x - mean) / ember::sqrt(var + eps));
  if (w.defined()) y = Tensor<double>(y * w);
  if (b.defined()) y = Tensor<double>(y + b);
  return y;
}

using ember::testing::require_close;

Tensor<double> as_tensor(const ember::testing::onnx::TensorData& d) {
  return ember::testing::onnx::to_tensor<double>(d);
}

TEST_CASE("layer_norm against the definition", "[ops][norm]") {
  const Tensor<double> x = rand_tensor(Shape{3, 4, 5}, 1, 2.0);
  const Tensor<double> w = rand_tensor(Shape{4, 5}, 2), b = rand_tensor(Shape{4, 5}, 3);
  require_close(ember::layer_norm(x, w, b), naive_normalize(x, Dims{1, 2}, 1e-5, w, b), 1e-13);
  const Tensor<double> w1 = rand_tensor(Shape{5}, 4);
  require_close(ember::layer_norm(x, w1, Tensor<double>(), 1e-3),
                naive_normalize(x, Dims{2}, 1e-3, w1, Tensor<double>()), 1e-13);
  // A strided input, and bf16 / float within their precision.
  require_close(ember::layer_norm(x.transpose(0, 1), w1, w1),
                naive_normalize(x.transpose(0, 1), Dims{2}, 1e-5, w1, w1), 1e-13);
  const Tensor<bf16> x16 = ember::cast<bf16>(x), w16 = ember::cast<bf16>(w1);
  require_close(ember::layer_norm(x16, w16, Tensor<bf16>()),
                naive_normalize(Tensor<double>(ember::cast<double>(x16)), Dims{2}, 1e-5,
                                Tensor<double>(ember::cast<double>(w16)), Tensor<double>()),
                1.0 / 128);
  REQUIRE_THROWS_AS(ember::layer_norm(x, rand_tensor(Shape{4}, 5), Tensor<double>()), ember::Error);
}

TEST_CASE("batch_norm: training, running statistics, evaluation, channels-last", "[ops][norm]") {
  const Tensor<double> x = rand_tensor(Shape{4, 3, 5, 2}, 11, 1.0);
  const Tensor<double> w = rand_tensor(Shape{3}, 12), b = rand_tensor(Shape{3}, 13);
  const Tensor<double> w4 = w.reshape({1, 3, 1, 1}), b4 = b.reshape({1, 3, 1, 1});
  Tensor<double> rm = rand_tensor(Shape{3}, 14),
                 rv = Tensor<double>(ember::exp(rand_tensor(Shape{3}, 15)));
  const Tensor<double> rm0 = rm.clone(), rv0 = rv.clone();
  const Dims axes{0, 2, 3};
  require_close(ember::batch_norm(x, w, b, rm, rv, true, 0.2),
                naive_normalize(x, axes, 1e-5, w4, b4), 1e-13);
  // PyTorch's running statistics: (1 - m) old + m batch, with the unbiased batch variance.
  const double n = 4 * 5 * 2;
  const Tensor<double> bm = ember::mean(x, axes), bv = ember::var(x, axes);
  require_close(rm, Tensor<double>(rm0 * 0.8 + bm * 0.2), 1e-14);
  require_close(rv, Tensor<double>(rv0 * 0.8 + bv * 0.2), 1e-13);
  (void)n;
  // Evaluation uses the running statistics.
  require_close(
      ember::batch_norm(x, w, b, rm, rv, false),
      Tensor<double>(
          (x - rm.reshape({1, 3, 1, 1})) / ember::sqrt(rv.reshape({1, 3, 1, 1}) + 1e-5) * w4 + b4),
      1e-13);
  // A channels-last input gives the same values.
  const Tensor<double> xl = x.contiguous(ember::MemoryFormat::channels_last);
  REQUIRE(xl.stride(1) == 1);
  Tensor<double> rm2 = rm0.clone(), rv2 = rv0.clone();
  require_close(ember::batch_norm(xl, w, b, rm2, rv2, true, 0.2),
                naive_normalize(x, axes, 1e-5, w4, b4), 1e-13);
  REQUIRE_THROWS_AS(ember::batch_norm(x, rand_tensor(Shape{4}, 16), b, rm, rv, true), ember::Error);
  REQUIRE_THROWS_AS(ember::batch_norm(x, w, b, Tensor<double>(), Tensor<double>(), false),
                    ember::Error);
}

TEST_CASE("layer_norm and batch_norm: ONNX's reference data", "[ops][norm][onnx]") {
  namespace onnx = ember::testing::onnx;
  if (!onnx::available("test_layer_normalization_2d_axis0")) {
    WARN("libonnx-testdata is not installed: ONNX reference data not checked");
    return;
  }
  for (const char* name :
       {"test_layer_normalization_2d_axis0", "test_layer_normalization_2d_axis1",
        "test_layer_normalization_2d_axis_negative_1", "test_layer_normalization_3d_axis0_epsilon",
        "test_layer_normalization_3d_axis1_epsilon", "test_layer_normalization_3d_axis2_epsilon",
        "test_layer_normalization_4d_axis0", "test_layer_normalization_4d_axis2",
        "test_layer_normalization_4d_axis_negative_3", "test_layer_normalization_default_axis"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    const Tensor<double> x = as_tensor(t.inputs[0]), w = as_tensor(t.inputs[1]);
    const Tensor<double> b = t.inputs.size() > 2 ? as_tensor(t.inputs[2]) : Tensor<double>();
    const double eps = t.attributes.get("epsilon", 1e-5);
    // Float data and float32 reference arithmetic: float's precision.
    require_close(ember::layer_norm(x, w, b, eps), as_tensor(t.outputs[0]), 1e-5);
  }
  for (const char* name :
       {"test_batchnorm_epsilon", "test_batchnorm_example", "test_batchnorm_epsilon_training_mode",
        "test_batchnorm_example_training_mode"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    const bool training = t.attributes.get("training_mode", 0) != 0;
    const Tensor<double> x = as_tensor(t.inputs[0]);
    Tensor<double> rm = as_tensor(t.inputs[3]).clone(), rv = as_tensor(t.inputs[4]).clone();
    const double eps = t.attributes.get("epsilon", 1e-5);
    // ONNX's momentum weighs the old statistics (PyTorch's weighs the new ones).
    const double momentum = 1.0 - t.attributes.get("momentum", 0.9);
    const Tensor<double> y = ember::batch_norm(x, as_tensor(t.inputs[1]), as_tensor(t.inputs[2]),
                                               rm, rv, training, momentum, eps);
    require_close(y, as_tensor(t.outputs[0]), 1e-5);
    if (training) require_close(rm, as_tensor(t.outputs[1]), 1e-5);
  }
}

TEST_CASE("gradcheck: layer_norm and batch_norm", "[ops][norm][gradcheck]") {
  const Tensor<double> x = rand_tensor(Shape{3, 2, 4}, 21);
  const Tensor<double> w = rand_tensor(Shape{2, 4}, 22), b = rand_tensor(Shape{2, 4}, 23);
  auto r1 = ember::gradcheck(
      [](const Vars& v) { return Var<double>(ember::square(ember::layer_norm(v[0], v[1], v[2]))); },
      {x, w, b});
  INFO(r1);
  REQUIRE(r1);
  auto r2 = ember::gradcheck(
      [&](const Vars& v) {
        // A strided input, a constant weight, no bias.
        return Var<double>(
            ember::tanh(ember::layer_norm(v[0].transpose(0, 1), w, Tensor<double>())));
      },
      {rand_tensor(Shape{2, 3, 4}, 24)});
  INFO(r2);
  REQUIRE(r2);
  const Tensor<double> c = rand_tensor(Shape{2}, 25), d = rand_tensor(Shape{2}, 26);
  for (bool training : {true, false}) {
    Tensor<double> rm = ember::zeros<double>(Shape{2}), rv = ember::ones<double>(Shape{2});
    auto r3 = ember::gradcheck(
        [&](const Vars& v) {
          return Var<double>(ember::square(ember::batch_norm(v[0], v[1], v[2], rm, rv, training)));
        },
        {x, c, d});
    INFO("training " << training << ": " << r3);
    REQUIRE(r3);
  }
}

namespace {
// batch_norm's gradients in training from their textbook formulas, in float64: with
// xh = (x - mean) rstd over axes {0, 2, 3},
//   dx = rstd w (g - mean(g) - xh mean(g xh)),  dw = sum(g xh),  db = sum(g).
struct BatchNormGrads {
  Tensor<double> gx, gw, gb;
};
BatchNormGrads batch_norm_grads(const Tensor<double>& x, const Tensor<double>& w,
                                const Tensor<double>& g, double eps) {
  const Dims axes{0, 2, 3};
  const Shape c{1, x.size(1), 1, 1};
  const Tensor<double> mean = ember::mean(x, axes, true);
  const Tensor<double> rstd =
      Tensor<double>(1.0 / ember::sqrt(ember::mean(ember::square(x - mean), axes, true) + eps));
  const Tensor<double> xh = Tensor<double>((x - mean) * rstd);
  const Tensor<double> gx = Tensor<double>(
      rstd * w.reshape(c) *
      (g - ember::mean(g, axes, true) - xh * ember::mean(Tensor<double>(g * xh), axes, true)));
  return {gx, ember::sum(Tensor<double>(g * xh), axes), ember::sum(g, axes)};
}

template <class T>
void check_batch_norm_grads(const Shape& shape, ember::MemoryFormat format) {
  INFO(ember::dtype_name<T> << " " << shape.str() << " format " << static_cast<int>(format));
  const std::int64_t C = shape[1];
  // Inputs rounded to T first, so the reference sees what the operator sees.
  const auto in_t = [](const Tensor<double>& t) { return Tensor<T>(ember::cast<T>(t)); };
  const auto back = [](const Tensor<T>& t) { return Tensor<double>(ember::cast<double>(t)); };
  const Tensor<T> x = in_t(rand_tensor(shape, 61, 0.5)), g = in_t(rand_tensor(shape, 62));
  const Tensor<T> w = in_t(rand_tensor(Shape{C}, 63)), b = in_t(rand_tensor(Shape{C}, 64));
  const BatchNormGrads want = batch_norm_grads(back(x), back(w), back(g), 1e-5);
  auto xv = ember::param(x.contiguous(format)), wv = ember::param(w), bv = ember::param(b);
  Tensor<T> rm = ember::zeros<T>(Shape{C}), rv = ember::ones<T>(Shape{C});
  ember::batch_norm(xv, wv, bv, rm, rv, true).backward(g.contiguous(format));
  const double tol = ember::testing::dtype_tolerance<T>();
  const double sums = std::sqrt(static_cast<double>(x.numel() / C));  // a sum's typical size
  require_close(xv.grad(), want.gx, tol);
  require_close(wv.grad(), want.gw, tol, sums);
  require_close(bv.grad(), want.gb, tol, sums);
  // Without the affine parameters: dx with w = 1.
  auto xn = ember::param(x.contiguous(format));
  ember::batch_norm(xn, Tensor<T>(), Tensor<T>(), rm, rv, true).backward(g.contiguous(format));
  require_close(xn.grad(),
                batch_norm_grads(back(x), ember::ones<double>(Shape{C}), back(g), 1e-5).gx, tol);
}
}  // namespace

TEST_CASE("batch_norm's gradients against their formulas: dtypes, layouts, channel counts",
          "[ops][norm]") {
  // Dense NCHW with a channel per thread takes the CPU's channel loop, channels-last its loops
  // over runs of rows (a run of 64 rows of 4 channels, 85 of 3, 1 of 260; the last run short);
  // a single NCHW channel takes the reductions. All against the same float64 formulas.
  for (const Shape& shape :
       {Shape{5, 4, 6, 7}, Shape{3, 1, 5, 5}, Shape{2, 3, 1, 1}, Shape{2, 260, 2, 3}}) {
    for (const auto format :
         {ember::MemoryFormat::contiguous, ember::MemoryFormat::channels_last}) {
      check_batch_norm_grads<double>(shape, format);
      check_batch_norm_grads<float>(shape, format);
      check_batch_norm_grads<bf16>(shape, format);
      check_batch_norm_grads<ember::half>(shape, format);
    }
  }
}

TEST_CASE("batch_norm's channel loop gives the statistics the reductions give", "[ops][norm]") {
  // A tensor large enough that rounding order matters in float, with a large mean (the two-pass
  // variance must not lose it to cancellation).
  const Tensor<float> x = ember::cast<float>(rand_tensor(Shape{16, 8, 14, 14}, 71, 100.0));
  Tensor<float> rm = ember::zeros<float>(Shape{8}), rv = ember::ones<float>(Shape{8});
  Tensor<float> rm2 = rm.clone(), rv2 = rv.clone();
  REQUIRE(ember::ops::channel_loop_applies(x));
  const Tensor<float> y = ember::batch_norm(x, Tensor<float>(), Tensor<float>(), rm, rv, true, 1.0);
  const Tensor<float> xl = x.contiguous(ember::MemoryFormat::channels_last);
  REQUIRE_FALSE(ember::ops::channel_loop_applies(xl));
  const Tensor<float> yl =
      ember::batch_norm(xl, Tensor<float>(), Tensor<float>(), rm2, rv2, true, 1.0);
  const Tensor<double> want = naive_normalize(Tensor<double>(ember::cast<double>(x)), Dims{0, 2, 3},
                                              1e-5, Tensor<double>(), Tensor<double>());
  require_close(y, want, 1e-4);
  require_close(yl, want, 1e-4);
  // momentum 1: the running statistics are the batch's (variance unbiased).
  require_close(rm, Tensor<double>(ember::cast<double>(rm2)), 1e-6);
  require_close(rv, Tensor<double>(ember::cast<double>(rv2)), 1e-5);
}

TEST_CASE("batch_norm_add_relu: relu(batch_norm(x) + residual) in one pass, and its gradients",
          "[ops][norm]") {
  const Tensor<double> x = rand_tensor(Shape{3, 2, 4, 3}, 51),
                       res = rand_tensor(Shape{3, 2, 4, 3}, 52);
  const Tensor<double> w = rand_tensor(Shape{2}, 53), b = rand_tensor(Shape{2}, 54);
  for (bool training : {true, false}) {
    Tensor<double> rm = rand_tensor(Shape{2}, 55),
                   rv = Tensor<double>(ember::exp(rand_tensor(Shape{2}, 56)));
    Tensor<double> rm2 = rm.clone(), rv2 = rv.clone();
    const Tensor<double> want =
        Tensor<double>(ember::relu(ember::batch_norm(x, w, b, rm2, rv2, training) + res));
    // Channels-last in, channels-last out; the running statistics updated as batch_norm does.
    const Tensor<double> got = ember::batch_norm_add_relu(
        x.contiguous(ember::MemoryFormat::channels_last), res, w, b, rm, rv, training);
    REQUIRE(got.memory_format() == ember::MemoryFormat::channels_last);
    require_close(got, want, 1e-13);
    require_close(rm, rm2, 1e-14);
    require_close(rv, rv2, 1e-14);
    const std::uint64_t l0 = ember::launch_count();
    (void)ember::batch_norm_add_relu(x, Tensor<double>(), w, b, rm, rv, false);
    CHECK(ember::launch_count() - l0 <= 3);  // the statistics' small passes and one over x
    Tensor<double> rm3 = ember::zeros<double>(Shape{2}), rv3 = ember::ones<double>(Shape{2});
    auto r = ember::gradcheck(
        [&](const Vars& v) {
          return ember::batch_norm_add_relu(v[0], v[3], v[1], v[2], rm3, rv3, training);
        },
        {x, w, b, res});
    INFO("training " << training << ": " << r);
    REQUIRE(r);
    // Channels-last x and residual: the channels-last loops, the ReLU's mask in the backward's.
    const auto cl = [](const Var<double>& v) {
      return Var<double>(v.contiguous(ember::MemoryFormat::channels_last));
    };
    auto r_cl = ember::gradcheck(
        [&](const Vars& v) {
          return ember::batch_norm_add_relu(cl(v[0]), cl(v[3]), v[1], v[2], rm3, rv3, training);
        },
        {x, w, b, res});
    INFO("channels-last, training " << training << ": " << r_cl);
    REQUIRE(r_cl);
    // No residual: the backward recomputes the ReLU's mask from x and does not read y.
    for (const bool channels_last : {false, true}) {
      auto r_plain = ember::gradcheck(
          [&](const Vars& v) {
            return ember::batch_norm_add_relu(channels_last ? cl(v[0]) : v[0], Tensor<double>(),
                                              v[1], v[2], rm3, rv3, training);
          },
          {x, w, b});
      INFO("no residual, channels-last " << channels_last << ", training " << training << ": "
                                         << r_plain);
      REQUIRE(r_plain);
    }
  }
  Tensor<double> rm = ember::zeros<double>(Shape{2}), rv = ember::ones<double>(Shape{2});
  REQUIRE_THROWS_AS(
      ember::batch_norm_add_relu(x, rand_tensor(Shape{3, 2, 4, 2}, 57), w, b, rm, rv, true),
      ember::Error);
  REQUIRE_THROWS_AS(ember::batch_norm_add_relu(x, res, Tensor<double>(), b, rm, rv, true),
                    ember::Error);
}

TEST_CASE("batch_norm_add_relu without a residual: the mask from x is the ReLU's own",
          "[ops][norm]") {
  // In float, relu(batch_norm(x)) as two operators (the ReLU's backward reads its output) and
  // as one (the mask recomputed from x) give the same gradients: the same elements pass.
  const Shape shape{8, 16, 6, 6};
  const Tensor<float> x = ember::cast<float>(rand_tensor(shape, 81));
  const Tensor<float> g = ember::cast<float>(rand_tensor(shape, 82));
  const Tensor<float> w = ember::cast<float>(rand_tensor(Shape{16}, 83));
  const Tensor<float> b = ember::cast<float>(rand_tensor(Shape{16}, 84));
  for (const auto format : {ember::MemoryFormat::contiguous, ember::MemoryFormat::channels_last}) {
    INFO("format " << static_cast<int>(format));
    Tensor<float> rm = ember::zeros<float>(Shape{16}), rv = ember::ones<float>(Shape{16});
    auto x1 = ember::param(x.contiguous(format)), w1 = ember::param(w), b1 = ember::param(b);
    auto x2 = ember::param(x.contiguous(format)), w2 = ember::param(w), b2 = ember::param(b);
    const Var<float> fused = ember::batch_norm_add_relu(x1, Tensor<float>(), w1, b1, rm, rv, true);
    const Var<float> composed = ember::relu(ember::batch_norm(x2, w2, b2, rm, rv, true));
    REQUIRE(fused.value().to_vector() == composed.value().to_vector());
    fused.backward(g.contiguous(format));
    composed.backward(g.contiguous(format));
    const double tol = ember::testing::dtype_tolerance<float>();
    const double sums = std::sqrt(static_cast<double>(x.numel() / 16));  // a sum's typical size
    require_close(x1.grad(), Tensor<double>(ember::cast<double>(x2.grad())), tol);
    require_close(w1.grad(), Tensor<double>(ember::cast<double>(w2.grad())), tol, sums);
    require_close(b1.grad(), Tensor<double>(ember::cast<double>(b2.grad())), tol, sums);
  }
}

TEST_CASE("batch_norm's channel loops let a NaN through, as the elementwise passes do",
          "[ops][norm]") {
  // Evaluation (fixed statistics), so the NaN reaches only its own output element.
  for (const auto format : {ember::MemoryFormat::contiguous, ember::MemoryFormat::channels_last}) {
    std::vector<float> v(2 * 4 * 3 * 3, 0.5f);
    v[5] = std::nanf("");
    const Tensor<float> x = ember::from_vector<float>(v, Shape{2, 4, 3, 3}).contiguous(format);
    const Tensor<float> w = ember::ones<float>(Shape{4}), b = ember::zeros<float>(Shape{4});
    Tensor<float> rm = ember::zeros<float>(Shape{4}), rv = ember::ones<float>(Shape{4});
    const auto plain = ember::batch_norm(x, w, b, rm, rv, false).contiguous().to_vector();
    const auto fused = ember::batch_norm_add_relu(x, Tensor<float>(), w, b, rm, rv, false)
                           .contiguous()
                           .to_vector();
    REQUIRE(std::isnan(plain[5]));
    REQUIRE(std::isnan(fused[5]));
    REQUIRE(plain[6] > 0.4f);
  }
}

}  // namespace test_ops_normalization
}  // namespace
