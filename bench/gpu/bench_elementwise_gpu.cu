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
// Run: bench_elementwise_gpu [--json out.json] [--reps N] [--quick]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.hpp>

namespace {

using ember::bf16;
using ember::Device;
using ember::Shape;
using ember::Tensor;

#define CK(call)                                                                            \
  do {                                                                                      \
    cudaError_t st_ = (call);                                                               \
    if (st_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(st_), __FILE__, \
                   __LINE__, cudaGetErrorString(st_));                                      \
      std::exit(2);                                                                         \
    }                                                                                       \
  } while (0)

struct Record {
  std::string bench, shape, impl;
  double ms_median = 0, ms_min = 0, ms_max = 0, bytes = 0;
  int reps = 0;
  std::string check = "ok";
};
std::vector<Record> records;

int g_warmup = 3;
int g_reps = 20;
const char* g_json = nullptr;
void write_json(const char* path);

// Keeps a record and rewrites the JSON, so a run cut short still leaves what it measured.
void keep(const Record& r) {
  records.push_back(r);
  if (g_json) write_json(g_json);
}

cudaStream_t stream() { return ember::cuda::current_stream(0); }

// Median, min and max of `reps` timed runs of f, each bracketed by events on ember's stream.
Record time_it(const std::string& bench, const std::string& shape, const std::string& impl,
               double bytes, const std::function<void()>& f) {
  for (int i = 0; i < g_warmup; ++i) f();
  CK(cudaStreamSynchronize(stream()));
  CK(cudaGetLastError());
  std::vector<cudaEvent_t> ev(2 * static_cast<std::size_t>(g_reps));
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int r = 0; r < g_reps; ++r) {
    CK(cudaEventRecord(ev[2 * r], stream()));
    f();
    CK(cudaEventRecord(ev[2 * r + 1], stream()));
  }
  CK(cudaStreamSynchronize(stream()));
  CK(cudaGetLastError());
  std::vector<double> ms;
  for (int r = 0; r < g_reps; ++r) {
    float t = 0;
    CK(cudaEventElapsedTime(&t, ev[2 * r], ev[2 * r + 1]));
    ms.push_back(t);
  }
  for (auto& e : ev) CK(cudaEventDestroy(e));
  std::sort(ms.begin(), ms.end());
  Record rec;
  rec.bench = bench;
  rec.shape = shape;
  rec.impl = impl;
  rec.bytes = bytes;
  rec.reps = g_reps;
  rec.ms_min = ms.front();
  rec.ms_max = ms.back();
  rec.ms_median =
      ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  std::printf("%-18s %-14s %-22s %9.3f ms  %8.1f GB/s  (min %.3f, max %.3f)\n", bench.c_str(),
              shape.c_str(), impl.c_str(), rec.ms_median, bytes / rec.ms_median / 1e6, rec.ms_min,
              rec.ms_max);
  std::fflush(stdout);
  return rec;
}

template <class T>
std::vector<float> host_floats(const Tensor<T>& t) {
  std::vector<T> v = t.to_vector();
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i]);
  return out;
}

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

std::string verdict(double err, double tol) {
  char buf[96];
  if (err <= tol) return "ok";  // false for NaN
  std::snprintf(buf, sizeof buf, "FAIL: error %.3g > %.3g", err, tol);
  return buf;
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

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

void write_json(const char* path) {
  FILE* f = std::fopen(path, "w");
  if (!f) {
    std::perror(path);
    std::exit(1);
  }
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, 0));
  std::fprintf(f,
               "{\n  \"source\": \"ember\",\n  \"device\": \"%s\",\n  \"sm_count\": %d,\n"
               "  \"l2_bytes\": %d,\n  \"memory_bytes\": %zu,\n  \"records\": [\n",
               p.name, p.multiProcessorCount, p.l2CacheSize, p.totalGlobalMem);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    std::fprintf(
        f,
        "    {\"bench\": \"%s\", \"shape\": \"%s\", \"impl\": \"%s\", \"ms\": %.6f, "
        "\"ms_min\": %.6f, \"ms_max\": %.6f, \"bytes\": %.0f, \"reps\": %d, \"check\": \"%s\"}%s\n",
        r.bench.c_str(), r.shape.c_str(), r.impl.c_str(), r.ms_median, r.ms_min, r.ms_max, r.bytes,
        r.reps, r.check.c_str(), i + 1 < records.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  const char*& json = g_json;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json = argv[++i];
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      g_reps = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--quick")) {
      quick = true;  // small sizes: a smoke test of the program itself
    } else {
      std::fprintf(stderr, "usage: %s [--json out.json] [--reps N] [--quick]\n", argv[0]);
      return 1;
    }
  }
  try {
    if (!ember::cuda::available()) {
      std::fprintf(stderr, "bench_elementwise_gpu: no CUDA device (%s)\n",
                   ember::cuda::unavailable_reason().c_str());
      return 3;
    }
    cudaDeviceProp p{};
    CK(cudaGetDeviceProperties(&p, 0));
    std::printf("device: %s, %d SMs, L2 %d MiB, %.1f GiB\n", p.name, p.multiProcessorCount,
                p.l2CacheSize >> 20, double(p.totalGlobalMem) / (1 << 30));
    // 1 GiB per bf16 tensor: far beyond the L2, so every run streams from HBM.
    const std::int64_t n = quick ? (std::int64_t{1} << 22) : (std::int64_t{1} << 29);
    run_elementwise(n);
    if (quick) {
      run_rows(4096, 1024);
    } else {
      run_rows(std::int64_t{1} << 19, 1024);
      run_rows(std::int64_t{1} << 16, 8192);
    }
    if (json) write_json(json);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_elementwise_gpu: %s\n", e.what());
    if (json) write_json(json);
    return 1;
  }
  bool ok = true;
  for (const Record& r : records) ok = ok && r.check == "ok";
  return ok ? 0 : 4;
}
