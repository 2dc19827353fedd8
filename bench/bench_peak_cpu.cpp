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

/// kRounds x kChains applications of `step` (one instruction: acc = step(acc)) to independent
/// accumulators, on each thread; their sum, so that nothing is optimised away.
template <class V, class Step>
float chains(V first, Step step) {
  float total = 0;
#pragma omp parallel reduction(+ : total)
  {
    V acc[kChains];  // chain i starts i steps ahead: no two chains hold the same value
    for (int i = 0; i < kChains; ++i) acc[i] = i == 0 ? first : step(acc[i - 1]);
    for (std::int64_t r = 0; r < kRounds; ++r) {
#pragma GCC unroll 12
      for (int i = 0; i < kChains; ++i) acc[i] = step(acc[i]);
    }
    for (int i = 0; i < kChains; ++i) total += sum(acc[i]);
  }
  return total;
}

/// Times `chains(first, step)` and reports its rate as the counter "flops", `flops_per_step`
/// for each application of `step`.
template <class V, class Step>
void run(benchmark::State& state, V first, Step step, double flops_per_step) {
  for (auto _ : state) benchmark::DoNotOptimize(chains(first, step));
  state.counters["flops"] = benchmark::Counter(
      flops_per_step * kChains * static_cast<double>(kRounds) * omp_get_max_threads(),
      benchmark::Counter::kIsIterationInvariantRate);
}

#if defined(__AVX512F__) || defined(__FMA__)
void f32_fma(benchmark::State& state) {
  const Vec a = broadcast(0.9999999f), b = broadcast(1e-7f);
  const auto step = [&](Vec x) { return fma(x, a, b); };
  run(state, broadcast(1.0f), step, 2.0 * kLanes);
}
BENCHMARK(f32_fma)->Name("peak/f32_fma")->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

#if defined(__AVX512BF16__)
void bf16_dot(benchmark::State& state) {
  if (!ember::cpu_has_avx512_bf16()) {
    state.SkipWithError("this CPU lacks AVX512-BF16");
    return;
  }
  const __m512bh one = (__m512bh)_mm512_set1_epi16(0x3f80);  // bf16 1.0 in every half
  const auto step = [&](__m512 x) { return _mm512_dpbf16_ps(x, one, one); };
  run(state, _mm512_setzero_ps(), step, 2.0 * 32);
}
BENCHMARK(bf16_dot)->Name("peak/bf16_dot")->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

}  // namespace

BENCHMARK_MAIN();
