// The CPU's arithmetic limit, measured: every OpenMP thread runs independent chains of
// fused multiply-adds (float, on the widest vectors the build targets: 512 or 256 bits) and, where
// the CPU has AVX512-BF16, of VDPBF16PS (bf16 pairs into float), with no memory traffic. The chains
// are twelve long-latency accumulators a thread, more than FMA latency times the FMA ports of any
// x86 core needs, so the rate is the cores' issue limit at the clock they hold under that load.
// bench/resnet_cpu.sh and bench/bert_cpu.sh run it beside the models and give each step's FLOP rate
// as a share of it.
//
//   peak/f32_fma     flops = 2 per FMA lane (16 lanes a zmm, 8 a ymm)
//   peak/bf16_dot    flops = 2 per bf16 product (32 a zmm), the dot products of bf16 GEMMs
//                    without AMX (oneDNN's avx512_core_bf16, ember's ops/matmul/bf16_pairs.hpp)
// Both report FLOP/s as the counter "flops" (rate over the whole machine).
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <omp.h>

#include <cstdint>
#include <cstring>

#include <ember/core/cpu_features.hpp>

namespace {

constexpr int kChains = 12;
constexpr std::int64_t kRounds = 1 << 22;  // per thread and iteration: 50M FMAs, ~15 ms a core

// The widest FMA the build targets (ember::ember compiles for the build machine, EMBER_NATIVE).
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec broadcast(float x) { return _mm512_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
#elif defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec broadcast(float x) { return _mm256_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
#endif

/// The lanes' sum (GCC 12's _mm512_reduce_add_ps trips its own -Wuninitialized).
template <class V>
float sum(V v) {
  float lanes[sizeof(V) / sizeof(float)];
  std::memcpy(lanes, &v, sizeof v);
  float s = 0;
  for (const float x : lanes) s += x;
  return s;
}

#if defined(__AVX512F__) || defined(__FMA__)
/// kRounds x kChains FMAs on each thread; their sum, so that nothing is optimised away.
float fma_chains() {
  float total = 0;
#pragma omp parallel reduction(+ : total)
  {
    Vec acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = broadcast(1.0f + static_cast<float>(i) * 1e-7f);
    const Vec a = broadcast(0.9999999f), b = broadcast(1e-7f);
    for (std::int64_t r = 0; r < kRounds; ++r) {
#pragma GCC unroll 12
      for (int i = 0; i < kChains; ++i) acc[i] = fma(acc[i], a, b);
    }
    for (int i = 0; i < kChains; ++i) total += sum(acc[i]);
  }
  return total;
}

void f32_fma(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(fma_chains());
  state.counters["flops"] = benchmark::Counter(
      2.0 * kLanes * kChains * static_cast<double>(kRounds) * omp_get_max_threads(),
      benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(f32_fma)->Name("peak/f32_fma")->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

#if defined(__AVX512BF16__)
float bf16_dot_chains() {
  float total = 0;
#pragma omp parallel reduction(+ : total)
  {
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_setzero_ps();
    const __m512bh one = (__m512bh)_mm512_set1_epi16(0x3f80);  // bf16 1.0 in every half
    for (std::int64_t r = 0; r < kRounds; ++r) {
#pragma GCC unroll 12
      for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], one, one);
    }
    for (int i = 0; i < kChains; ++i) total += sum(acc[i]);
  }
  return total;
}

void bf16_dot(benchmark::State& state) {
  if (!ember::cpu_has_avx512_bf16()) {
    state.SkipWithError("this CPU lacks AVX512-BF16");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(bf16_dot_chains());
  state.counters["flops"] =
      benchmark::Counter(2.0 * 32 * kChains * static_cast<double>(kRounds) * omp_get_max_threads(),
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(bf16_dot)->Name("peak/bf16_dot")->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

}  // namespace

BENCHMARK_MAIN();
