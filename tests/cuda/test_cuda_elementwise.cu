// Elementwise expressions evaluated on CUDA device 0 against the same expressions on the CPU.
// Compiled by nvcc for sm_90 in every CUDA build; skipped (not failed) when no GPU is present.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_cuda_elementwise {

const Device kGpu = Device::cuda(0);
const Device kCpu = Device::cpu();

// |got - want| <= atol + rtol * |want|, element by element, with NaNs matching NaNs.
template <class T>
void require_close(const Tensor<T>& got, const Tensor<T>& want, double rtol, double atol) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<T> g = got.to_vector();
  const std::vector<T> w = want.to_vector();
  std::size_t bad = 0;
  std::size_t first_bad = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double a = static_cast<double>(static_cast<float>(g[i]));
    const double b = static_cast<double>(static_cast<float>(w[i]));
    const bool ok = (std::isnan(a) && std::isnan(b)) || a == b ||
                    std::fabs(a - b) <= atol + rtol * std::fabs(b);
    if (!ok && bad++ == 0) first_bad = i;
  }
  INFO("mismatches: " << bad << " of " << g.size() << "; first at " << first_bad << ": gpu "
                      << (g.empty() ? 0.0f : static_cast<float>(g[first_bad])) << ", cpu "
                      << (w.empty() ? 0.0f : static_cast<float>(w[first_bad])));
  CHECK(bad == 0);
}

TEST_CASE("cuda: factories give the same values on the GPU as on the CPU", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  require_close(arange<float>(1000, kGpu), arange<float>(1000, kCpu), 0, 0);
  require_close(full<float>({3, 5}, 2.5, kGpu), full<float>({3, 5}, 2.5, kCpu), 0, 0);
  // Philox keyed by (seed, offset): the same stream on both devices, up to the last ulp of
  // the device's log/sin/cos in Box-Muller.
  require_close(rand<float>({4097}, 7, kGpu), rand<float>({4097}, 7, kCpu), 1e-6, 1e-7);
  require_close(randn<float>({4097}, 7, kGpu), randn<float>({4097}, 7, kCpu), 1e-5, 1e-6);
}

TEST_CASE("cuda: a broadcasting chain over three tensors is one launch", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> x = randn<float>({64, 1000}, 1);
  const Tensor<float> bias = randn<float>({1000}, 2);
  const Tensor<float> scale = rand<float>({64, 1}, 3, kCpu, 0.5, 1.5);
  const Tensor<float> xg = x.to(kGpu), bg = bias.to(kGpu), sg = scale.to(kGpu);

  auto chain = [](const auto& a, const auto& b, const auto& s) {
    return tanh((a + b) * s) * 0.5f + sigmoid(a - b) - abs(s) / 3.0f;
  };
  const Tensor<float> want = chain(x, bias, scale);
  const std::uint64_t before = launch_count();
  const Tensor<float> got = chain(xg, bg, sg);
  CHECK(launch_count() - before == 1);
  CHECK(got.device() == kGpu);
  require_close(got, want, 1e-5, 1e-6);
}

TEST_CASE("cuda: every unary function matches the CPU in float", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> x = rand<float>({3000}, 11, kCpu, 0.05, 3.0);
  const Tensor<float> xg = x.to(kGpu);
  const double rtol = 4e-6, atol = 1e-6;
  SECTION("exp log sqrt") {
    require_close(Tensor<float>(exp(xg) + log(xg) + sqrt(xg)),
                  Tensor<float>(exp(x) + log(x) + sqrt(x)), rtol, atol);
  }
  SECTION("rsqrt reciprocal square") {
    require_close(Tensor<float>(rsqrt(xg) + reciprocal(xg) + square(xg)),
                  Tensor<float>(rsqrt(x) + reciprocal(x) + square(x)), rtol, atol);
  }
  SECTION("sin cos tanh erf") {
    require_close(Tensor<float>(sin(xg) * cos(xg) + tanh(xg) - erf(xg)),
                  Tensor<float>(sin(x) * cos(x) + tanh(x) - erf(x)), rtol, atol);
  }
  SECTION("activations") {
    const Tensor<float> y = x - 1.5f, yg = xg - 1.5f;
    require_close(Tensor<float>(relu(yg) + silu(yg) + gelu(yg) + gelu_tanh(yg) + softplus(yg)),
                  Tensor<float>(relu(y) + silu(y) + gelu(y) + gelu_tanh(y) + softplus(y)), rtol,
                  atol);
  }
  SECTION("rounding") {
    const Tensor<float> y = x * 3.0f - 4.0f, yg = xg * 3.0f - 4.0f;
    require_close(Tensor<float>(floor(yg) + ceil(yg) + round(yg) + sign(yg)),
                  Tensor<float>(floor(y) + ceil(y) + round(y) + sign(y)), 0, 0);
  }
}

TEST_CASE("cuda: bf16 and half store what the CPU stores", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> x = randn<float>({257, 33}, 5);
  const Tensor<float> xg = x.to(kGpu);
  // Computed in float, rounded once at the store: at most one bf16/half ulp apart when the
  // device's float result differs from the host's in the last bit.
  SECTION("bf16 gelu") {
    const Tensor<bf16> got = cast<bf16>(gelu(xg));
    const Tensor<bf16> want = cast<bf16>(gelu(x));
    require_close(got, want, 1.0 / 128, 1e-6);
  }
  SECTION("half silu over a bf16 input") {
    const Tensor<bf16> in = cast<bf16>(x);
    const Tensor<bf16> ing = in.to(kGpu);
    const Tensor<ember::half> got = cast<ember::half>(silu(ing) * 2.0f);
    const Tensor<ember::half> want = cast<ember::half>(silu(in) * 2.0f);
    require_close(got, want, 1.0 / 1024, 1e-6);
  }
  SECTION("a cast to bf16 is exact for values already representable") {
    const Tensor<bf16> in = cast<bf16>(x);
    const Tensor<float> back = cast<float>(in.to(kGpu));
    require_close(back, Tensor<float>(cast<float>(in)), 0, 0);
  }
}

TEST_CASE("cuda: strided views, where, compound and multi-output assignment", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> a = randn<float>({48, 80}, 21);
  const Tensor<float> b = randn<float>({80, 48}, 22);
  const Tensor<float> ag = a.to(kGpu), bg = b.to(kGpu);

  SECTION("a transposed operand") {
    require_close(Tensor<float>(ag * bg.transpose(0, 1) + 1.0f),
                  Tensor<float>(a * b.transpose(0, 1) + 1.0f), 1e-6, 1e-7);
  }
  SECTION("a sliced operand with a step") {
    const Tensor<float> s = a.slice(1, 1, 80, 2), sg = ag.slice(1, 1, 80, 2);
    require_close(Tensor<float>(exp(sg) - sg), Tensor<float>(exp(s) - s), 1e-6, 1e-7);
  }
  SECTION("dense operands not aligned for packed loads take the strided kernel") {
    // One element in: unit strides (a dense layout) but 4 bytes past a 16-byte boundary.
    const Tensor<float> f = a.reshape({48 * 80}).narrow(0, 1, 48 * 80 - 1);
    const Tensor<float> fg = ag.reshape({48 * 80}).narrow(0, 1, 48 * 80 - 1);
    require_close(Tensor<float>(fg * 2.0f + 1.0f), Tensor<float>(f * 2.0f + 1.0f), 1e-6, 1e-7);
    const Tensor<bf16> h = cast<bf16>(f), hg = cast<bf16>(fg);
    const Tensor<bf16> hu = h.narrow(0, 3, 3000), hgu = hg.narrow(0, 3, 3000);
    require_close(Tensor<bf16>(hgu * hgu), Tensor<bf16>(hu * hu), 0, 0);
  }
  SECTION("copies keep a channels-last layout both ways, as PyTorch's preserve_format") {
    const Tensor<float> x = randn<float>({2, 3, 5, 4}, 23).contiguous(MemoryFormat::channels_last);
    const Tensor<float> xg = x.to(kGpu), back = xg.to(Device::cpu());
    CHECK(xg.is_contiguous(MemoryFormat::channels_last));
    CHECK(back.is_contiguous(MemoryFormat::channels_last));
    require_close(back, x, 0, 0);
    // Any other layout arrives contiguous.
    CHECK(ag.transpose(0, 1).to(Device::cpu()).is_contiguous());
  }
  SECTION("where with a comparison") {
    require_close(Tensor<float>(where(ag > 0.0f, ag, ag * 0.1f)),
                  Tensor<float>(where(a > 0.0f, a, a * 0.1f)), 0, 0);
  }
  SECTION("+= in place") {
    Tensor<float> y = a.clone();
    Tensor<float> yg = ag.clone();
    y += a * 2.0f;
    yg += ag * 2.0f;
    require_close(yg, y, 1e-6, 1e-7);
  }
  SECTION("two outputs in one launch") {
    Tensor<float> s = empty<float>(a.shape()), d = empty<float>(a.shape());
    Tensor<float> sg = empty<float>(a.shape(), kGpu), dg = empty<float>(a.shape(), kGpu);
    assign(std::tie(s, d), a + 1.0f, a - 1.0f);
    const std::uint64_t before = launch_count();
    assign(std::tie(sg, dg), ag + 1.0f, ag - 1.0f);
    CHECK(launch_count() - before == 1);
    require_close(sg, s, 0, 0);
    require_close(dg, d, 0, 0);
  }
}

TEST_CASE("cuda: a strided pass over 2^31 elements or more indexes in 64 bits", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  // One row broadcast down 32,769 rows: 2^31 + 2^16 bytes, past the 32-bit fast division.
  const Tensor<std::uint8_t> row = cast<std::uint8_t>(arange<float>(65536, kGpu) * 0.003f);
  Tensor<std::uint8_t> big = empty<std::uint8_t>({32769, 65536}, kGpu);
  big.copy_(row);
  const std::vector<std::uint8_t> want = row.to_vector();
  for (const std::int64_t r : {std::int64_t{0}, std::int64_t{32767}, std::int64_t{32768}}) {
    INFO("row " << r);
    CHECK(big.narrow(0, r, 1).reshape({65536}).to_vector() == want);
  }
}

TEST_CASE("cuda: mixing devices in one expression is an error", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  const Tensor<float> c = ones<float>({4});
  const Tensor<float> g = ones<float>({4}, kGpu);
  CHECK_THROWS_AS(Tensor<float>(c + g), Error);
}

TEST_CASE("cuda: a device that does not exist is an error with the cause", "[cuda]") {
  // Runs with or without a GPU: asking for a missing device must throw, never crash.
  const int n = ember::cuda::device_count();
  try {
    (void)zeros<float>({4}, Device::cuda(n));
    FAIL("expected ember::Error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("CUDA device") != std::string::npos);
  }
}

}  // namespace test_cuda_elementwise
}  // namespace
