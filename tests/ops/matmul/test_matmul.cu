// matmul and linear on CUDA device 0 (cuBLASLt) against the CPU: shapes, broadcast batches,
// strided operands, dtypes, the fused epilogues (one launch), and the backward. Compiled by nvcc
// for sm_90 in every CUDA build; skipped (not failed) when no GPU is present.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_ops_matmul_cuda {
const Device kGpu = Device::cuda(0);

using ember::testing::require_near;
using ember::testing::require_near_normwise;

template <class T>
void check_matmul(const Shape& as, const Shape& bs, double rel) {
  INFO("a " << as.str() << " b " << bs.str());
  const Tensor<T> a = cast<T>(randn<float>(as, 1)), b = cast<T>(randn<float>(bs, 2));
  require_near(matmul(a.to(kGpu), b.to(kGpu)), matmul(a, b), rel);
}

TEST_CASE("cuda matmul: shapes and dtypes match the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4}, {4, 5}},        {{4}, {4}},
      {{2, 4}, {4}},           {{4}, {4, 3}},
      {{2, 3, 4}, {4, 5}},     {{2, 1, 3, 4}, {5, 4, 2}},
      {{0, 4}, {4, 3}},        {{3, 0}, {0, 2}},
      {{129, 257}, {257, 65}}, {{8, 64, 96}, {8, 96, 32}},
  };
  for (const auto& [as, bs] : shapes) {
    check_matmul<float>(as, bs, 1e-5);
    check_matmul<double>(as, bs, 1e-12);
    check_matmul<bf16>(as, bs, 1.0 / 64);
    check_matmul<ember::half>(as, bs, 1.0 / 256);
  }
  // Transposed and sliced operands.
  const Tensor<float> a = randn<float>({64, 48}, 3), b = randn<float>({40, 64}, 4);
  require_near(matmul(a.to(kGpu).t(), b.to(kGpu).t()), matmul(a.t(), b.t()), 1e-5);
  require_near(matmul(a.to(kGpu).slice(1, 0, 48, 2).t(), b.to(kGpu).slice(0, 0, 24).t()),
               matmul(a.slice(1, 0, 48, 2).t(), b.slice(0, 0, 24).t()), 1e-5);
}

TEST_CASE("cuda linear: the bias and activation run in the GEMM's epilogue", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> x = randn<float>({4, 33, 64}, 5), w = randn<float>({48, 64}, 6);
  const Tensor<float> b = randn<float>({48}, 7);
  const Tensor<float> xg = x.to(kGpu), wg = w.to(kGpu), bg = b.to(kGpu);
  for (Activation act :
       {Activation::none, Activation::relu, Activation::gelu, Activation::gelu_tanh}) {
    INFO("activation " << static_cast<int>(act));
    const std::uint64_t l0 = launch_count();
    Tensor<float> y = linear(xg, wg, bg, act);
    // One cuBLASLt call; the exact GELU (not an epilogue of cuBLASLt's) is a second pass.
    CHECK(launch_count() - l0 == (act == Activation::gelu ? 2u : 1u));
    require_near(y, linear(x, w, b, act), 1e-4);
  }
  const Tensor<bf16> x16 = cast<bf16>(x), w16 = cast<bf16>(w), b16 = cast<bf16>(b);
  require_near(linear(x16.to(kGpu), w16.to(kGpu), b16.to(kGpu), Activation::gelu),
               linear(x16, w16, b16, Activation::gelu), 1.0 / 32);
}

TEST_CASE("cuda matmul and linear: gradients match the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  // 16 outputs: GELU's pre-activation comes from cuBLASLt's auxiliary output (ld % 8 == 0).
  const Tensor<float> x = randn<float>({6, 20}, 8), w = randn<float>({16, 20}, 9);
  const Tensor<float> b = randn<float>({16}, 10), m = randn<float>({3, 16, 5}, 11);
  for (Activation act :
       {Activation::none, Activation::relu, Activation::gelu, Activation::gelu_tanh}) {
    auto xc = param(x), wc = param(w), bc = param(b), mc = param(m);
    auto xg = param(x.to(kGpu)), wg = param(w.to(kGpu)), bg = param(b.to(kGpu)),
         mg = param(m.to(kGpu));
    sum(tanh(matmul(linear(xc, wc, bc, act), mc))).backward();
    sum(tanh(matmul(linear(xg, wg, bg, act), mg))).backward();
    require_near(xg.grad(), xc.grad(), 1e-4);
    require_near(wg.grad(), wc.grad(), 1e-4);
    require_near(bg.grad(), bc.grad(), 1e-4);
    require_near(mg.grad(), mc.grad(), 1e-4);
  }
}

TEST_CASE("cuda linear backward: the bias gradient comes from the weight gradient's GEMM",
          "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  // BERT's shapes in miniature: [batch, seq, hidden] inputs, rows not a multiple of anything.
  const Tensor<float> x = randn<float>({3, 37, 48}, 12), w = randn<float>({64, 48}, 13);
  const Tensor<float> b = randn<float>({64}, 14), g = randn<float>({3, 37, 64}, 15);
  // The launches of one linear's backward, with or without a bias, checking the gradients.
  const auto backward_launches = [&]<class T>(T, double rel, bool with_bias) {
    INFO(dtype_name<T> << (with_bias ? " with bias" : " without bias"));
    auto xc = param(Tensor<T>(cast<T>(x))), wc = param(Tensor<T>(cast<T>(w))),
         bc = param(Tensor<T>(cast<T>(b)));
    auto xg = param(xc.value().to(kGpu)), wg = param(wc.value().to(kGpu)),
         bg = param(bc.value().to(kGpu));
    const Tensor<T> gc = cast<T>(g), gg = gc.to(kGpu);
    (with_bias ? linear(xc, wc, bc) : linear(xc, wc)).backward(gc);
    Var<T> y = with_bias ? linear(xg, wg, bg) : linear(xg, wg);
    const std::uint64_t l0 = launch_count();
    y.backward(gg);
    const std::uint64_t launches = launch_count() - l0;
    require_near(xg.grad(), xc.grad(), rel);
    require_near(wg.grad(), wc.grad(), rel);
    if (with_bias) require_near(bg.grad(), bc.grad(), rel);
    return launches;
  };
  // For the training dtypes the bias costs no launch of its own (BGRADB epilogue).
  CHECK(backward_launches(bf16{}, 1.0 / 32, true) == backward_launches(bf16{}, 1.0 / 32, false));
  CHECK(backward_launches(ember::half{}, 1.0 / 128, true) ==
        backward_launches(ember::half{}, 1.0 / 128, false));
  // float and double: the epilogue where cuBLASLt has it, else a reduction; values either way.
  CHECK(backward_launches(float{}, 1e-4, true) <= backward_launches(float{}, 1e-4, false) + 1);
  CHECK(backward_launches(double{}, 1e-10, true) <= backward_launches(double{}, 1e-10, false) + 1);
}

TEST_CASE("cuda feed_forward: the activation's gradient runs in the second product's epilogue",
          "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  // Hidden width 64: GELU's pre-activation fits cuBLASLt's aux layout (a multiple of 8); 20: it
  // does not, and the backward multiplies by gelu' apart. 37 * 3 rows: not a multiple of anything.
  const Tensor<float> x = randn<float>({3, 37, 48}, 16), g = randn<float>({3, 37, 40}, 17);
  const auto backward_launches = [&]<class T>(T, double rel, Activation act, std::int64_t F,
                                              bool fused) {
    INFO(dtype_name<T> << " activation " << static_cast<int>(act) << " hidden " << F
                       << (fused ? " fused" : " two linears"));
    const auto make = [](const Shape& s, std::uint64_t seed) {
      return param(Tensor<T>(cast<T>(Tensor<float>(randn<float>(s, seed) * 0.2))));
    };
    auto xc = param(Tensor<T>(cast<T>(x))), w1c = make({F, 48}, 18), b1c = make({F}, 19);
    auto w2c = make({40, F}, 20), b2c = make({40}, 21);
    auto xg = param(xc.value().to(kGpu)), w1g = param(w1c.value().to(kGpu)),
         b1g = param(b1c.value().to(kGpu)), w2g = param(w2c.value().to(kGpu)),
         b2g = param(b2c.value().to(kGpu));
    const Tensor<T> gc = cast<T>(g), gg = gc.to(kGpu);
    // The reference for bf16 and half is the float computation of the same rounded values: the
    // GPU rounds each stored tensor once (the epilogue adds the bias and applies the activation
    // in float), while the CPU's 2-byte path also rounds the product before them, which near the
    // ReLU's kink flips a mask bit, and moves a GELU output by an ulp.
    using R = std::conditional_t<sizeof(T) == 2, float, T>;
    const auto ref = [](const Var<T>& v) { return param(Tensor<R>(cast<R>(v.value()))); };
    auto xr = ref(xc), w1r = ref(w1c), b1r = ref(b1c), w2r = ref(w2c), b2r = ref(b2c);
    feed_forward(xr, w1r, b1r, w2r, b2r, act).backward(Tensor<R>(cast<R>(gc)));
    Var<T> y = fused ? feed_forward(xg, w1g, b1g, w2g, b2g, act)
                     : linear(linear(xg, w1g, b1g, act), w2g, b2g);
    const std::uint64_t l0 = launch_count();
    y.backward(gg);
    const std::uint64_t launches = launch_count() - l0;
    // Each gradient is a sum of 37 * 3 or 64 products of operands already rounded once.
    const auto near = [&](const Var<T>& gpu, const Var<R>& cpu) {
      require_near_normwise(gpu.grad(), Tensor<T>(cast<T>(cpu.grad())), rel);
    };
    near(xg, xr);
    near(w1g, w1r);
    near(b1g, b1r);
    near(w2g, w2r);
    near(b2g, b2r);
    return launches;
  };
  for (Activation act : {Activation::relu, Activation::gelu_tanh}) {
    // bf16 and half: act' and the first bias's gradient cost no launch of their own.
    CHECK(backward_launches(bf16{}, 1.0 / 32, act, 64, true) <
          backward_launches(bf16{}, 1.0 / 32, act, 64, false));
    CHECK(backward_launches(ember::half{}, 1.0 / 128, act, 64, true) <
          backward_launches(ember::half{}, 1.0 / 128, act, 64, false));
    // float and double: the epilogue where cuBLASLt has it; values either way.
    CHECK(backward_launches(float{}, 1e-4, act, 64, true) <=
          backward_launches(float{}, 1e-4, act, 64, false));
    backward_launches(double{}, 1e-10, act, 64, true);
  }
  // The exact GELU (no cuBLASLt epilogue) and a hidden width the aux cannot take: no worse than
  // two linears.
  CHECK(backward_launches(bf16{}, 1.0 / 32, Activation::gelu, 64, true) <=
        backward_launches(bf16{}, 1.0 / 32, Activation::gelu, 64, false));
  CHECK(backward_launches(bf16{}, 1.0 / 32, Activation::gelu_tanh, 20, true) <=
        backward_launches(bf16{}, 1.0 / 32, Activation::gelu_tanh, 20, false));
  // The forward's ReLU with its sign bits kept gives linear's values.
  const Tensor<float> w = randn<float>({64, 48}, 22), b = randn<float>({64}, 23);
  std::vector<float> identity(64 * 64, 0.0f);
  for (std::size_t i = 0; i < 64; ++i) identity[i * 65] = 1.0f;
  const Var<float> h = feed_forward(param(x.to(kGpu)), w.to(kGpu), b.to(kGpu),
                                    from_vector<float>(identity, Shape{64, 64}).to(kGpu),
                                    Tensor<float>(), Activation::relu);
  require_near(h.value(), linear(x, w, b, Activation::relu), 1e-4);
}

}  // namespace test_ops_matmul_cuda
}  // namespace
