// The CPU's float matrix product on each library ember could call, side by side in one process,
// over the shape classes the trainers and attention use: ember's gemm (the library
// ops/matmul/gemm_cpu.hpp chooses), oneDNN's matmul, oneMKL and OpenBLAS called directly. This is
// the measurement behind the choice (docs/benchmarks.md, "The CPU matrix product").
//
// Names are "gemm_f32/<library>/<case>", case "MxNxK" with "At"/"Bt" where A or B is read
// transposed (a weight's gradient reads A transposed, a linear's forward B), or "BxMxNxK" for a
// batch of products (attention's). Libraries:
//   ember      ember::ops::cpu::gemm, or gemm_batch for a batch (what ember::matmul runs)
//   onednn     ember::ops::onednn::gemm (one oneDNN matmul primitive, a batch in one call)
//   mkl        cblas_sgemm / cblas_sgemm_batch_strided from the oneMKL ember links (an MKL build)
//   openblas   cblas_sgemm from Debian's OpenBLAS, opened with dlopen (RTLD_LOCAL | RTLD_DEEPBIND)
//              so that its symbols do not meet MKL's; a batch is a product per OpenMP thread with
//              one OpenBLAS thread. Left out where libopenblas.so.0 is not installed.
// Each result is checked against a float64 product on sampled entries. GFLOP/s counter "flops".
// Run with --benchmark_enable_random_interleaving=true --benchmark_repetitions=N
// (bench/gemm_cpu.sh) so that this VM's drift from minute to minute falls on every library alike.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "bench_support.hpp"

namespace {

using ember::ops::MatrixBatch;
using ember::ops::MatrixView;

struct Case {
  std::int64_t batch, M, N, K;
  bool ta = false, tb = false;
  std::string name() const {
    std::string s = batch > 1 ? std::to_string(batch) + "x" : "";
    s += std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    if (ta) s += "At";
    if (tb) s += "Bt";
    return s;
  }
  double flops() const { return 2.0 * double(batch) * double(M) * double(N) * double(K); }
  // Storage: A as [K, M] when transposed, B as [N, K]; every matrix of a batch dense.
  std::int64_t lda() const { return ta ? M : K; }
  std::int64_t ldb() const { return tb ? K : N; }
  MatrixView<const float> a(const float* p) const { return {p, M, K, ta ? 1 : K, ta ? M : 1}; }
  MatrixView<const float> b(const float* p) const { return {p, K, N, tb ? 1 : N, tb ? K : 1}; }
};

struct Operands {
  std::vector<float> a, b, c;
};
Operands& operands(const Case& g) {
  static std::map<std::string, std::unique_ptr<Operands>> cache;
  auto& slot = cache[g.name()];
  if (!slot) {
    slot = std::make_unique<Operands>();
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> d(-1, 1);
    slot->a.resize(static_cast<std::size_t>(g.batch * g.M * g.K));
    slot->b.resize(static_cast<std::size_t>(g.batch * g.K * g.N));
    slot->c.assign(static_cast<std::size_t>(g.batch * g.M * g.N), 0.0f);
    for (float& x : slot->a) x = d(rng);
    for (float& x : slot->b) x = d(rng);
  }
  return *slot;
}

/// Sampled entries of C against float64, relative to the sum of the terms' magnitudes: a sum of
/// K float products errs by at most K unit roundoffs of that (whatever the library's order).
bool check(benchmark::State& state, const Case& g, const Operands& d) {
  std::mt19937 rng(11);
  double worst = 0;
  for (int s = 0; s < 64; ++s) {
    const std::int64_t p = std::uniform_int_distribution<std::int64_t>(0, g.batch - 1)(rng);
    const std::int64_t i = std::uniform_int_distribution<std::int64_t>(0, g.M - 1)(rng);
    const std::int64_t j = std::uniform_int_distribution<std::int64_t>(0, g.N - 1)(rng);
    const auto A = g.a(d.a.data() + p * g.M * g.K);
    const auto B = g.b(d.b.data() + p * g.K * g.N);
    double sum = 0, magnitude = 0;
    for (std::int64_t k = 0; k < g.K; ++k) {
      const double t = double(A(i, k)) * double(B(k, j));
      sum += t;
      magnitude += std::fabs(t);
    }
    const double c = d.c[static_cast<std::size_t>((p * g.M + i) * g.N + j)];
    worst = std::max(worst, std::fabs(c - sum) / (magnitude + 1e-30));
  }
  if (worst > double(g.K) * 0x1p-24) {
    state.SkipWithError(("wrong product: error " + std::to_string(worst)).c_str());
    return false;
  }
  return true;
}

template <class Product>
void run(benchmark::State& state, const Case& g, Product product) {
  Operands& d = operands(g);
  const ember_bench::ContentionProbe probe;
  for (auto _ : state) {
    product(d);
    benchmark::DoNotOptimize(d.c.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check(state, g, d)) return;
  state.counters["flops_per_iter"] = g.flops();
  state.counters["flops"] =
      benchmark::Counter(g.flops(), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = ember_bench::threads();
}

MatrixBatch<const float> batch_of(const MatrixView<const float>& first, std::int64_t n,
                                  std::int64_t stride) {
  MatrixBatch<const float> m{first};
  if (n > 1) {
    m.batch_rank = 1;
    m.batch_sizes[0] = n;
    m.batch_strides[0] = stride;
  }
  return m;
}

void ember_gemm(const Case& g, Operands& d) {
  const MatrixView<float> C{d.c.data(), g.M, g.N, g.N, 1};
  if (g.batch == 1) {
    ember::ops::cpu::gemm<float>(g.a(d.a.data()), g.b(d.b.data()), C, 1.0f, 0.0f);
    return;
  }
  MatrixBatch<float> c{C};
  c.batch_rank = 1;
  c.batch_sizes[0] = g.batch;
  c.batch_strides[0] = g.M * g.N;
  if (!ember::ops::cpu::gemm_batch<float>(batch_of(g.a(d.a.data()), g.batch, g.M * g.K),
                                          batch_of(g.b(d.b.data()), g.batch, g.K * g.N), c, 1.0f,
                                          0.0f)) {
    for (std::int64_t p = 0; p < g.batch; ++p) {
      ember::ops::cpu::gemm<float>(g.a(d.a.data() + p * g.M * g.K), g.b(d.b.data() + p * g.K * g.N),
                                   {d.c.data() + p * g.M * g.N, g.M, g.N, g.N, 1}, 1.0f, 0.0f);
    }
  }
}

#if defined(EMBER_WITH_DNNL)
void onednn_gemm(const Case& g, Operands& d) {
  MatrixBatch<float> c{MatrixView<float>{d.c.data(), g.M, g.N, g.N, 1}};
  if (g.batch > 1) {
    c.batch_rank = 1;
    c.batch_sizes[0] = g.batch;
    c.batch_strides[0] = g.M * g.N;
  }
  ember::ops::onednn::gemm<float>(batch_of(g.a(d.a.data()), g.batch, g.M * g.K),
                                  batch_of(g.b(d.b.data()), g.batch, g.K * g.N), c, 1.0f, 0.0f);
}
#endif

#if defined(EMBER_WITH_MKL)
void mkl_gemm(const Case& g, Operands& d) {
  const auto ta = g.ta ? CblasTrans : CblasNoTrans, tb = g.tb ? CblasTrans : CblasNoTrans;
  if (g.batch == 1) {
    cblas_sgemm(CblasRowMajor, ta, tb, int(g.M), int(g.N), int(g.K), 1.0f, d.a.data(), int(g.lda()),
                d.b.data(), int(g.ldb()), 0.0f, d.c.data(), int(g.N));
  } else {
    cblas_sgemm_batch_strided(CblasRowMajor, ta, tb, g.M, g.N, g.K, 1.0f, d.a.data(), g.lda(),
                              g.M * g.K, d.b.data(), g.ldb(), g.K * g.N, 0.0f, d.c.data(), g.N,
                              g.M * g.N, g.batch);
  }
}
#endif

/// OpenBLAS's sgemm and thread setter, opened beside whatever BLAS ember links.
struct OpenBlas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
  Sgemm sgemm = nullptr;
  void (*set_threads)(int) = nullptr;
  int (*get_threads)() = nullptr;
  static const OpenBlas& get() {
    static const OpenBlas blas = [] {
      OpenBlas b;
      // Its idle threads sleep at once instead of spinning against the next library's (read
      // when the library loads).
      setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
      void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (lib == nullptr) return b;
      b.sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cblas_sgemm"));
      b.set_threads = reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads"));
      b.get_threads = reinterpret_cast<int (*)()>(dlsym(lib, "openblas_get_num_threads"));
      if (!b.set_threads || !b.get_threads) b.sgemm = nullptr;
      return b;
    }();
    return blas;
  }
};

void openblas_gemm(const Case& g, Operands& d) {
  const OpenBlas& blas = OpenBlas::get();
  constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;  // CBLAS's enumerators
  const int ta = g.ta ? kTrans : kNoTrans, tb = g.tb ? kTrans : kNoTrans;
  if (g.batch == 1) {
    blas.sgemm(kRowMajor, ta, tb, int(g.M), int(g.N), int(g.K), 1.0f, d.a.data(), int(g.lda()),
               d.b.data(), int(g.ldb()), 0.0f, d.c.data(), int(g.N));
    return;
  }
  const int threads = blas.get_threads();
  blas.set_threads(1);
#pragma omp parallel for schedule(static)
  for (std::int64_t p = 0; p < g.batch; ++p) {
    blas.sgemm(kRowMajor, ta, tb, int(g.M), int(g.N), int(g.K), 1.0f, d.a.data() + p * g.M * g.K,
               int(g.lda()), d.b.data() + p * g.K * g.N, int(g.ldb()), 0.0f,
               d.c.data() + p * g.M * g.N, int(g.N));
  }
  blas.set_threads(threads);
}

/// "gemm_f32/<library>/<case>", appended piece by piece (GCC 12 warns, falsely, of overlapping
/// copies where a string is prepended to).
std::string benchmark_name(const char* library, const Case& g) {
  std::string name = "gemm_f32/";
  name += library;
  name += '/';
  name += g.name();
  return name;
}

const bool registered = [] {
  const std::vector<Case> cases = {
      // Small and square.
      {1, 128, 128, 128},
      {1, 256, 256, 256},
      {1, 1024, 1024, 1024},
      {1, 2048, 2048, 2048},
      // BERT-base at 1,024 tokens: a linear's forward (B transposed), its input's gradient (B
      // plain) and its weight's gradient (A transposed), for the projection and the FFN.
      {1, 1024, 768, 768, false, true},
      {1, 1024, 3072, 768, false, true},
      {1, 1024, 768, 3072, false, true},
      {1, 1024, 768, 3072},
      {1, 1024, 3072, 768},
      {1, 768, 768, 1024, true},
      {1, 3072, 768, 1024, true},
      // GPT-2 124M at 1,024 tokens (its Conv1D reads a plain [in, out] weight): the QKV
      // projection, the LM head tied to the token table (forward, input gradient).
      {1, 1024, 2304, 768},
      {1, 1024, 50304, 768, false, true},
      {1, 1024, 768, 50304},
      // Narrow: a small GPT (width 128) and narrower outputs.
      {1, 1024, 384, 128, false, true},
      {1, 1024, 128, 512, false, true},
      {1, 512, 128, 1024, true},
      {1, 1024, 64, 512},
      // Attention's batches: a small GPT's scores and probabilities x values (64 heads x 64
      // tokens, head size 32), BERT-mini's (64 x 128 tokens, head size 64).
      {64, 64, 64, 32, false, true},
      {64, 64, 32, 64},
      {64, 128, 128, 64, false, true},
      {64, 128, 64, 128},
  };
  for (const Case& g : cases) {
    ember_bench::add(
        benchmark_name("ember", g),
        [g](benchmark::State& s) { run(s, g, [&](Operands& d) { ember_gemm(g, d); }); }, {});
#if defined(EMBER_WITH_DNNL)
    ember_bench::add(
        benchmark_name("onednn", g),
        [g](benchmark::State& s) { run(s, g, [&](Operands& d) { onednn_gemm(g, d); }); }, {});
#endif
#if defined(EMBER_WITH_MKL)
    ember_bench::add(benchmark_name("mkl", g),
                     [g](benchmark::State& s) { run(s, g, [&](Operands& d) { mkl_gemm(g, d); }); },
                     {});
#endif
    if (OpenBlas::get().sgemm) {
      ember_bench::add(
          benchmark_name("openblas", g),
          [g](benchmark::State& s) { run(s, g, [&](Operands& d) { openblas_gemm(g, d); }); }, {});
    }
  }
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ember_bench::add_common_context();
  ember_bench::add_blas_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
