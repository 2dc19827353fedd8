// What every CPU benchmark executable in bench/ shares: the thread count, the contention probe
// (how much CPU other processes took while a benchmark ran), the timing mode, the byte counters
// bench/report.py reads, registration with the common settings, and the run's context (the BLAS
// ember was built with among it, for the benchmarks that measure products).
//
// Not a benchmark itself: CMake builds one executable per bench/*.cpp, and this is a header.
#pragma once

#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <ember/ops/matmul/cblas.hpp>

namespace ember_bench {

inline constexpr double kWarmup = 0.1;  // seconds of warm-up before each measurement

/// The sizes every elementwise benchmark runs: 2^16 (L2), 2^20 (L3), 2^24 (DRAM) elements.
inline const std::vector<std::int64_t> kSizes = {std::int64_t{1} << 16, std::int64_t{1} << 20,
                                                 std::int64_t{1} << 24};

/// OpenMP's thread count (what ember's CPU executor uses).
inline int threads() {
  static const int n = omp_get_max_threads();
  return n;
}

// ---- other processes on the CPUs ----
// OpenMP barriers and Eigen's pool both assume the cores are theirs: with another process on
// one of the two cores a parallel region waits a scheduler tick for its other half. Each
// benchmark reports `others_cpu`, the share of the machine's CPU time that other processes used
// while it ran (from /proc/stat minus this process's own time), so report.py can drop the
// repetitions that were disturbed; before each measurement it waits for a quiet moment.
struct CpuSample {
  long long busy = 0, total = 0, self = 0;
  bool ok = false;
};
inline CpuSample cpu_sample() {
  CpuSample s;
  std::ifstream stat("/proc/stat");
  std::string cpu;
  long long v[8] = {};
  if (!(stat >> cpu) || cpu != "cpu") return s;
  for (long long& x : v) stat >> x;  // user nice system idle iowait irq softirq steal
  s.total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
  s.busy = s.total - v[3] - v[4];
  std::ifstream self("/proc/self/stat");
  std::string line;
  std::getline(self, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos) return s;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  s.self = utime + stime;
  s.ok = true;
  return s;
}
/// Share of all CPU time between a and b used by other processes (0 when unknown).
inline double others_share(const CpuSample& a, const CpuSample& b) {
  if (!a.ok || !b.ok || b.total <= a.total) return 0.0;
  const double others = double((b.busy - a.busy) - (b.self - a.self));
  return std::max(0.0, others / double(b.total - a.total));
}

/// Waits (sleeping) until other processes leave the CPUs: at most EMBER_BENCH_QUIET_WAIT seconds
/// per measurement (default 20) and EMBER_BENCH_QUIET_TOTAL seconds in all (default 900).
inline double env_seconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : fallback;
}
inline void wait_for_quiet() {
  static const double per_wait = env_seconds("EMBER_BENCH_QUIET_WAIT", 20);
  static double budget = env_seconds("EMBER_BENCH_QUIET_TOTAL", 900);
  for (double waited = 0; waited < per_wait && budget > 0; waited += 0.1, budget -= 0.1) {
    const CpuSample a = cpu_sample();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (others_share(a, cpu_sample()) <= 0.05) return;
  }
}

/// Measures contention over the timed loop: construct before the loop, finish() after it.
class ContentionProbe {
 public:
  ContentionProbe() : start_((wait_for_quiet(), cpu_sample())) {}
  void finish(benchmark::State& state) const {
    state.counters["others_cpu"] = others_share(start_, cpu_sample());
  }

 private:
  CpuSample start_;
};

// ---- timing mode, counters, registration ----

/// EMBER_BENCH_CPU_TIME=1 times every benchmark by the CPU time of the whole process instead of
/// the wall clock: with one thread (OMP_NUM_THREADS=1) that is the time the work itself took,
/// and other processes on the machine do not inflate it. For a machine you cannot have to
/// yourself.
inline bool cpu_time_mode() {
  static const bool on = [] {
    const char* v = std::getenv("EMBER_BENCH_CPU_TIME");
    return v && *v && *v != '0';
  }();
  return on;
}

/// The counters bench/report.py reads: bytes_per_iter is the fewest bytes that must cross
/// memory in one iteration (bandwidth = bytes_per_iter / time).
inline void report_bytes(benchmark::State& state, std::int64_t bytes_per_iteration,
                         std::int64_t n) {
  state.SetBytesProcessed(state.iterations() * bytes_per_iteration);
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["elements"] = static_cast<double>(n);
  state.counters["threads"] = threads();
  state.counters["bytes_per_iter"] = static_cast<double>(bytes_per_iteration);
}

/// Registers `f` as "<name>/<n>" for each size, wall-clock (or process CPU) timed, in µs.
template <class F>
benchmark::internal::Benchmark* add(const std::string& name, F f,
                                    const std::vector<std::int64_t>& sizes = kSizes) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), f);
  for (std::int64_t n : sizes) b->Arg(n);
  if (cpu_time_mode()) {
    b->MeasureProcessCPUTime();
  } else {
    b->UseRealTime();
  }
  b->MinWarmUpTime(kWarmup)->Unit(benchmark::kMicrosecond);
  return b;
}

/// The context every run records (report.py prints it): threads, timing, compiler, vector ISA.
inline void add_common_context() {
  benchmark::AddCustomContext("omp_threads", std::to_string(threads()));
  benchmark::AddCustomContext("time_measure", cpu_time_mode() ? "process_cpu" : "real");
#if defined(__VERSION__)
  benchmark::AddCustomContext("compiler", __VERSION__);
#endif
#if defined(__AVX512F__)
  benchmark::AddCustomContext("isa", "avx512");
#elif defined(__AVX2__)
  benchmark::AddCustomContext("isa", "avx2");
#else
  benchmark::AddCustomContext("isa", "baseline (no -march)");
#endif
}

/// The BLAS ember calls ("none": ember's own GEMM), with MKL's version or OpenBLAS's build,
/// kernel and threads.
inline void add_blas_context() {
  benchmark::AddCustomContext("blas", ember::ops::cpu::blas_library());
#if defined(EMBER_WITH_MKL)
  char mkl_version[256];
  mkl_get_version_string(mkl_version, sizeof mkl_version);
  benchmark::AddCustomContext("mkl", mkl_version);
#elif defined(EMBER_WITH_BLAS) && defined(OPENBLAS_VERSION)
  benchmark::AddCustomContext("openblas", openblas_get_config());
  benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  benchmark::AddCustomContext("openblas_threads", std::to_string(openblas_get_num_threads()));
#endif
}

}  // namespace ember_bench
