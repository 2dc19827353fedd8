// ember quickstart: a few fused expressions on the GPU when there is one, else on the CPU.
//
// The body of examples/quickstart.cpp (built by the host compiler when CUDA is off) and of
// examples/quickstart.cu (built by nvcc, which can launch kernels). For each expression it
// prints a few values, a checksum against a float64 reference computed on the CPU, how many
// kernels ran, and the bandwidth reached (bytes read + written / best time of a few runs).
//
//   quickstart                  64 Mi elements per tensor (about 256 MiB of float each)
//   quickstart --elements N     another size (the ctest smoke test uses a small one)
//   quickstart --cpu            stay on the CPU even when a GPU is present
//   quickstart --reps R         timed repetitions per expression (best one is reported)
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "common/format.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace quickstart {

// ember's functions (tanh, gelu, sum, ...) are called unqualified below, as user code would
// after this using-directive.
using namespace ember;

struct Options {
  std::int64_t elements = std::int64_t{64} << 20;
  int reps = 5;
  bool force_cpu = false;
};

inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "quickstart: %s needs a value\n", what);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--elements") {
      o.elements = std::max<std::int64_t>(1, std::atoll(next("--elements")));
    } else if (a == "--reps") {
      o.reps = std::max(1, std::atoi(next("--reps")));
    } else if (a == "--cpu") {
      o.force_cpu = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: %s [--elements N] [--reps R] [--cpu]\n", argv[0]);
      std::exit(0);
    } else {
      std::fprintf(stderr, "quickstart: unknown argument '%s' (try --help)\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

inline void synchronize(Device d) {
  if (d.is_cuda()) ember::cuda::synchronize(d.index());
}

/// Best wall time of `reps` runs of f, in seconds, with the device drained around each run.
template <class F>
double best_seconds(Device d, int reps, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    synchronize(d);
    const auto t0 = std::chrono::steady_clock::now();
    f();
    synchronize(d);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

using trainer::thousands;

inline std::string mib(std::int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

inline void report_timing(const char* label, double seconds, double bytes) {
  std::printf("    %-22s %.3f ms  ->  %.1f GB/s  (%s read + written)\n", label, seconds * 1e3,
              bytes / seconds / 1e9, mib(static_cast<std::int64_t>(bytes)).c_str());
}

inline void report_launches(std::uint64_t launches, const char* what) {
  std::printf("    %-22s %llu  (%s)\n",
              "kernels launched:", static_cast<unsigned long long>(launches), what);
}

struct Check {
  double sum_ember = 0;      // checksum of what ember computed
  double sum_reference = 0;  // checksum of the float64 reference
  double max_error = 0;      // largest |ember - reference| / (|reference| + floor)
  std::int64_t over_tolerance = 0;
};

inline bool report_check(const Check& c, double tolerance, const char* tolerance_words) {
  const double rel =
      std::fabs(c.sum_ember - c.sum_reference) / std::max(1.0, std::fabs(c.sum_reference));
  std::printf(
      "    %-22s %.6f (ember)  vs  %.6f (float64 reference on the CPU), relative "
      "difference %.2e\n",
      "checksum sum(y):", c.sum_ember, c.sum_reference, rel);
  std::printf("    %-22s %.2e  (tolerance %.1e, %s): %s\n", "max relative error:", c.max_error,
              tolerance, tolerance_words,
              c.over_tolerance == 0
                  ? "all elements within it"
                  : (thousands(c.over_tolerance) + " elements OUTSIDE it").c_str());
  return c.over_tolerance == 0;
}

template <class T>
void print_values(const char* label, const Tensor<T>& host, std::int64_t n) {
  const T* p = host.data();
  std::printf("    %-22s ", label);
  const std::int64_t shown[] = {0, 1, 2, n / 2, n - 1};
  for (std::int64_t i : shown) {
    if (i < n)
      std::printf("y[%lld] = %.6g   ", static_cast<long long>(i),
                  static_cast<double>(static_cast<float>(p[i])));
  }
  std::printf("\n");
}

inline double rel_error(double got, double want, double floor) {
  return std::fabs(got - want) / (std::fabs(want) + floor);
}

// ---- 1. a 6-op chain over three tensors with broadcasting (float) ------------------------------
inline bool chain_demo(Device dev, std::int64_t rows, std::int64_t cols, int reps) {
  const std::int64_t n = rows * cols;
  std::printf("\n[1] y = tanh(x * z + b) * x - z * 0.5      6 ops in one expression\n");
  std::printf("    x, z: float32 [%lld, %lld]   b: float32 [%lld], broadcast over the rows\n",
              static_cast<long long>(rows), static_cast<long long>(cols),
              static_cast<long long>(cols));

  const Tensor<float> x = ember::randn<float>({rows, cols}, 1, dev);
  const Tensor<float> z = ember::rand<float>({rows, cols}, 2, dev, -1.0, 1.0);
  const Tensor<float> b = ember::randn<float>({cols}, 3, dev, 0.0, 0.1);
  auto chain = [&] { return tanh(x * z + b) * x - z * 0.5f; };

  const std::uint64_t before = ember::launch_count();
  Tensor<float> y = chain();  // allocates y, evaluates the whole tree in one launch
  synchronize(dev);
  report_launches(ember::launch_count() - before, "op by op it would be 6 and 5 temporaries");

  const double seconds = best_seconds(dev, reps, [&] { y = chain(); });
  const double bytes = static_cast<double>(3 * n + cols) * sizeof(float);

  // float64 reference on the CPU, from host copies of the inputs.
  const Tensor<float> hx = x.to(Device::cpu()), hz = z.to(Device::cpu()), hb = b.to(Device::cpu()),
                      hy = y.to(Device::cpu());
  const float *px = hx.data(), *pz = hz.data(), *pb = hb.data(), *py = hy.data();
  Check c;
  double sum_e = 0, sum_r = 0, max_err = 0;
  std::int64_t bad = 0;
  const double tol = 1e-5;
#pragma omp parallel for reduction(+ : sum_e, sum_r, bad) reduction(max : max_err)
  for (std::int64_t i = 0; i < n; ++i) {
    const double xv = px[i], zv = pz[i], bv = pb[i % cols];
    const double t1 = std::tanh(xv * zv + bv) * xv, t2 = zv * 0.5;
    const double want = t1 - t2;
    // Relative to the size of the terms: the subtraction may cancel, and float32 cannot do
    // better than its rounding of each term.
    const double e = std::fabs(py[i] - want) / (std::fabs(t1) + std::fabs(t2) + 1e-30);
    sum_e += py[i];
    sum_r += want;
    max_err = std::max(max_err, e);
    bad += e > tol ? 1 : 0;
  }
  c.sum_ember = sum_e;
  c.sum_reference = sum_r;
  c.max_error = max_err;
  c.over_tolerance = bad;

  print_values("values:", hy, n);
  const bool ok = report_check(c, tol, "float32 arithmetic");
  report_timing("best time:", seconds, bytes);
  return ok;
}

// ---- 2. GELU (erf form) in bf16: computed in float, rounded once at the store ------------------
inline bool gelu_demo(Device dev, std::int64_t n, int reps) {
  std::printf("\n[2] y = gelu(x) in bfloat16 (erf form, computed in float, rounded once)\n");
  std::printf("    x: bfloat16 [%s]\n", thousands(n).c_str());

  const Tensor<ember::bf16> x = ember::randn<ember::bf16>({n}, 4, dev);
  const std::uint64_t before = ember::launch_count();
  Tensor<ember::bf16> y = gelu(x);
  synchronize(dev);
  report_launches(ember::launch_count() - before, "one elementwise kernel");

  const double seconds = best_seconds(dev, reps, [&] { y = gelu(x); });
  const double bytes = static_cast<double>(2 * n) * sizeof(ember::bf16);

  const Tensor<ember::bf16> hx = x.to(Device::cpu()), hy = y.to(Device::cpu());
  const ember::bf16 *px = hx.data(), *py = hy.data();
  // One rounding to bf16 (8 significant bits) is at most half an ulp, 2^-8 relative; a whole
  // ulp (2^-7) leaves room for the float evaluation before it. Below 1e-4 in magnitude
  // (x < -3.7) the erf form loses digits to cancellation in float, as in every float32
  // implementation: that is the floor.
  const double tol = 1.0 / 128;
  double sum_e = 0, sum_r = 0, max_err = 0;
  std::int64_t bad = 0;
#pragma omp parallel for reduction(+ : sum_e, sum_r, bad) reduction(max : max_err)
  for (std::int64_t i = 0; i < n; ++i) {
    const double xv = static_cast<float>(px[i]);
    const double want = 0.5 * xv * (1.0 + std::erf(xv / std::sqrt(2.0)));
    const double got = static_cast<float>(py[i]);
    const double e = rel_error(got, want, 1e-4);
    sum_e += got;
    // Each reference value rounded to bf16 too, so the checksums compare like with like
    // (rounding to nearest is not unbiased over a sum of a million gelu values).
    sum_r += static_cast<float>(bf16(static_cast<float>(want)));
    max_err = std::max(max_err, e);
    bad += e > tol ? 1 : 0;
  }
  Check c{sum_e, sum_r, max_err, bad};
  print_values("values:", hy, n);
  const bool ok = report_check(c, tol, "one bfloat16 rounding");
  std::printf("    %-22s the reference's values are rounded to bfloat16 before summing\n", "");
  report_timing("best time:", seconds, bytes);
  return ok;
}

// ---- 3. softmax over rows, written as expressions (needs the axis reductions) ------------------
// sum/max over axes are found by argument-dependent lookup, so this part switches itself on in
// builds of ember that have them (include/ember/exec/reduce.hpp).
template <class T>
concept HasAxisReductions = requires(const T& t) {
  Tensor<float>(max(t, {1}, true));
  Tensor<float>(sum(t, {1}, true));
};

template <class T>
bool softmax_demo(Device dev, std::int64_t n, int reps) {
  if constexpr (!HasAxisReductions<Tensor<T>>) {
    (void)dev;
    (void)n;
    (void)reps;
    std::printf("\n[3] softmax: skipped, this build of ember has no sum/max over axes yet\n");
    return true;
  } else {
    const std::int64_t cols = std::min<std::int64_t>(1024, n);
    const std::int64_t rows = std::max<std::int64_t>(1, n / cols);
    std::printf(
        "\n[3] softmax over rows: m = max(x, {1}, keepdim); s = sum(exp(x - m), {1}, "
        "keepdim); y = exp(x - m) / s\n");
    std::printf("    x: float32 [%lld, %lld]\n", static_cast<long long>(rows),
                static_cast<long long>(cols));
    const Tensor<T> x = ember::randn<T>({rows, cols}, 5, dev, 0.0, 2.0);
    auto softmax = [&] {
      const Tensor<T> m = max(x, {1}, true);
      const Tensor<T> s = sum(exp(x - m), {1}, true);
      return Tensor<T>(exp(x - m) / s);
    };
    const std::uint64_t before = ember::launch_count();
    Tensor<T> y = softmax();
    synchronize(dev);
    report_launches(ember::launch_count() - before, "max, sum of exp, divide");

    const double seconds = best_seconds(dev, reps, [&] { y = softmax(); });
    const double bytes = static_cast<double>(2 * rows * cols) * sizeof(T);

    const Tensor<T> hx = x.to(Device::cpu()), hy = y.to(Device::cpu());
    const T *px = hx.data(), *py = hy.data();
    const double tol = 1e-5;
    double sum_e = 0, sum_r = 0, max_err = 0;
    std::int64_t bad = 0;
#pragma omp parallel for reduction(+ : sum_e, sum_r, bad) reduction(max : max_err)
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* xr = px + r * cols;
      const T* yr = py + r * cols;
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < cols; ++j) m = std::max(m, static_cast<double>(xr[j]));
      double s = 0;
      for (std::int64_t j = 0; j < cols; ++j) s += std::exp(static_cast<double>(xr[j]) - m);
      for (std::int64_t j = 0; j < cols; ++j) {
        const double want = std::exp(static_cast<double>(xr[j]) - m) / s;
        const double e = rel_error(static_cast<double>(yr[j]), want, 1e-6);
        sum_e += static_cast<double>(yr[j]);
        sum_r += want;
        max_err = std::max(max_err, e);
        bad += e > tol ? 1 : 0;
      }
    }
    Check c{sum_e, sum_r, max_err, bad};
    print_values("values:", hy, rows * cols);
    const bool ok = report_check(c, tol, "float32 arithmetic; each row sums to 1");
    report_timing("best time:", seconds, bytes);
    std::printf("    (bandwidth counts one read of x and one write of y)\n");
    return ok;
  }
}

inline std::string device_description(Device dev) {
  if (dev.is_cuda()) {
#if defined(EMBER_WITH_CUDA)
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, dev.index()) == cudaSuccess) {
      return dev.str() + " (" + p.name + ", " + std::to_string(p.multiProcessorCount) + " SMs, " +
             mib(static_cast<std::int64_t>(p.totalGlobalMem)) + ")";
    }
#endif
    return dev.str();
  }
#if defined(_OPENMP)
  const int threads = omp_get_max_threads();
#else
  const int threads = 1;
#endif
  return "cpu (" + std::to_string(threads) + " OpenMP thread" + (threads == 1 ? "" : "s") + ")";
}

inline int run(int argc, char** argv) {
  const Options opt = parse(argc, argv);

  Device dev = Device::cpu();
  std::string why_cpu;
#if defined(EMBER_CUDA_KERNELS)
  if (opt.force_cpu) {
    why_cpu = "--cpu was given";
  } else if (ember::cuda::available()) {
    dev = Device::cuda(0);
  } else {
    why_cpu = ember::cuda::unavailable_reason();
  }
#elif defined(EMBER_WITH_CUDA)
  why_cpu = "this program was compiled by the host compiler, not nvcc";
#else
  why_cpu = "this build of ember has no CUDA (EMBER_CUDA=OFF or no CUDA toolkit)";
#endif

  const std::int64_t cols = std::min<std::int64_t>(8192, opt.elements);
  const std::int64_t rows = std::max<std::int64_t>(1, opt.elements / cols);
  const std::int64_t n = rows * cols;

  std::printf("ember quickstart\n");
  std::printf("  device:    %s\n", device_description(dev).c_str());
  if (!why_cpu.empty()) std::printf("             (on the CPU because %s)\n", why_cpu.c_str());
  std::printf("  size:      %s elements per tensor, best of %d runs per expression\n",
              thousands(n).c_str(), opt.reps);

  try {
    const std::uint64_t launches_at_start = ember::launch_count();
    bool ok = chain_demo(dev, rows, cols, opt.reps);
    ok = gelu_demo(dev, n, opt.reps) && ok;
    ok = softmax_demo<float>(dev, n, opt.reps) && ok;

    const ember::MemoryStats ms = ember::memory_stats(dev);
    std::printf("\nmemory on %s: %s in use now, peak %s, %s allocations in total",
                dev.str().c_str(), mib(ms.bytes_in_use).c_str(), mib(ms.peak_bytes_in_use).c_str(),
                thousands(ms.allocations).c_str());
    if (dev.is_cuda()) std::printf(", %s reserved by the pool", mib(ms.reserved_bytes).c_str());
    std::printf(
        "\nkernels launched in all (including the inputs' random fill and the timed "
        "repetitions): %llu\n",
        static_cast<unsigned long long>(ember::launch_count() - launches_at_start));
    std::printf("%s\n", ok ? "all results match the float64 reference"
                           : "SOME RESULTS DO NOT MATCH the float64 reference");
    return ok ? 0 : 1;
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "quickstart: %s\n", e.what());
    return 1;
  }
}

}  // namespace quickstart
