// conv2d on oneDNN (ops/conv/conv_dnnl.hpp) and the choice of CPU backend
// (ops/conv/conv_backend.hpp): oneDNN's forward, input and weight gradients equal im2col + GEMM's
// within float's tolerance over every case of the conv tests in both memory formats (im2col's are
// checked against the float64 definition and gradcheck in test_conv.cpp); bf16 on oneDNN against
// float64; the backend that ran is counted; primitives are made once per shape; the weight gradient
// is the same bit for bit run to run. Without oneDNN in the build, the im2col path is all there is
// and these tests check that the choice says so.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "support/conv_cases.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_ops_conv_dnnl {

using ember::bf16;
using ember::Conv2dOptions;
using ember::MemoryFormat;
using ember::Shape;
using ember::Tensor;
using ember::ops::ConvBackend;

Tensor<double> rand_tensor(const Shape& s, std::uint32_t seed) {
  return ember::testing::uniform_tensor(s, -1, 1, seed);
}

/// Sets the CPU backend for a scope.
class BackendScope {
 public:
  explicit BackendScope(ConvBackend b) : previous_(ember::ops::set_cpu_conv_backend(b)) {}
  ~BackendScope() { ember::ops::set_cpu_conv_backend(previous_); }
  BackendScope(const BackendScope&) = delete;
  BackendScope& operator=(const BackendScope&) = delete;

 private:
  ConvBackend previous_;
};

struct Result {
  Tensor<float> y, dx, dw;
};

Result run(ConvBackend b, const Tensor<float>& x, const Tensor<float>& w, const Tensor<float>& dy,
           const Conv2dOptions& opt) {
  const BackendScope scope(b);
  Result r;
  r.y = ember::conv2d(x, w, opt);
  std::tie(r.dx, r.dw) = ember::ops::conv2d_backward(x, w, dy, opt, true, true);
  return r;
}

// ResNet's convolutions: oneDNN has JIT kernels for all three passes of each.
const std::vector<ember::testing::ConvCase> kResNetCases = {
    {{4, 16, 8, 8}, {16, 16, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},  // a basic block's 3x3
    {{4, 16, 8, 8}, {32, 16, 1, 1}, {{2, 2}, {0, 0}, {1, 1}, 1}},  // the downsampling 1x1
    {{2, 3, 16, 16}, {8, 3, 7, 7}, {{2, 2}, {3, 3}, {1, 1}, 1}},   // the stem
    {{2, 32, 6, 6}, {64, 32, 1, 1}, {}},                           // a bottleneck's expansion
};

TEST_CASE("conv2d backend: the default and the choice", "[ops][conv][onednn]") {
  REQUIRE(ember::ops::cpu_conv_backend() ==
          (ember::ops::kHaveOnednn ? ConvBackend::onednn : ConvBackend::im2col));
  REQUIRE_THROWS_WITH(ember::ops::set_cpu_conv_backend(ConvBackend::cudnn),
                      Catch::Contains("not a CPU backend"));
  if (!ember::ops::kHaveOnednn) {
    REQUIRE_THROWS_WITH(ember::ops::set_cpu_conv_backend(ConvBackend::onednn),
                        Catch::Contains("oneDNN"));
    WARN("this build has no oneDNN: CPU convolutions run on im2col + GEMM only");
  }
  const BackendScope scope(ConvBackend::im2col);
  REQUIRE(ember::ops::cpu_conv_backend() == ConvBackend::im2col);
  const auto before = ember::ops::conv_calls(ConvBackend::im2col);
  const Tensor<float> x = ember::ones<float>(Shape{1, 2, 4, 4});
  (void)ember::conv2d(x, ember::ones<float>(Shape{3, 2, 3, 3}));
  REQUIRE(ember::ops::conv_calls(ConvBackend::im2col) == before + 1);
}

TEST_CASE("conv2d on oneDNN equals im2col + GEMM over every case, both formats",
          "[ops][conv][onednn]") {
  if (!ember::ops::kHaveOnednn) return;
  std::uint32_t seed = 101;
  std::vector<ember::testing::ConvCase> cases = ember::testing::kConvCases;
  cases.insert(cases.end(), kResNetCases.begin(), kResNetCases.end());
  for (const auto& c : cases) {
    for (const MemoryFormat f : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
      INFO("x " << c.x.str() << " w " << c.w.str()
                << (f == MemoryFormat::channels_last ? " NHWC" : " NCHW"));
      const Tensor<float> x =
          Tensor<float>(ember::cast<float>(rand_tensor(c.x, seed++))).contiguous(f);
      const Tensor<float> w = ember::cast<float>(rand_tensor(c.w, seed++));
      const Shape ys = ember::conv2d(x, w, c.opt).shape();
      const Tensor<float> dy =
          Tensor<float>(ember::cast<float>(rand_tensor(ys, seed++))).contiguous(f);
      const auto calls = ember::ops::conv_calls(ConvBackend::onednn);
      const Result got = run(ConvBackend::onednn, x, w, dy, c.opt);
      const auto ran = ember::ops::conv_calls(ConvBackend::onednn) - calls;
      const Result want = run(ConvBackend::im2col, x, w, dy, c.opt);
      // Float sums of k products: tolerance from float's epsilon and k.
      const double k =
          static_cast<double>(c.w[1] * c.w[2] * c.w[3] * std::max<std::int64_t>(c.x[0], 1));
      const double tol = 1e-6;
      ember::testing::require_close(got.y, Tensor<double>(ember::cast<double>(want.y)), tol, k);
      ember::testing::require_close(got.dx, Tensor<double>(ember::cast<double>(want.dx)), tol, k);
      ember::testing::require_close(got.dw, Tensor<double>(ember::cast<double>(want.dw)), tol, k);
      if (got.y.numel() > 0 && c.x[1] > 1 && c.x[2] * c.x[3] > 1) {
        REQUIRE(got.y.is_contiguous(f));
        REQUIRE(got.dx.is_contiguous(f));
      }
      const bool resnet = std::find_if(kResNetCases.begin(), kResNetCases.end(),
                                       [&](const auto& r) { return r.x == c.x && r.w == c.w; }) !=
                          kResNetCases.end();
      if (resnet) REQUIRE(ran == 3);  // forward, input and weight gradients all on oneDNN
    }
  }
}

TEST_CASE("conv2d on oneDNN: the input gradient as a forward convolution", "[ops][conv][onednn]") {
  if (!ember::ops::kHaveOnednn) return;
  // Stride-1 channels-last shapes of the kind whose input gradient runs as a forward convolution
  // of dy with the flipped weights on an AVX-512 CPU (ops/conv/conv_dnnl.hpp), with C != O,
  // 5x5 kernels and unequal paddings; and two that keep oneDNN's own kernel (16 channels, a 4x4
  // output).
  struct Case {
    ember::testing::ConvCase conv;
    bool as_forward;  // on a CPU whose forward kernel is brgconv
  };
  const std::vector<Case> cases = {
      {{{2, 32, 8, 8}, {32, 32, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}}, true},
      {{{2, 32, 10, 10}, {48, 32, 5, 5}, {{1, 1}, {1, 1}, {1, 1}, 1}}, true},
      {{{1, 40, 9, 11}, {32, 40, 3, 3}, {{1, 1}, {1, 0}, {1, 1}, 1}}, true},
      {{{2, 16, 8, 8}, {16, 16, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}}, false},
      {{{2, 64, 4, 4}, {64, 64, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}}, false},
  };
  std::uint32_t seed = 401;
  for (const Case& c : cases) {
    INFO("x " << c.conv.x.str() << " w " << c.conv.w.str());
    const Tensor<float> x = Tensor<float>(ember::cast<float>(rand_tensor(c.conv.x, seed++)))
                                .contiguous(MemoryFormat::channels_last);
    const Tensor<float> w = ember::cast<float>(rand_tensor(c.conv.w, seed++));
    const Shape ys = ember::conv2d(x, w, c.conv.opt).shape();
    const Tensor<float> dy = Tensor<float>(ember::cast<float>(rand_tensor(ys, seed++)))
                                 .contiguous(MemoryFormat::channels_last);
    const Result got = run(ConvBackend::onednn, x, w, dy, c.conv.opt);
    auto& conv =
        ember::ops::onednn::convolution<float>(ember::ops::conv_geometry(x, w, c.conv.opt));
    using ember::ops::onednn::impl_name;
    const auto brgconv = [](const std::string& impl) { return impl.starts_with("brgconv"); };
    INFO("forward " << impl_name(conv.forward().pd) << ", input gradient "
                    << impl_name(conv.backward_data().pd)
                    << (conv.data_as_forward() ? " (as a forward convolution)" : ""));
    if (!c.as_forward) REQUIRE_FALSE(conv.data_as_forward());
    // Where the forward is brgconv, so is the input gradient: oneDNN's own or the forward's.
    if (c.as_forward && brgconv(impl_name(conv.forward().pd))) {
      REQUIRE(brgconv(impl_name(conv.backward_data().pd)));
    }
    const Tensor<double> dx = ember::ops::conv2d_backward(Tensor<double>(ember::cast<double>(x)),
                                                          Tensor<double>(ember::cast<double>(w)),
                                                          Tensor<double>(ember::cast<double>(dy)),
                                                          c.conv.opt, true, false)
                                  .first;
    // Float sums of O * KH * KW products.
    const double k = static_cast<double>(c.conv.w[0] * c.conv.w[2] * c.conv.w[3]);
    ember::testing::require_close(got.dx, dx, 1e-6, k);
    REQUIRE(got.dx.is_contiguous(MemoryFormat::channels_last));
  }
}

TEST_CASE("conv2d on oneDNN: 1x1 convolutions of few pixels as matrix products",
          "[ops][conv][onednn]") {
  if (!ember::ops::kHaveOnednn) return;
  // Channels-last, 1x1, stride 1, no padding: up to 1,024 output pixels (N * OH * OW) run as
  // oneDNN matmuls over the pixels (ops/conv/conv_dnnl.hpp, pointwise_as_matmul), more as
  // convolutions.
  struct Case {
    Shape x, w;
    bool products;
  };
  const std::vector<Case> cases = {
      {{3, 48, 2, 2}, {80, 48, 1, 1}, true}, {{2, 64, 8, 8}, {16, 64, 1, 1}, true},
      {{1, 24, 5, 3}, {40, 24, 1, 1}, true}, {{2, 16, 9, 9}, {32, 16, 1, 1}, true},
      {{4, 8, 16, 16}, {24, 8, 1, 1}, true}, {{1, 8, 25, 41}, {24, 8, 1, 1}, false}};
  std::uint32_t seed = 501;
  for (const Case& c : cases) {
    INFO("x " << c.x.str() << " w " << c.w.str());
    const Tensor<float> x = Tensor<float>(ember::cast<float>(rand_tensor(c.x, seed++)))
                                .contiguous(MemoryFormat::channels_last);
    const Tensor<float> w = ember::cast<float>(rand_tensor(c.w, seed++));
    const Shape ys{c.x[0], c.w[0], c.x[2], c.x[3]};
    const Tensor<float> dy = Tensor<float>(ember::cast<float>(rand_tensor(ys, seed++)))
                                 .contiguous(MemoryFormat::channels_last);
    const auto products = ember::ops::onednn::gemm_calls();
    const auto passes = ember::ops::conv_calls(ConvBackend::onednn);
    const Result got = run(ConvBackend::onednn, x, w, dy, {});
    REQUIRE(ember::ops::conv_calls(ConvBackend::onednn) == passes + 3);
    REQUIRE(ember::ops::onednn::gemm_calls() == products + (c.products ? 3 : 0));
    REQUIRE(got.y.is_contiguous(MemoryFormat::channels_last));
    REQUIRE(got.dx.is_contiguous(MemoryFormat::channels_last));
    const Tensor<double> xd = ember::cast<double>(x), wd = ember::cast<double>(w);
    const auto [dxd, dwd] = ember::ops::conv2d_backward(
        xd, wd, Tensor<double>(ember::cast<double>(dy)), {}, true, true);
    // Float sums of C, O and N * H * W products.
    ember::testing::require_close(got.y, ember::testing::naive_conv(xd, wd, Tensor<double>(), {}),
                                  1e-6, static_cast<double>(c.x[1]));
    ember::testing::require_close(got.dx, dxd, 1e-6, static_cast<double>(c.w[0]));
    ember::testing::require_close(got.dw, dwd, 1e-6, static_cast<double>(c.x[0] * c.x[2] * c.x[3]));
  }
}

TEST_CASE("conv2d on oneDNN in bf16 against float64", "[ops][conv][onednn]") {
  if (!ember::ops::kHaveOnednn) return;
  std::uint32_t seed = 201;
  for (const auto& c : kResNetCases) {
    for (const MemoryFormat f : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
      INFO("x " << c.x.str() << " w " << c.w.str());
      const Tensor<bf16> x =
          Tensor<bf16>(ember::cast<bf16>(rand_tensor(c.x, seed++))).contiguous(f);
      const Tensor<bf16> w = ember::cast<bf16>(rand_tensor(c.w, seed++));
      const Tensor<double> xd = ember::cast<double>(x), wd = ember::cast<double>(w);
      const auto calls = ember::ops::conv_calls(ConvBackend::onednn);
      const Tensor<bf16> y = ember::conv2d(x, w, c.opt);
      if (ember::ops::onednn::cpu_has_bf16()) {
        REQUIRE(ember::ops::conv_calls(ConvBackend::onednn) == calls + 1);
      }
      // bf16 inputs, float accumulation, one rounding: within bf16's half-ulp of the exact sum.
      const double k = static_cast<double>(c.w[1] * c.w[2] * c.w[3]);
      ember::testing::require_close(y, ember::testing::naive_conv(xd, wd, Tensor<double>(), c.opt),
                                    1.0 / 256 + 1e-6 * k, 1.0);
      // The gradients against float64 gradients of the same (bf16-valued) operands.
      const Tensor<bf16> dy =
          Tensor<bf16>(ember::cast<bf16>(rand_tensor(y.shape(), seed++))).contiguous(f);
      const auto [dx, dw] = ember::ops::conv2d_backward(x, w, dy, c.opt, true, true);
      const auto [dxd, dwd] = ember::ops::conv2d_backward(
          xd, wd, Tensor<double>(ember::cast<double>(dy)), c.opt, true, true);
      const double kx = static_cast<double>(c.w[0] * c.w[2] * c.w[3]);
      const double kw = static_cast<double>(c.x[0] * y.size(2) * y.size(3));
      ember::testing::require_close(dx, dxd, 1.0 / 256 + 1e-6 * kx, 1.0);
      ember::testing::require_close(dw, dwd, 1.0 / 256 + 1e-6 * kw, 1.0);
    }
  }
}

TEST_CASE("conv2d on oneDNN: primitives made once per shape, weight gradients repeatable",
          "[ops][conv][onednn]") {
  if (!ember::ops::kHaveOnednn) return;
  const auto& c = kResNetCases[0];
  for (const MemoryFormat f : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
    Shape xs = c.x;
    xs[0] = 8;
    const Tensor<float> x = Tensor<float>(ember::cast<float>(rand_tensor(xs, 301))).contiguous(f);
    const Tensor<float> w = ember::cast<float>(rand_tensor(c.w, 302));
    const Tensor<float> dy =
        Tensor<float>(ember::cast<float>(rand_tensor(ember::conv2d(x, w, c.opt).shape(), 303)))
            .contiguous(f);
    const auto first = ember::ops::conv2d_backward(x, w, dy, c.opt, true, true);
    const std::size_t made = ember::ops::onednn::cached_convolutions();
    for (int step = 0; step < 3; ++step) {
      (void)ember::conv2d(x, w, c.opt);
      const auto again = ember::ops::conv2d_backward(x, w, dy, c.opt, true, true);
      REQUIRE(again.second.to_vector() == first.second.to_vector());
      REQUIRE(again.first.to_vector() == first.first.to_vector());
    }
    REQUIRE(ember::ops::onednn::cached_convolutions() == made);
  }
}

}  // namespace test_ops_conv_dnnl
}  // namespace
