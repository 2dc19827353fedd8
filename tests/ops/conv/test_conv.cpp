// conv2d: against a naive float64 convolution (loops straight from the definition) over strides,
// paddings, dilations, groups, odd sizes, NCHW and channels-last, the four dtypes; ONNX's Conv
// reference data; gradcheck of input, weight and bias; errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "support/conv_cases.hpp"
#include "support/onnx.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_ops_conv {

using ember::bf16;
using ember::Conv2dOptions;
using ember::MemoryFormat;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;
using ember::testing::kConvCases;
using ember::testing::naive_conv;

Tensor<double> rand_tensor(const Shape& s, std::uint32_t seed) {
  return ember::testing::uniform_tensor(s, -1, 1, seed);
}

template <class T>
void require_close(const Tensor<T>& got, const Tensor<double>& want, double scale, double tol) {
  ember::testing::require_close(got, want, tol, scale);
}

TEMPLATE_TEST_CASE("conv2d against a naive float64 convolution", "[ops][conv]", float, double, bf16,
                   ember::half) {
  using T = TestType;
  const double tol = std::is_same_v<T, double>  ? 1e-13
                     : std::is_same_v<T, float> ? 1e-6
                     : std::is_same_v<T, bf16>  ? 1.0 / 128
                                                : 1.0 / 1024;
  std::uint32_t seed = 1;
  for (const auto& c : kConvCases) {
    INFO("x " << c.x.str() << " w " << c.w.str());
    const Tensor<T> x = ember::cast<T>(rand_tensor(c.x, seed++));
    const Tensor<T> w = ember::cast<T>(rand_tensor(c.w, seed++));
    const Tensor<T> b = ember::cast<T>(rand_tensor(Shape{c.w[0]}, seed++));
    const Tensor<double> want =
        naive_conv(Tensor<double>(ember::cast<double>(x)), Tensor<double>(ember::cast<double>(w)),
                   Tensor<double>(ember::cast<double>(b)), c.opt);
    const double k = static_cast<double>(c.w[1] * c.w[2] * c.w[3]);
    require_close(ember::conv2d(x, w, b, c.opt), want, k, tol);
    // Channels-last in, channels-last out, the same values.
    const Tensor<T> y = ember::conv2d(x.contiguous(MemoryFormat::channels_last), w, b, c.opt);
    if (y.numel() > 0 && y.size(1) > 1 && y.size(2) * y.size(3) > 1) {
      REQUIRE(y.is_contiguous(MemoryFormat::channels_last));
    }
    require_close(y, want, k, tol);
  }
}

TEMPLATE_TEST_CASE("conv2d backward: channels-last gradients equal NCHW ones", "[ops][conv]", float,
                   double) {
  using T = TestType;
  const double tol = std::is_same_v<T, double> ? 1e-13 : 1e-5;
  std::uint32_t seed = 61;
  for (const auto& c : kConvCases) {
    INFO("x " << c.x.str() << " w " << c.w.str());
    const Tensor<T> x = ember::cast<T>(rand_tensor(c.x, seed++));
    const Tensor<T> w = ember::cast<T>(rand_tensor(c.w, seed++));
    const Tensor<T> y = ember::conv2d(x, w, c.opt);
    const Tensor<T> dy = ember::cast<T>(rand_tensor(y.shape(), seed++));
    const auto [dx, dw] = ember::ops::conv2d_backward(x, w, dy, c.opt, true, true);
    // x and dy channels-last; the weight a transposed-and-back view (strided, as a weight
    // shared with another layout could be).
    const Tensor<T> wv = w.transpose(2, 3).contiguous().transpose(2, 3);
    const auto [dx_cl, dw_cl] =
        ember::ops::conv2d_backward(x.contiguous(MemoryFormat::channels_last), wv,
                                    dy.contiguous(MemoryFormat::channels_last), c.opt, true, true);
    if (dx.numel() > 0 && c.x[1] > 1 && c.x[2] * c.x[3] > 1) {
      REQUIRE(dx_cl.is_contiguous(MemoryFormat::channels_last));
    }
    const double k = static_cast<double>(c.w[0] * c.w[2] * c.w[3]);
    require_close(dx_cl, Tensor<double>(ember::cast<double>(dx)), k, tol);
    require_close(dw_cl, Tensor<double>(ember::cast<double>(dw)), k, tol);
    // Only one of the two asked for.
    const auto [dx_only, no_dw] = ember::ops::conv2d_backward(
        x.contiguous(MemoryFormat::channels_last), w, dy, c.opt, true, false);
    REQUIRE_FALSE(no_dw.defined());
    require_close(dx_only, Tensor<double>(ember::cast<double>(dx)), k, tol);
  }
}

TEST_CASE("conv2d backward: a batch's weight gradient is the sum of its images'", "[ops][conv]") {
  // Five images: more than the threads, so some thread sums several (and the parts are added
  // across threads), in both memory formats.
  std::uint32_t seed = 81;
  for (const auto& c : kConvCases) {
    INFO("x " << c.x.str() << " w " << c.w.str());
    Shape xs = c.x;
    xs[0] = 5;
    const Tensor<double> x = rand_tensor(xs, seed++), w = rand_tensor(c.w, seed++);
    const Tensor<double> dy = rand_tensor(ember::conv2d(x, w, c.opt).shape(), seed++);
    std::vector<double> want(static_cast<std::size_t>(w.numel()), 0.0);
    for (std::int64_t n = 0; n < 5; ++n) {
      const auto one = ember::ops::conv2d_backward(
          x.narrow(0, n, 1).contiguous(), w, dy.narrow(0, n, 1).contiguous(), c.opt, false, true);
      const std::vector<double> part = one.second.to_vector();
      for (std::size_t i = 0; i < want.size(); ++i) want[i] += part[i];
    }
    for (const MemoryFormat f : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
      const auto all =
          ember::ops::conv2d_backward(x.contiguous(f), w, dy.contiguous(f), c.opt, false, true);
      require_close(all.second, ember::from_vector<double>(want, c.w), 5, 1e-13);
    }
  }
}

TEST_CASE("conv2d: bad shapes are errors that name them", "[ops][conv]") {
  const Tensor<float> x = ember::zeros<float>(Shape{1, 4, 5, 5});
  REQUIRE_THROWS_WITH(ember::conv2d(x, ember::zeros<float>(Shape{2, 3, 3, 3})),
                      Catch::Contains("[2, 3, 3, 3]"));
  REQUIRE_THROWS_WITH(ember::conv2d(x, ember::zeros<float>(Shape{3, 2, 3, 3}),
                                    Conv2dOptions{{1, 1}, {0, 0}, {1, 1}, 2}),
                      Catch::Contains("groups"));
  REQUIRE_THROWS_WITH(ember::conv2d(x, ember::zeros<float>(Shape{2, 4, 7, 3})),
                      Catch::Contains("larger than the padded input"));
  REQUIRE_THROWS_AS(
      ember::conv2d(ember::zeros<float>(Shape{4, 5, 5}), ember::zeros<float>(Shape{2, 4, 3, 3})),
      ember::Error);
  REQUIRE_THROWS_AS(
      ember::conv2d(x, ember::zeros<float>(Shape{2, 4, 3, 3}), ember::zeros<float>(Shape{3})),
      ember::Error);
  REQUIRE_THROWS_AS(ember::conv2d(x, ember::zeros<float>(Shape{2, 4, 3, 3}), Conv2dOptions{{0, 1}}),
                    ember::Error);
}

TEST_CASE("conv2d: ONNX's Conv reference data", "[ops][conv][onnx]") {
  namespace onnx = ember::testing::onnx;
  if (!onnx::available("test_basic_conv_with_padding")) {
    WARN("libonnx-testdata is not installed: ONNX reference data not checked");
    return;
  }
  const auto tensor = onnx::to_tensor<double>;
  // The symmetric-padding cases (ONNX's auto_pad and asymmetric pads are not conv2d's options).
  for (const char* name : {"test_basic_conv_with_padding", "test_basic_conv_without_padding",
                           "test_conv_with_strides_no_padding", "test_conv_with_strides_padding"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    const auto pads = t.attributes.get_ints("pads", {0, 0, 0, 0});
    const auto strides = t.attributes.get_ints("strides", {1, 1});
    const auto dil = t.attributes.get_ints("dilations", {1, 1});
    REQUIRE(pads.size() == 4);
    REQUIRE(pads[0] == pads[2]);
    REQUIRE(pads[1] == pads[3]);
    Conv2dOptions o;
    o.padding = {pads[0], pads[1]};
    o.stride = {strides[0], strides[1]};
    o.dilation = {dil[0], dil[1]};
    o.groups = static_cast<std::int64_t>(t.attributes.get("group", 1));
    const Tensor<double> y = ember::conv2d(tensor(t.inputs[0]), tensor(t.inputs[1]), o);
    require_close(y, tensor(t.outputs[0]), 9, 1e-6);
  }
}

TEST_CASE("gradcheck: conv2d input, weight and bias", "[ops][conv][gradcheck]") {
  std::uint32_t seed = 31;
  for (const auto& c : kConvCases) {
    if (c.x[0] == 0) continue;
    INFO("x " << c.x.str() << " w " << c.w.str());
    // Small enough for central differences over every element.
    Shape xs = c.x;
    xs[0] = 1;
    auto r = ember::gradcheck(
        [&](const Vars& v) {
          return Var<double>(ember::tanh(ember::conv2d(v[0], v[1], v[2], c.opt)));
        },
        {rand_tensor(xs, seed++), rand_tensor(c.w, seed++), rand_tensor(Shape{c.w[0]}, seed++)});
    INFO(r);
    REQUIRE(r);
  }
  // Channels-last inputs (ops/conv/conv_channels_last.hpp: im2row, row2im) over every case, with
  // two images where the case has them (one image per thread).
  for (const auto& c : kConvCases) {
    if (c.x[0] == 0) continue;
    INFO("channels-last x " << c.x.str() << " w " << c.w.str());
    Shape xs = c.x;
    xs[0] = std::min<std::int64_t>(xs[0], 2);
    auto r = ember::gradcheck(
        [&](const Vars& v) {
          return Var<double>(ember::tanh(ember::conv2d(
              Var<double>(v[0].contiguous(MemoryFormat::channels_last)), v[1], v[2], c.opt)));
        },
        {rand_tensor(xs, seed++), rand_tensor(c.w, seed++), rand_tensor(Shape{c.w[0]}, seed++)});
    INFO(r);
    REQUIRE(r);
  }
  // A channels-last input, a constant weight.
  const Tensor<double> w = rand_tensor(Shape{3, 2, 2, 2}, 41);
  auto r2 = ember::gradcheck(
      [&](const Vars& v) {
        return ember::conv2d(Var<double>(v[0].contiguous(MemoryFormat::channels_last)), w,
                             Conv2dOptions{{2, 2}, {1, 1}});
      },
      {rand_tensor(Shape{2, 2, 4, 5}, 42)});
  INFO(r2);
  REQUIRE(r2);
}

}  // namespace test_ops_conv
}  // namespace
