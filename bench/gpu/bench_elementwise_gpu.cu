// GPU benchmarks of ember's fused expressions, timed with CUDA events on ember's stream
// (median of N runs after warm-up), against the device's own copy bandwidth.
//
//   chain_tanh_bf16   y = tanh(a*b + c) * 0.5 + a*c      bf16, 2^29 elements (1 GiB per tensor)
//   chain_relu_bf16   y = relu(a*b + c) * 0.5 + a*c      the same without a transcendental
//   copy_bf16         cudaMemcpyAsync device to device, and ember's y.copy_(a)
//   softmax_bf16      row softmax written as expressions (max, subtract, exp, sum, divide)
//   layernorm_bf16    (x - mean) * rsqrt(var + eps) * gamma + beta, written as expressions
//
// Bytes counted are the fewest that must cross device memory (each input read once, each output
// written once); bandwidth is those bytes over the median time. Every result is checked against
// a float64 reference on the host (rows or slices at both ends) after the output was poisoned
// with NaN. Writes JSON records that bench/gpu/summarize.py joins with the PyTorch peer's.
//
// Build (bench/gpu/check.sh does this):
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90,code=sm_90 --expt-relaxed-constexpr
//        -Xcompiler=-fopenmp -Iinclude bench/gpu/bench_elementwise_gpu.cu -o bench_elementwise_gpu
// Run: bench_elementwise_gpu [--json out.json] [--reps N] [--quick | --tiny]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "bench_gpu_support.cuh"

namespace {

using ember::bf16;
using ember::Device;
using ember::Shape;
using ember::Tensor;
using namespace ember_gpu_bench;  // the shared harness: bench_gpu_support.cuh

// Max of |got - want| / (atol + |want|) over the elements, NaN-sticky.
double worst_error(const std::vector<float>& got, const std::vector<double>& want, double atol) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(double(got[i]) - want[i]) / (atol + std::fabs(want[i]));
    if (worst == worst && !(e <= worst)) worst = e;  // a NaN sticks
  }
  return worst;
}

// The larger of two errors, NaN winning (std::max would drop a NaN in its second argument).
double worse(double a, double b) { return (b != b || b > a) ? b : a; }

// ---------------------------------------------------------------------------------------------
// Copies and the elementwise chain over n bf16 elements.
void run_elementwise(std::int64_t n) {
  const Device gpu = Device::cuda(0);
  const std::string shape = std::to_string(n);
  Tensor<bf16> a = ember::randn<bf16>(Shape{n}, 1, gpu);
  Tensor<bf16> b = ember::randn<bf16>(Shape{n}, 2, gpu);
  Tensor<bf16> c = ember::randn<bf16>(Shape{n}, 3, gpu);
  Tensor<bf16> y = ember::empty<bf16>(Shape{n}, gpu);
  const double elem = sizeof(bf16);

  // The device's copy bandwidth, two ways.
  y = kNaN;
  Record r = time_it("copy_bf16", shape, "cuda_memcpy", 2 * n * elem, [&] {
    CK(cudaMemcpyAsync(y.data(), a.data(), std::size_t(n) * sizeof(bf16), cudaMemcpyDeviceToDevice,
                       stream()));
  });
  keep(r);
  y = kNaN;
  r = time_it("copy_bf16", shape, "ember_copy", 2 * n * elem, [&] { y.copy_(a); });
  {
    const std::int64_t k = std::min<std::int64_t>(n, 1 << 20);
    const auto ya = host_floats(y.narrow(0, n - k, k)), aa = host_floats(a.narrow(0, n - k, k));
    r.check = std::memcmp(ya.data(), aa.data(), ya.size() * sizeof(float)) == 0
                  ? "ok"
                  : "FAIL: copy differs";
  }
  keep(r);

  // The chain, fused: one kernel reading a, b, c and writing y.
  auto check_chain = [&](bool tanh_act) {
    const std::int64_t k = std::min<std::int64_t>(n, 1 << 20);
    double worst = 0;
    for (std::int64_t start : {std::int64_t{0}, n - k}) {
      const auto ya = host_floats(y.narrow(0, start, k));
      const auto aa = host_floats(a.narrow(0, start, k));
      const auto ba = host_floats(b.narrow(0, start, k));
      const auto ca = host_floats(c.narrow(0, start, k));
      std::vector<double> want(ya.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        const double t = double(aa[i]) * ba[i] + ca[i];
        want[i] = (tanh_act ? std::tanh(t) : std::max(t, 0.0)) * 0.5 + double(aa[i]) * ca[i];
      }
      worst = worse(worst, worst_error(ya, want, 1.0));
      if (worst != worst) break;
    }
    return verdict(worst, 1e-2);  // bf16 keeps 8 bits: 2^-9 relative from the one rounding
  };
  y = kNaN;
  r = time_it("chain_tanh_bf16", shape, "ember_fused", 4 * n * elem,
              [&] { y = ember::tanh(a * b + c) * 0.5 + a * c; });
  r.check = check_chain(true);
  keep(r);
  y = kNaN;
  r = time_it("chain_relu_bf16", shape, "ember_fused", 4 * n * elem,
              [&] { y = ember::relu(a * b + c) * 0.5 + a * c; });
  r.check = check_chain(false);
  keep(r);

  // A bias broadcast down 1024-wide rows: not dense (the bias has stride 0 across rows), so
  // the strided kernel, which divides each linear index into coordinates.
  const std::int64_t cols = 1024, rows = n / cols;
  const Tensor<bf16> a2 = a.narrow(0, 0, rows * cols).reshape({rows, cols});
  const Tensor<bf16> bias = b.narrow(0, 0, cols);
  Tensor<bf16> y2 = y.narrow(0, 0, rows * cols).reshape({rows, cols});
  y = kNaN;
  r = time_it("bias_add_bf16", std::to_string(rows) + "x" + std::to_string(cols), "ember_strided",
              2 * rows * cols * elem, [&] { y2 = a2 + bias; });
  {
    const auto ya = host_floats(y2.narrow(0, rows - 1, 1)),
               aa = host_floats(a2.narrow(0, rows - 1, 1));
    const auto ba = host_floats(bias);
    std::vector<double> want(ya.size());
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = double(aa[i]) + ba[i];
    r.check = verdict(worst_error(ya, want, 1.0), 1e-2);
  }
  keep(r);
}

// ---------------------------------------------------------------------------------------------
// Row reductions over [rows, cols] bf16, written as expressions computing in float.
void run_rows(std::int64_t rows, std::int64_t cols) {
  const Device gpu = Device::cuda(0);
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
  Tensor<bf16> x = ember::randn<bf16>(Shape{rows, cols}, 7, gpu, 0.0, 2.0);
  Tensor<bf16> gamma = ember::randn<bf16>(Shape{cols}, 8, gpu, 1.0, 0.1);
  Tensor<bf16> beta = ember::randn<bf16>(Shape{cols}, 9, gpu, 0.0, 0.1);
  Tensor<bf16> y = ember::empty<bf16>(Shape{rows, cols}, gpu);
  const double bytes = 2.0 * double(rows) * double(cols) * sizeof(bf16);
  const double eps = 1e-5;

  // Checks rows [0, 32) and the last 32 rows against float64; atol is the scale below which
  // errors are absolute (softmax values are about 1/cols).
  auto check_rows = [&](const std::function<void(const float*, double*)>& ref, double atol) {
    const std::int64_t k = std::min<std::int64_t>(rows, 32);
    double worst = 0;
    for (std::int64_t start : {std::int64_t{0}, rows - k}) {
      const auto ya = host_floats(y.narrow(0, start, k));
      const auto xa = host_floats(x.narrow(0, start, k));
      std::vector<double> want(ya.size());
      for (std::int64_t r = 0; r < k; ++r)
        ref(&xa[std::size_t(r * cols)], &want[std::size_t(r * cols)]);
      worst = worse(worst, worst_error(ya, want, atol));
      if (worst != worst) break;
    }
    return verdict(worst, 2e-2);
  };
  auto softmax_ref = [&](const float* xr, double* out) {
    double m = -INFINITY, s = 0;
    for (std::int64_t j = 0; j < cols; ++j) m = std::max(m, double(xr[j]));
    for (std::int64_t j = 0; j < cols; ++j) s += std::exp(double(xr[j]) - m);
    for (std::int64_t j = 0; j < cols; ++j) out[j] = std::exp(double(xr[j]) - m) / s;
  };
  const auto g = host_floats(gamma), bt = host_floats(beta);
  auto layernorm_ref = [&](const float* xr, double* out) {
    double mu = 0, v = 0;
    for (std::int64_t j = 0; j < cols; ++j) mu += xr[j];
    mu /= double(cols);
    for (std::int64_t j = 0; j < cols; ++j) v += (xr[j] - mu) * (xr[j] - mu);
    v /= double(cols);
    for (std::int64_t j = 0; j < cols; ++j)
      out[j] = (xr[j] - mu) / std::sqrt(v + eps) * g[std::size_t(j)] + bt[std::size_t(j)];
  };

  auto xf = ember::cast<float>(x);
  // Softmax: max, then sum of exp(x - max), then exp(x - max) / sum: three launches.
  y = kNaN;
  Record r = time_it("softmax_bf16", shape, "ember_expr", bytes, [&] {
    Tensor<float> m = ember::max(xf, {1}, true);
    Tensor<float> s = ember::sum(ember::exp(xf - m), {1}, true);
    y = ember::exp(xf - m) / s;
  });
  r.check = check_rows(softmax_ref, 1e-2 / double(cols));
  keep(r);
  // Softmax through logsumexp: exp(x - logsumexp(x)): two launches.
  y = kNaN;
  r = time_it("softmax_bf16", shape, "ember_lse", bytes, [&] {
    Tensor<float> lse = ember::logsumexp(xf, {1}, true);
    y = ember::exp(xf - lse);
  });
  r.check = check_rows(softmax_ref, 1e-2 / double(cols));
  keep(r);

  // Layer norm: mean, variance (Welford), then the normalisation: three launches.
  y = kNaN;
  r = time_it("layernorm_bf16", shape, "ember_expr", bytes + 4.0 * cols, [&] {
    Tensor<float> mu = ember::mean(xf, {1}, true);
    Tensor<float> var = ember::var(xf, {1}, true, 0.0);
    y = (xf - mu) * ember::rsqrt(var + eps) * gamma + beta;
  });
  r.check = check_rows(layernorm_ref, 1e-2);
  keep(r);
}

}  // namespace

int main(int argc, char** argv) {
  return ember_gpu_bench::bench_main(
      argc, argv, "bench_elementwise_gpu", {.bench = 18, .shape = 14, .impl = 22}, [](Size size) {
        // 1 GiB per bf16 tensor: far beyond the L2, so every run streams from HBM.
        run_elementwise(by_size<std::int64_t>(size, std::int64_t{1} << 29, std::int64_t{1} << 22,
                                              std::int64_t{1} << 14));
        if (size == Size::full) {
          run_rows(std::int64_t{1} << 19, 1024);
          run_rows(std::int64_t{1} << 16, 8192);
        } else {
          run_rows(size == Size::quick ? 4096 : 16, 1024);
        }
      });
}
