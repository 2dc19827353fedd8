// What the GPU benchmark programs in bench/gpu/ share (bench_elementwise_gpu.cu,
// bench_autograd_gpu.cu, bench_ops_gpu.cu): the CUDA error check, the records and their JSON
// (the format bench/gpu/summarize.py reads), timing with CUDA events on ember's stream, the
// host-side helpers of the checks, and the command line and main.
//
// Not a benchmark itself: bench/gpu/check.sh compiles each bench/gpu/*.cu on its own with nvcc
// (-Iinclude from the repository root), and this is a header they include from their directory.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.hpp>

// Exits with status 2 on a CUDA error, naming the call's file and line.
#define CK(call)                                                                            \
  do {                                                                                      \
    cudaError_t st_ = (call);                                                               \
    if (st_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(st_), __FILE__, \
                   __LINE__, cudaGetErrorString(st_));                                      \
      std::exit(2);                                                                         \
    }                                                                                       \
  } while (0)

namespace ember_gpu_bench {

struct Record {
  std::string bench, shape, impl;
  double ms_median = 0, ms_min = 0, ms_max = 0, bytes = 0, flops = 0;
  int reps = 0;
  std::string check = "ok";
};

// How a program shows its records: the widths of the bench, shape and impl columns of the line
// printed for each, and whether it reports FLOPs (TFLOP/s on that line, "flops" in each JSON
// record); without, the line shows the bandwidth alone and the JSON has no "flops".
struct Layout {
  int bench = 18, shape = 14, impl = 22;
  bool flops = false;
};

inline std::vector<Record> records;
inline Layout g_layout;
inline int g_warmup = 3;
inline int g_reps = 20;
inline const char* g_json = nullptr;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// How large a run is: `full`, the sizes the targets are about; `quick`, small sizes on a GPU (a
/// smoke test of the program); `tiny`, the smallest sizes that still take every path, timed once
/// without warm-up (the emulated CUDA device's run in CI: the checks, not the times, matter).
enum class Size { full, quick, tiny };

/// The value for `size` among the three.
template <class V>
V by_size(Size size, V full, V quick, V tiny) {
  return size == Size::full ? full : size == Size::quick ? quick : tiny;
}

inline void write_json(const char* path) {
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
    const char* sep = i + 1 < records.size() ? "," : "";
    if (g_layout.flops) {
      std::fprintf(f,
                   "    {\"bench\": \"%s\", \"shape\": \"%s\", \"impl\": \"%s\", \"ms\": %.6f, "
                   "\"ms_min\": %.6f, \"ms_max\": %.6f, \"bytes\": %.0f, \"flops\": %.0f, "
                   "\"reps\": %d, \"check\": \"%s\"}%s\n",
                   r.bench.c_str(), r.shape.c_str(), r.impl.c_str(), r.ms_median, r.ms_min,
                   r.ms_max, r.bytes, r.flops, r.reps, r.check.c_str(), sep);
    } else {
      std::fprintf(f,
                   "    {\"bench\": \"%s\", \"shape\": \"%s\", \"impl\": \"%s\", \"ms\": %.6f, "
                   "\"ms_min\": %.6f, \"ms_max\": %.6f, \"bytes\": %.0f, \"reps\": %d, "
                   "\"check\": \"%s\"}%s\n",
                   r.bench.c_str(), r.shape.c_str(), r.impl.c_str(), r.ms_median, r.ms_min,
                   r.ms_max, r.bytes, r.reps, r.check.c_str(), sep);
    }
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

// Keeps a record and rewrites the JSON, so a run cut short still leaves what it measured.
inline void keep(const Record& r) {
  records.push_back(r);
  if (g_json) write_json(g_json);
}

inline cudaStream_t stream() { return ember::cuda::current_stream(0); }

// The line printed for each record: its median time and bandwidth (and TFLOP/s with FLOPs).
inline void print_record(const Record& r) {
  const Layout& l = g_layout;
  if (l.flops) {
    const double s = r.ms_median * 1e-3;
    std::printf("%-*s %-*s %-*s %9.3f ms  %7.1f TFLOP/s  %7.1f GB/s  (min %.3f, max %.3f)\n",
                l.bench, r.bench.c_str(), l.shape, r.shape.c_str(), l.impl, r.impl.c_str(),
                r.ms_median, r.flops / s / 1e12, r.bytes / s / 1e9, r.ms_min, r.ms_max);
  } else {
    std::printf("%-*s %-*s %-*s %9.3f ms  %8.1f GB/s  (min %.3f, max %.3f)\n", l.bench,
                r.bench.c_str(), l.shape, r.shape.c_str(), l.impl, r.impl.c_str(), r.ms_median,
                r.bytes / r.ms_median / 1e6, r.ms_min, r.ms_max);
  }
  std::fflush(stdout);
}

// Median, min and max of g_reps runs of f after g_warmup, each bracketed by events on ember's
// stream; `setup`, when given, runs before each start event (untimed on the GPU as long as the
// host keeps ahead of it). The host's time to enqueue f (cuBLASLt's heuristic query, cuDNN's
// descriptors, the tape) is in the measurement when the GPU waits for it, as it would be in a
// model. Prints the record's line.
inline Record time_it(const std::string& bench, const std::string& shape, const std::string& impl,
                      double bytes, double flops, const std::function<void()>& setup,
                      const std::function<void()>& f) {
  for (int i = 0; i < g_warmup; ++i) {
    if (setup) setup();
    f();
  }
  CK(cudaStreamSynchronize(stream()));
  CK(cudaGetLastError());
  std::vector<cudaEvent_t> ev(2 * static_cast<std::size_t>(g_reps));
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int r = 0; r < g_reps; ++r) {
    if (setup) setup();
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
  rec.flops = flops;
  rec.reps = g_reps;
  rec.ms_min = ms.front();
  rec.ms_max = ms.back();
  rec.ms_median =
      ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  print_record(rec);
  return rec;
}

// The same with FLOPs and no setup.
inline Record time_it(const std::string& bench, const std::string& shape, const std::string& impl,
                      double bytes, double flops, const std::function<void()>& f) {
  return time_it(bench, shape, impl, bytes, flops, nullptr, f);
}

// The same with neither FLOPs nor setup.
inline Record time_it(const std::string& bench, const std::string& shape, const std::string& impl,
                      double bytes, const std::function<void()>& f) {
  return time_it(bench, shape, impl, bytes, 0.0, nullptr, f);
}

template <class T>
std::vector<float> host_floats(const ember::Tensor<T>& t) {
  std::vector<T> v = t.to_vector();
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i]);
  return out;
}

inline std::string verdict(double err, double tol) {
  char buf[96];
  if (err <= tol) return "ok";  // false for NaN
  std::snprintf(buf, sizeof buf, "FAIL: error %.3g > %.3g", err, tol);
  return buf;
}

// The main of each program: parses [--json out.json] [--reps N] [--quick | --tiny], prints the
// device, runs body(size), which times and keeps the records, and writes the JSON (also when body
// throws). Exit status: 0 when every check passed, 1 on a usage error or an exception, 2 on a
// CUDA error (CK), 3 without a CUDA device, 4 when a check failed.
inline int bench_main(int argc, char** argv, const char* program, const Layout& layout,
                      const std::function<void(Size size)>& body) {
  g_layout = layout;
  Size size = Size::full;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      g_json = argv[++i];
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      g_reps = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--quick")) {
      size = Size::quick;
    } else if (!std::strcmp(argv[i], "--tiny")) {
      size = Size::tiny;
      g_warmup = 0;
      g_reps = 1;
    } else {
      std::fprintf(stderr, "usage: %s [--json out.json] [--reps N] [--quick | --tiny]\n", argv[0]);
      return 1;
    }
  }
  try {
    if (!ember::cuda::available()) {
      std::fprintf(stderr, "%s: no CUDA device (%s)\n", program,
                   ember::cuda::unavailable_reason().c_str());
      return 3;
    }
    cudaDeviceProp p{};
    CK(cudaGetDeviceProperties(&p, 0));
    std::printf("device: %s, %d SMs, L2 %d MiB, %.1f GiB\n", p.name, p.multiProcessorCount,
                p.l2CacheSize >> 20, double(p.totalGlobalMem) / (1 << 30));
    body(size);
    if (g_json) write_json(g_json);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    if (g_json) write_json(g_json);
    return 1;
  }
  bool ok = true;
  for (const Record& r : records) ok = ok && r.check == "ok";
  return ok ? 0 : 4;
}

}  // namespace ember_gpu_bench
