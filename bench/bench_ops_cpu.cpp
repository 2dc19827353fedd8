// CPU benchmarks of ember's operators (issue 4) against the library call or loop each should
// match: matrix products and linear against the build's BLAS (oneMKL or OpenBLAS, the context's
// "blas") called directly, conv2d against im2col + the BLAS written here, softmax and layer_norm
// against plain OpenMP loops. ember's CPU matmul and conv2d call the same BLAS or oneDNN (run with
// EMBER_CPU_GEMM=blas or =onednn to pin one), so the ratios measure the library ember picks and
// what ember adds around it (operand analysis, output allocation, its im2col, the bias/activation
// pass), and should be near 1.0.
//
// Names are "<group>/<variant>/<case>" so bench/report.py can pair ember with the peer of its
// group (the one variant whose name does not start with "ember"):
//   op_gemm_f32         C[M, N] = A[M, K] B[K, N], case "MxNxK"
//       ember_matmul      ember::matmul(a, b): allocates C, calls cblas_sgemm
//       ember_blocked     ember::ops::cpu::gemm_blocked (what a build without BLAS gets), one size
//       blas              cblas_sgemm on the same buffers into a C allocated once
//   op_bmm_f32          C[b] = A[b] B[b] for a batch of small products, case "BxMxNxK"
//       ember_matmul      ember::matmul(a, b) on [B, M, K] x [B, K, N]: one oneDNN matmul
//       blas_loop         a product per OpenMP thread, cblas_sgemm with one BLAS thread (what
//                         ember ran before the batch went to oneDNN)
//   op_linear_gelu_f32  y[M, N] = gelu(x[M, K] w[N, K]^T + b[N]) (exact erf GELU), case "MxNxK"
//       ember_linear      ember::linear(x, w, b, Activation::gelu): GEMM, then one bias+GELU pass
//       blas_loop         cblas_sgemm (w transposed in place) + one OpenMP loop for bias and GELU,
//                         with ember's vectorised erf (ember::math::erf, as the other CPU
//                         benchmarks use ember's own transcendentals in their reference loops)
//   op_conv_nchw_f32    y = conv2d(x [N, C, H, W], w [O, C, KH, KW]), NCHW in and out
//       ember             ember::conv2d(x, w, opt)
//       im2col_blas       per image: im2col into col[C KH KW, OH OW] (rows copied with the zero
//                         padding cut off at both ends), then one cblas_sgemm
//                         y_n[O, OH OW] = w[O, C KH KW] col; a 1x1 stride-1 unpadded
//                         convolution skips the im2col (the image already is col)
//   op_conv_nhwc_f32    the same with a channels-last x (and so a channels-last y)
//       ember             ember::conv2d(x_channels_last, w, opt)
//       im2col_blas       per image: col[OH OW, KH KW C] (each (pixel, kh, kw) a run of C
//                         contiguous floats), then y_n[OH OW, O] = col w_r^T with w_r the weight
//                         as [O, KH, KW, C] (reordered once, before timing: a channels-last
//                         framework keeps its weights that way); a 1x1 stride-1 unpadded
//                         convolution is one GEMM over the whole batch, x as [N H W, C]
//   op_softmax_f32      y = softmax(x, axis 1), x [rows, cols], case "rowsxcols"
//       ember             ember::softmax(x, 1): an online-logsumexp reduction + one pass
//       loop_omp          one OpenMP loop over rows: max, sum of exp, scaled exp (the row stays
//                         in cache between its three sweeps), ember::math::exp
//   op_layernorm_f32    y = layer_norm(x, w[cols], b[cols], 1e-5)
//       ember             ember::layer_norm(x, w, b): mean, Welford variance, one pass
//       loop_omp          one OpenMP loop over rows: mean, variance (two-pass, in cache), write
//   op_add_layernorm_f32  y = layer_norm(x + r, w[cols], b[cols], 1e-5), the sum kept (the
//                       ending of a post-LN transformer's sublayer; the backward reads the sum)
//       ember_fused       ember::dropout_add_layer_norm(x, r, w, b) with p = 0: a row per thread,
//                         the sum written once and normalised while in cache
//       ember_fused_dropout  the same with dropout p = 0.1 on x (Philox per element)
//       ember_unfused     s = x + r, then ember::layer_norm(s, w, b): what the layers cost apart
//       loop_omp          one OpenMP loop over rows: s = x + r written, mean, variance, y
//   copy_f32/omp_copy   the STREAM-style copy of the rows' size: the bandwidth reference
//
// FLOPs (counter flops_per_iter; GFLOP/s = flops / time; multiply-add = 2 FLOPs, the bias and the
// activation are not counted):
//   GEMM, linear   2 M N K
//   conv2d         2 N O OH OW (C/groups) KH KW
// Bytes (counter bytes_per_iter; the fewest that must cross memory, STREAM's convention):
//   softmax        2 rows cols 4           (x read once, y written once)
//   layer_norm     2 rows cols 4 + 2 cols 4 (plus the weight and the bias)
//   add_layer_norm 4 rows cols 4 + 2 cols 4 (x and r read, the sum and y written)
//   copy           2 rows cols 4
// Every variant's result is checked after its timed loop against a float64 reference: 256
// sampled outputs of products and convolutions (the error relative to the sum of the absolute
// terms, so the tolerance does not depend on K), 64 sampled rows of softmax and layer norm.
//
// Threads: ember's passes and the reference loops run on OpenMP's threads, and so does oneMKL;
// OpenBLAS (Debian's pthread build) on its own pool, sized by OPENBLAS_NUM_THREADS or else
// OMP_NUM_THREADS. Where OpenMP passes and OpenBLAS's GEMMs alternate (conv2d, linear), run with
// OMP_WAIT_POLICY=passive so idle OpenMP threads sleep instead of spinning against OpenBLAS's
// (run_cpu.sh sets it).
// Times are wall-clock (UseRealTime), or process CPU time with EMBER_BENCH_CPU_TIME=1.
//
// Without CBLAS (EMBER_WITH_BLAS undefined) the peers are left out and ember's variants run on
// ember's own GEMM.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "bench_support.hpp"

namespace {

using ember::Shape;
using ember::Tensor;
using ember_bench::ContentionProbe;

// ---- registration and counters ----

/// Registers `f` as the one benchmark `name` (the case is part of the name: no Args).
benchmark::internal::Benchmark* add_case(const std::string& name,
                                         std::function<void(benchmark::State&)> f) {
  return ember_bench::add(name, std::move(f), {});
}

/// The counters of a compute-bound benchmark: FLOPs per iteration (report.py reads it) and the
/// rate Google Benchmark prints.
void report_flops(benchmark::State& state, double flops) {
  state.counters["flops_per_iter"] = flops;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  state.counters["threads"] = ember_bench::threads();
}

/// Fails the benchmark when `worst` (NaN included) exceeds `tol`.
bool verdict(benchmark::State& state, double worst, double tol) {
  if (!(worst <= tol)) {
    state.SkipWithError(("wrong result: relative error " + std::to_string(worst)).c_str());
    return false;
  }
  return true;
}

/// max(worst, err), with a NaN sticking.
void worsen(double& worst, double err) {
  if (worst == worst && !(err <= worst)) worst = err;
}

/// 256 sample indices spread over [0, n), the same for every variant.
std::vector<std::int64_t> samples(std::int64_t n, std::uint64_t salt) {
  std::vector<std::int64_t> out;
  std::uint64_t s = 0x9E3779B97F4A7C15ull ^ salt;
  for (int i = 0; i < 256; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    out.push_back(std::int64_t(s % std::uint64_t(n)));
  }
  out.front() = 0;
  out.back() = n - 1;
  return out;
}

/// A dense float tensor of normal values, made once, touched.
Tensor<float> randn(const Shape& s, std::uint64_t seed, double stddev = 1.0) {
  return ember::randn<float>(s, seed, ember::Device::cpu(), 0.0, stddev);
}

double gelu_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

// =============================================================================================
// GEMM and linear
// =============================================================================================

struct GemmCase {
  std::int64_t M, N, K;
  std::string name() const {
    return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  }
  double flops() const { return 2.0 * double(M) * double(N) * double(K); }
};

struct GemmData {
  Tensor<float> a, b;  // [M, K], [K, N]
  Tensor<float> c;     // [M, N], the peer's output, allocated and touched once
};
GemmData& gemm_data(const GemmCase& g) {
  static std::map<std::string, std::unique_ptr<GemmData>> cache;
  auto& slot = cache[g.name()];
  if (!slot) {
    slot = std::make_unique<GemmData>();
    slot->a = randn(Shape{g.M, g.K}, 1);
    slot->b = randn(Shape{g.K, g.N}, 2);
    slot->c = ember::full<float>(Shape{g.M, g.N}, 7.0);
  }
  return *slot;
}

/// c == a b at 256 sampled entries (a [M, K] and b [K, N] dense, c with row stride ldc).
bool check_gemm(benchmark::State& state, const float* a, const float* b, const float* c,
                std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t ldc) {
  double worst = 0;
  for (std::int64_t s : samples(M * N, 1)) {
    const std::int64_t i = s / N, j = s % N;
    double want = 0, mag = 0;
    for (std::int64_t k = 0; k < K; ++k) {
      const double t = double(a[i * K + k]) * double(b[k * N + j]);
      want += t;
      mag += std::fabs(t);
    }
    worsen(worst, std::fabs(double(c[i * ldc + j]) - want) / (mag + 1e-30));
  }
  return verdict(state, worst, 1e-5);
}

void gemm_ember(benchmark::State& state, GemmCase g) {
  auto& d = gemm_data(g);
  Tensor<float> c;
  const ContentionProbe probe;
  for (auto _ : state) {
    c = ember::matmul(d.a, d.b);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_gemm(state, d.a.data(), d.b.data(), c.data(), g.M, g.N, g.K, g.N)) return;
  report_flops(state, g.flops());
}

void gemm_blocked(benchmark::State& state, GemmCase g) {
  auto& d = gemm_data(g);
  using ember::ops::MatrixView;
  const MatrixView<const float> A{d.a.data(), g.M, g.K, g.K, 1};
  const MatrixView<const float> B{d.b.data(), g.K, g.N, g.N, 1};
  const MatrixView<float> C{d.c.data(), g.M, g.N, g.N, 1};
  const ContentionProbe probe;
  for (auto _ : state) {
    ember::ops::cpu::gemm_blocked<float>(A, B, C, 1.0f, 0.0f);
    benchmark::DoNotOptimize(d.c.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_gemm(state, d.a.data(), d.b.data(), d.c.data(), g.M, g.N, g.K, g.N)) return;
  report_flops(state, g.flops());
}

#if defined(EMBER_WITH_BLAS)
void gemm_blas(benchmark::State& state, GemmCase g) {
  auto& d = gemm_data(g);
  const int M = int(g.M), N = int(g.N), K = int(g.K);
  const ContentionProbe probe;
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, d.a.data(), K, d.b.data(),
                N, 0.0f, d.c.data(), N);
    benchmark::DoNotOptimize(d.c.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_gemm(state, d.a.data(), d.b.data(), d.c.data(), g.M, g.N, g.K, g.N)) return;
  report_flops(state, g.flops());
}
#endif

// ---- linear with bias and GELU: x [M, K], w [N, K] (PyTorch's layout), b [N] ----
struct LinearData {
  Tensor<float> x, w, b, y;  // y: the peer's output, allocated and touched once
};
LinearData& linear_data(const GemmCase& g) {
  static std::map<std::string, std::unique_ptr<LinearData>> cache;
  auto& slot = cache[g.name()];
  if (!slot) {
    slot = std::make_unique<LinearData>();
    slot->x = randn(Shape{g.M, g.K}, 3);
    slot->w = randn(Shape{g.N, g.K}, 4, 1.0 / std::sqrt(double(g.K)));  // pre-activations ~ N(0, 1)
    slot->b = randn(Shape{g.N}, 5, 0.5);
    slot->y = ember::full<float>(Shape{g.M, g.N}, 7.0);
  }
  return *slot;
}

bool check_linear(benchmark::State& state, const LinearData& d, const float* y, const GemmCase& g) {
  const float *x = d.x.data(), *w = d.w.data(), *b = d.b.data();
  double worst = 0;
  for (std::int64_t s : samples(g.M * g.N, 2)) {
    const std::int64_t i = s / g.N, j = s % g.N;
    double pre = b[j], mag = std::fabs(double(b[j]));
    for (std::int64_t k = 0; k < g.K; ++k) {
      const double t = double(x[i * g.K + k]) * double(w[j * g.K + k]);
      pre += t;
      mag += std::fabs(t);
    }
    // GELU's slope is at most about 1.13: the product's error passes through it scaled by that.
    worsen(worst, std::fabs(double(y[s]) - gelu_ref(pre)) / (mag + 1e-30));
  }
  return verdict(state, worst, 2e-5);
}

void linear_ember(benchmark::State& state, GemmCase g) {
  auto& d = linear_data(g);
  Tensor<float> y;
  const ContentionProbe probe;
  for (auto _ : state) {
    y = ember::linear(d.x, d.w, d.b, ember::Activation::gelu);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_linear(state, d, y.data(), g)) return;
  report_flops(state, g.flops());
}

#if defined(EMBER_WITH_BLAS)
void linear_blas(benchmark::State& state, GemmCase g) {
  auto& d = linear_data(g);
  const int M = int(g.M), N = int(g.N), K = int(g.K);
  const float* __restrict bias = d.b.data();
  float* __restrict y = d.y.data();
  const ContentionProbe probe;
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, d.x.data(), K, d.w.data(),
                K, 0.0f, y, N);
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < g.M; ++i) {
      float* __restrict row = y + i * g.N;
#pragma omp simd
      for (std::int64_t j = 0; j < g.N; ++j) {
        const float v = row[j] + bias[j];
        row[j] = 0.5f * v * (1.0f + ember::math::erf(v * 0.70710678118654752440f));
      }
    }
    benchmark::DoNotOptimize(y);
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_linear(state, d, y, g)) return;
  report_flops(state, g.flops());
}
#endif

// =============================================================================================
// conv2d
// =============================================================================================

struct ConvCase {
  const char* label;  // which ResNet-50 layer it is shaped like
  std::int64_t N, C, H, W, O, KH, KW, stride, pad;
  std::int64_t OH() const { return (H + 2 * pad - KH) / stride + 1; }
  std::int64_t OW() const { return (W + 2 * pad - KW) / stride + 1; }
  std::string name() const {
    return std::string(label) + "_n" + std::to_string(N) + "_c" + std::to_string(C) + "_" +
           std::to_string(H) + "x" + std::to_string(W) + "_o" + std::to_string(O) + "_k" +
           std::to_string(KH) + "s" + std::to_string(stride);
  }
  double flops() const {
    return 2.0 * double(N) * double(O) * double(OH()) * double(OW()) * double(C) * double(KH) *
           double(KW);
  }
  ember::Conv2dOptions options() const {
    ember::Conv2dOptions o;
    o.stride = {stride, stride};
    o.padding = {pad, pad};
    return o;
  }
  bool pointwise() const { return KH == 1 && KW == 1 && stride == 1 && pad == 0; }
};

struct ConvData {
  Tensor<float> x_nchw, x_nhwc;  // the same values in both memory formats
  Tensor<float> w;               // [O, C, KH, KW]
  Tensor<float> w_ohwc;          // [O, KH, KW, C] dense: the NHWC peer's weight
  Tensor<float> y_nchw, y_nhwc;  // the peers' outputs, allocated and touched once
  std::vector<float> col;        // the peers' im2col buffer (one image)
};
ConvData& conv_data(const ConvCase& cc) {
  static std::map<std::string, std::unique_ptr<ConvData>> cache;
  auto& slot = cache[cc.name()];
  if (!slot) {
    slot = std::make_unique<ConvData>();
    ConvData& d = *slot;
    d.x_nchw = randn(Shape{cc.N, cc.C, cc.H, cc.W}, 6);
    d.x_nhwc = d.x_nchw.contiguous(ember::MemoryFormat::channels_last);
    d.w = randn(Shape{cc.O, cc.C, cc.KH, cc.KW}, 7, 1.0 / std::sqrt(double(cc.C * cc.KH * cc.KW)));
    d.w_ohwc = d.w.permute({0, 2, 3, 1}).contiguous();
    d.y_nchw = ember::full<float>(Shape{cc.N, cc.O, cc.OH(), cc.OW()}, 7.0);
    d.y_nhwc = ember::full<float>(Shape{cc.N, cc.OH(), cc.OW(), cc.O}, 7.0);
    d.col.assign(std::size_t(cc.C * cc.KH * cc.KW * cc.OH() * cc.OW()), 7.0f);
  }
  return *slot;
}

/// y (element (n, o, oh, ow) at y + the dot of the indices with ys) against float64 at 256
/// sampled outputs.
bool check_conv(benchmark::State& state, const ConvCase& cc, const ConvData& d, const float* y,
                const std::int64_t (&ys)[4]) {
  const std::int64_t OH = cc.OH(), OW = cc.OW();
  const float* x = d.x_nchw.data();
  const float* w = d.w.data();
  double worst = 0;
  for (std::int64_t s : samples(cc.N * cc.O * OH * OW, 3)) {
    const std::int64_t ow = s % OW, oh = s / OW % OH, o = s / (OW * OH) % cc.O,
                       n = s / (OW * OH * cc.O);
    double want = 0, mag = 0;
    for (std::int64_t c = 0; c < cc.C; ++c) {
      for (std::int64_t kh = 0; kh < cc.KH; ++kh) {
        const std::int64_t ih = oh * cc.stride - cc.pad + kh;
        if (ih < 0 || ih >= cc.H) continue;
        for (std::int64_t kw = 0; kw < cc.KW; ++kw) {
          const std::int64_t iw = ow * cc.stride - cc.pad + kw;
          if (iw < 0 || iw >= cc.W) continue;
          const double t = double(x[((n * cc.C + c) * cc.H + ih) * cc.W + iw]) *
                           double(w[((o * cc.C + c) * cc.KH + kh) * cc.KW + kw]);
          want += t;
          mag += std::fabs(t);
        }
      }
    }
    const double got = y[n * ys[0] + o * ys[1] + oh * ys[2] + ow * ys[3]];
    worsen(worst, std::fabs(got - want) / (mag + 1e-30));
  }
  return verdict(state, worst, 1e-5);
}

void conv_ember(benchmark::State& state, ConvCase cc, bool channels_last) {
  auto& d = conv_data(cc);
  const Tensor<float>& x = channels_last ? d.x_nhwc : d.x_nchw;
  const ember::Conv2dOptions opt = cc.options();
  Tensor<float> y;
  const ContentionProbe probe;
  for (auto _ : state) {
    y = ember::conv2d(x, d.w, opt);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (channels_last && y.memory_format() != ember::MemoryFormat::channels_last) {
    state.SkipWithError("a channels-last input gave an output that is not channels-last");
    return;
  }
  const std::int64_t ys[4] = {y.stride(0), y.stride(1), y.stride(2), y.stride(3)};
  if (!check_conv(state, cc, d, y.data(), ys)) return;
  report_flops(state, cc.flops());
}

#if defined(EMBER_WITH_BLAS)
/// col[(c, kh, kw), (oh, ow)] for image xn [C, H, W]: each output row is the input row ih read
/// at stride `stride` from iw0, with the columns that fall in the padding zeroed.
void im2col_nchw(const ConvCase& cc, const float* xn, float* col) {
  const std::int64_t OH = cc.OH(), OW = cc.OW(), P = OH * OW, s = cc.stride;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < cc.C * cc.KH * cc.KW; ++r) {
    const std::int64_t c = r / (cc.KH * cc.KW), kh = r / cc.KW % cc.KH, kw = r % cc.KW;
    const float* xc = xn + c * cc.H * cc.W;
    float* out = col + r * P;
    // The output columns whose input column iw = ow s - pad + kw lies in [0, W).
    const std::int64_t off = kw - cc.pad;
    const std::int64_t ow0 = std::min(OW, off >= 0 ? 0 : (-off + s - 1) / s);
    const std::int64_t ow1 = std::max(ow0, std::min(OW, (cc.W - off + s - 1) / s));
    for (std::int64_t oh = 0; oh < OH; ++oh) {
      float* o = out + oh * OW;
      const std::int64_t ih = oh * s - cc.pad + kh;
      if (ih < 0 || ih >= cc.H) {
        std::fill(o, o + OW, 0.0f);
        continue;
      }
      const float* xr = xc + ih * cc.W + off;
      std::fill(o, o + ow0, 0.0f);
      if (s == 1) {
        std::memcpy(o + ow0, xr + ow0, std::size_t(ow1 - ow0) * sizeof(float));
      } else {
        for (std::int64_t ow = ow0; ow < ow1; ++ow) o[ow] = xr[ow * s];
      }
      std::fill(o + ow1, o + OW, 0.0f);
    }
  }
}

void conv_nchw_blas(benchmark::State& state, ConvCase cc) {
  auto& d = conv_data(cc);
  const std::int64_t P = cc.OH() * cc.OW(), K = cc.C * cc.KH * cc.KW;
  const ContentionProbe probe;
  for (auto _ : state) {
    for (std::int64_t n = 0; n < cc.N; ++n) {
      const float* xn = d.x_nchw.data() + n * cc.C * cc.H * cc.W;
      const float* col = xn;  // a pointwise convolution reads the image as it is
      if (!cc.pointwise()) {
        im2col_nchw(cc, xn, d.col.data());
        col = d.col.data();
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(cc.O), int(P), int(K), 1.0f,
                  d.w.data(), int(K), col, int(P), 0.0f, d.y_nchw.data() + n * cc.O * P, int(P));
    }
    benchmark::DoNotOptimize(d.y_nchw.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  const std::int64_t ys[4] = {cc.O * P, P, cc.OW(), 1};
  if (!check_conv(state, cc, d, d.y_nchw.data(), ys)) return;
  report_flops(state, cc.flops());
}

/// col[(oh, ow), (kh, kw, c)] for image xn [H, W, C]: runs of C contiguous floats.
void im2col_nhwc(const ConvCase& cc, const float* xn, float* col) {
  const std::int64_t OH = cc.OH(), OW = cc.OW(), C = cc.C, K = cc.KH * cc.KW * C;
#pragma omp parallel for schedule(static)
  for (std::int64_t p = 0; p < OH * OW; ++p) {
    const std::int64_t oh = p / OW, ow = p % OW;
    float* out = col + p * K;
    for (std::int64_t kh = 0; kh < cc.KH; ++kh) {
      const std::int64_t ih = oh * cc.stride - cc.pad + kh;
      for (std::int64_t kw = 0; kw < cc.KW; ++kw) {
        const std::int64_t iw = ow * cc.stride - cc.pad + kw;
        float* o = out + (kh * cc.KW + kw) * C;
        if (ih < 0 || ih >= cc.H || iw < 0 || iw >= cc.W) {
          std::fill(o, o + C, 0.0f);
        } else {
          std::memcpy(o, xn + (ih * cc.W + iw) * C, std::size_t(C) * sizeof(float));
        }
      }
    }
  }
}

void conv_nhwc_blas(benchmark::State& state, ConvCase cc) {
  auto& d = conv_data(cc);
  const std::int64_t P = cc.OH() * cc.OW(), K = cc.C * cc.KH * cc.KW;
  const float* x = d.x_nhwc.data();  // channels-last: [N, H, W, C] in memory
  float* y = d.y_nhwc.data();
  const ContentionProbe probe;
  for (auto _ : state) {
    if (cc.pointwise()) {
      // y[N H W, O] = x[N H W, C] w[O, C]^T: one GEMM for the whole batch.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(cc.N * P), int(cc.O), int(K), 1.0f,
                  x, int(K), d.w_ohwc.data(), int(K), 0.0f, y, int(cc.O));
    } else {
      for (std::int64_t n = 0; n < cc.N; ++n) {
        im2col_nhwc(cc, x + n * cc.H * cc.W * cc.C, d.col.data());
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(P), int(cc.O), int(K), 1.0f,
                    d.col.data(), int(K), d.w_ohwc.data(), int(K), 0.0f, y + n * P * cc.O,
                    int(cc.O));
      }
    }
    benchmark::DoNotOptimize(y);
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  const std::int64_t ys[4] = {P * cc.O, 1, cc.OW() * cc.O, cc.O};
  if (!check_conv(state, cc, d, y, ys)) return;
  report_flops(state, cc.flops());
}
#endif  // EMBER_WITH_BLAS

// =============================================================================================
// softmax and layer_norm over rows
// =============================================================================================

struct RowsCase {
  std::int64_t rows, cols;
  std::string name() const { return std::to_string(rows) + "x" + std::to_string(cols); }
  std::int64_t n() const { return rows * cols; }
};
constexpr double kEps = 1e-5;

struct RowsData {
  Tensor<float> x, w, b;  // x [rows, cols]; w, b [cols]
  Tensor<float> r;        // the residual of add + layer norm [rows, cols]
  Tensor<float> y, sum;   // the loops' outputs, allocated and touched once
};
RowsData& rows_data(const RowsCase& rc) {
  static std::map<std::string, std::unique_ptr<RowsData>> cache;
  auto& slot = cache[rc.name()];
  if (!slot) {
    slot = std::make_unique<RowsData>();
    slot->x = randn(Shape{rc.rows, rc.cols}, 8, 2.0);
    slot->w = ember::rand<float>(Shape{rc.cols}, 9, ember::Device::cpu(), 0.5, 1.5);
    slot->b = randn(Shape{rc.cols}, 10, 0.1);
    slot->r = randn(Shape{rc.rows, rc.cols}, 11, 1.0);
    slot->y = ember::full<float>(Shape{rc.rows, rc.cols}, 7.0);
    slot->sum = ember::full<float>(Shape{rc.rows, rc.cols}, 7.0);
  }
  return *slot;
}

/// y against float64 softmax or layer norm on 64 sampled rows: the error relative to the value
/// for softmax (exp(x - lse) carries |x - lse| times float's rounding of its argument: up to about
/// 2e-6 here), relative to 1 + |want| for layer norm.
/// `input`: what was normalised (x, or the sum x + r), when not x.
bool check_rows(benchmark::State& state, const RowsCase& rc, const RowsData& d, const float* y,
                bool softmax, const float* input = nullptr) {
  const float *x = input != nullptr ? input : d.x.data(), *w = d.w.data(), *b = d.b.data();
  const std::int64_t C = rc.cols;
  std::vector<double> want(std::size_t(C), 0.0);
  double worst = 0;
  const auto rows = samples(rc.rows, 4);
  for (std::size_t k = 0; k < rows.size(); k += 4) {
    const std::int64_t r = rows[k];
    const float* xr = x + r * C;
    if (softmax) {
      double m = xr[0], s = 0;
      for (std::int64_t j = 0; j < C; ++j) m = std::max(m, double(xr[j]));
      for (std::int64_t j = 0; j < C; ++j) s += std::exp(double(xr[j]) - m);
      for (std::int64_t j = 0; j < C; ++j) want[std::size_t(j)] = std::exp(double(xr[j]) - m) / s;
    } else {
      double mean = 0, var = 0;
      for (std::int64_t j = 0; j < C; ++j) mean += xr[j];
      mean /= double(C);
      for (std::int64_t j = 0; j < C; ++j) var += (xr[j] - mean) * (xr[j] - mean);
      const double rstd = 1.0 / std::sqrt(var / double(C) + kEps);
      for (std::int64_t j = 0; j < C; ++j)
        want[std::size_t(j)] = (xr[j] - mean) * rstd * w[j] + b[j];
    }
    for (std::int64_t j = 0; j < C; ++j) {
      const double wv = want[std::size_t(j)], got = y[r * C + j];
      worsen(worst, std::fabs(got - wv) / (softmax ? wv : 1 + std::fabs(wv)));
    }
  }
  return verdict(state, worst, softmax ? 2e-5 : 1e-4);
}

std::int64_t rows_bytes(const RowsCase& rc, bool params) {
  return 2 * rc.n() * 4 + (params ? 2 * rc.cols * 4 : 0);
}

void softmax_ember(benchmark::State& state, RowsCase rc) {
  auto& d = rows_data(rc);
  Tensor<float> y;
  const ContentionProbe probe;
  for (auto _ : state) {
    y = ember::softmax(d.x, 1);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_rows(state, rc, d, y.data(), true)) return;
  ember_bench::report_bytes(state, rows_bytes(rc, false), rc.n());
}

void softmax_loop(benchmark::State& state, RowsCase rc) {
  auto& d = rows_data(rc);
  const std::int64_t C = rc.cols;
  const float* __restrict x = d.x.data();
  float* __restrict y = d.y.data();
  const ContentionProbe probe;
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rc.rows; ++r) {
      const float* __restrict xr = x + r * C;
      float* __restrict yr = y + r * C;
      float m = -INFINITY;
#pragma omp simd reduction(max : m)
      for (std::int64_t j = 0; j < C; ++j) m = std::max(m, xr[j]);
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (std::int64_t j = 0; j < C; ++j) {
        const float e = ember::math::exp(xr[j] - m);
        yr[j] = e;
        s += e;
      }
      const float inv = 1.0f / s;
#pragma omp simd
      for (std::int64_t j = 0; j < C; ++j) yr[j] *= inv;
    }
    benchmark::DoNotOptimize(y);
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_rows(state, rc, d, y, true)) return;
  ember_bench::report_bytes(state, rows_bytes(rc, false), rc.n());
}

void layernorm_ember(benchmark::State& state, RowsCase rc) {
  auto& d = rows_data(rc);
  Tensor<float> y;
  const ContentionProbe probe;
  for (auto _ : state) {
    y = ember::layer_norm(d.x, d.w, d.b, kEps);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_rows(state, rc, d, y.data(), false)) return;
  ember_bench::report_bytes(state, rows_bytes(rc, true), rc.n());
}

void layernorm_loop(benchmark::State& state, RowsCase rc) {
  auto& d = rows_data(rc);
  const std::int64_t C = rc.cols;
  const float* __restrict x = d.x.data();
  const float* __restrict w = d.w.data();
  const float* __restrict b = d.b.data();
  float* __restrict y = d.y.data();
  const ContentionProbe probe;
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rc.rows; ++r) {
      const float* __restrict xr = x + r * C;
      float* __restrict yr = y + r * C;
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (std::int64_t j = 0; j < C; ++j) s += xr[j];
      const float mean = s / float(C);
      float q = 0.0f;
#pragma omp simd reduction(+ : q)
      for (std::int64_t j = 0; j < C; ++j) q += (xr[j] - mean) * (xr[j] - mean);
      const float rstd = 1.0f / std::sqrt(q / float(C) + float(kEps));
#pragma omp simd
      for (std::int64_t j = 0; j < C; ++j) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
    }
    benchmark::DoNotOptimize(y);
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_rows(state, rc, d, y, false)) return;
  ember_bench::report_bytes(state, rows_bytes(rc, true), rc.n());
}

// The sum x + r in float: what the add + layer norm variants normalise (p = 0).
const float* row_sums(const RowsCase& rc, const RowsData& d) {
  static std::map<std::string, Tensor<float>> cache;
  auto& t = cache[rc.name()];
  if (!t.defined()) t = Tensor<float>(d.x + d.r);
  return t.data();
}

std::int64_t add_norm_bytes(const RowsCase& rc) { return 4 * rc.n() * 4 + 2 * rc.cols * 4; }

void add_layernorm_ember(benchmark::State& state, RowsCase rc, bool fused, double p) {
  auto& d = rows_data(rc);
  Tensor<float> y;
  const ContentionProbe probe;
  for (auto _ : state) {
    if (fused) {
      y = ember::dropout_add_layer_norm(d.x, d.r, d.w, d.b, kEps, ember::DropoutOptions{p, 1, 0});
    } else {
      y = ember::layer_norm(Tensor<float>(d.x + d.r), d.w, d.b, kEps);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (p == 0 && !check_rows(state, rc, d, y.data(), false, row_sums(rc, d))) return;
  ember_bench::report_bytes(state, add_norm_bytes(rc), rc.n());
}

void add_layernorm_loop(benchmark::State& state, RowsCase rc) {
  auto& d = rows_data(rc);
  const std::int64_t C = rc.cols;
  const float* __restrict x = d.x.data();
  const float* __restrict res = d.r.data();
  const float* __restrict w = d.w.data();
  const float* __restrict b = d.b.data();
  float* __restrict y = d.y.data();
  float* __restrict sum = d.sum.data();
  const ContentionProbe probe;
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rc.rows; ++r) {
      const float* __restrict xr = x + r * C;
      const float* __restrict rr = res + r * C;
      float* __restrict sr = sum + r * C;
      float* __restrict yr = y + r * C;
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (std::int64_t j = 0; j < C; ++j) {
        sr[j] = xr[j] + rr[j];
        s += sr[j];
      }
      const float mean = s / float(C);
      float q = 0.0f;
#pragma omp simd reduction(+ : q)
      for (std::int64_t j = 0; j < C; ++j) q += (sr[j] - mean) * (sr[j] - mean);
      const float rstd = 1.0f / std::sqrt(q / float(C) + float(kEps));
#pragma omp simd
      for (std::int64_t j = 0; j < C; ++j) yr[j] = (sr[j] - mean) * rstd * w[j] + b[j];
    }
    benchmark::DoNotOptimize(y);
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_rows(state, rc, d, y, false, row_sums(rc, d))) return;
  ember_bench::report_bytes(state, add_norm_bytes(rc), rc.n());
}

void copy_rows(benchmark::State& state, RowsCase rc) {
  auto& d = rows_data(rc);
  const std::int64_t n = rc.n();
  const float* __restrict src = d.x.data();
  float* __restrict dst = d.y.data();
  const ContentionProbe probe;
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i];
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  ember_bench::report_bytes(state, 2 * n * 4, n);
}

// =============================================================================================
// registration
// =============================================================================================

/// A batch of B products of [M, K] x [K, N].
struct BmmCase {
  std::int64_t B, M, N, K;
  std::string name() const {
    return std::to_string(B) + "x" + std::to_string(M) + "x" + std::to_string(N) + "x" +
           std::to_string(K);
  }
  double flops() const { return 2.0 * double(B) * double(M) * double(N) * double(K); }
};

struct BmmData {
  Tensor<float> a, b, c;  // [B, M, K], [B, K, N], [B, M, N]
};
BmmData& bmm_data(const BmmCase& g) {
  static std::map<std::string, std::unique_ptr<BmmData>> cache;
  auto& slot = cache[g.name()];
  if (!slot) {
    slot = std::make_unique<BmmData>();
    slot->a = randn(Shape{g.B, g.M, g.K}, 3);
    slot->b = randn(Shape{g.B, g.K, g.N}, 4);
    slot->c = ember::full<float>(Shape{g.B, g.M, g.N}, 7.0);
  }
  return *slot;
}

/// The first and the last product of the batch checked as check_gemm checks one.
bool check_bmm(benchmark::State& state, const BmmData& d, const float* c, const BmmCase& g) {
  for (const std::int64_t i : {std::int64_t{0}, g.B - 1}) {
    if (!check_gemm(state, d.a.data() + i * g.M * g.K, d.b.data() + i * g.K * g.N,
                    c + i * g.M * g.N, g.M, g.N, g.K, g.N)) {
      return false;
    }
  }
  return true;
}

void bmm_ember(benchmark::State& state, BmmCase g) {
  auto& d = bmm_data(g);
  Tensor<float> c;
  const ContentionProbe probe;
  for (auto _ : state) {
    c = ember::matmul(d.a, d.b);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_bmm(state, d, c.data(), g)) return;
  report_flops(state, g.flops());
}

#if defined(EMBER_WITH_BLAS)
void bmm_blas_loop(benchmark::State& state, BmmCase g) {
  auto& d = bmm_data(g);
  const int M = int(g.M), N = int(g.N), K = int(g.K);
  const ember::ops::cpu::SerialBlas serial;
  const ContentionProbe probe;
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < g.B; ++i) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, d.a.data() + i * M * K,
                  K, d.b.data() + i * K * N, N, 0.0f, d.c.data() + i * M * N, N);
    }
    benchmark::DoNotOptimize(d.c.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_bmm(state, d, d.c.data(), g)) return;
  report_flops(state, g.flops());
}
#endif

/// "/" + name, spelled so GCC 12 does not warn (-Wrestrict, a false positive on prepending).
std::string slash(const std::string& name) {
  std::string out = "/";
  out += name;
  return out;
}

const bool registered = [] {
  // Square products, then BERT-base's at 8 sequences of 128 tokens (1024 rows): the QKV/output
  // projections [1024, 768] x [768, 768], the FFN's up [1024, 768] x [768, 3072] and down
  // [1024, 3072] x [3072, 768].
  // And a small GPT's (bench/user_gpt: 1024 rows, width 128): its fused QKV projection and its
  // MLP's down projection.
  const GemmCase gemms[] = {{256, 256, 256},  {1024, 1024, 1024}, {2048, 2048, 2048},
                            {1024, 768, 768}, {1024, 3072, 768},  {1024, 768, 3072},
                            {1024, 384, 128}, {1024, 128, 512}};
  for (const GemmCase& g : gemms) {
    const std::string c = slash(g.name());
    add_case("op_gemm_f32/ember_matmul" + c, [g](benchmark::State& s) { gemm_ember(s, g); });
#if defined(EMBER_WITH_BLAS)
    add_case("op_gemm_f32/blas" + c, [g](benchmark::State& s) { gemm_blas(s, g); });
#endif
  }
  // Attention's batches of small products: a small GPT's (16 sequences x 4 heads of 64 tokens,
  // head size 32: the scores, then probabilities x values) and BERT-mini's (16 x 4 heads of 128
  // tokens, head size 64).
  const BmmCase bmms[] = {
      {64, 64, 64, 32}, {64, 64, 32, 64}, {64, 128, 128, 64}, {64, 128, 64, 128}};
  for (const BmmCase& g : bmms) {
    const std::string c = slash(g.name());
    add_case("op_bmm_f32/ember_matmul" + c, [g](benchmark::State& s) { bmm_ember(s, g); });
#if defined(EMBER_WITH_BLAS)
    add_case("op_bmm_f32/blas_loop" + c, [g](benchmark::State& s) { bmm_blas_loop(s, g); });
#endif
  }
  // ember's own kernel, for builds without BLAS: one size (it is slow).
  const GemmCase blocked{1024, 1024, 1024};
  add_case("op_gemm_f32/ember_blocked/" + blocked.name(),
           [blocked](benchmark::State& s) { gemm_blocked(s, blocked); });

  // linear + bias + GELU: BERT-base's FFN up-projection at one sequence (128 tokens) and at 8.
  const GemmCase linears[] = {{128, 3072, 768}, {1024, 3072, 768}};
  for (const GemmCase& g : linears) {
    const std::string c = slash(g.name());
    add_case("op_linear_gelu_f32/ember_linear" + c,
             [g](benchmark::State& s) { linear_ember(s, g); });
#if defined(EMBER_WITH_BLAS)
    add_case("op_linear_gelu_f32/blas_loop" + c, [g](benchmark::State& s) { linear_blas(s, g); });
#endif
  }

  // ResNet-50's convolutions at batch 8: the stem, a 3x3 of stage 2 and of stage 3, and the 1x1
  // expansion of stage 4 (256 -> 1024 channels at 14x14).
  const ConvCase convs[] = {{"stem", 8, 3, 224, 224, 64, 7, 7, 2, 3},
                            {"res2", 8, 64, 56, 56, 64, 3, 3, 1, 1},
                            {"res3", 8, 128, 28, 28, 128, 3, 3, 1, 1},
                            {"res4", 8, 256, 14, 14, 1024, 1, 1, 1, 0}};
  for (const ConvCase& cc : convs) {
    const std::string c = slash(cc.name());
    add_case("op_conv_nchw_f32/ember" + c, [cc](benchmark::State& s) { conv_ember(s, cc, false); });
    add_case("op_conv_nhwc_f32/ember" + c, [cc](benchmark::State& s) { conv_ember(s, cc, true); });
#if defined(EMBER_WITH_BLAS)
    add_case("op_conv_nchw_f32/im2col_blas" + c,
             [cc](benchmark::State& s) { conv_nchw_blas(s, cc); });
    add_case("op_conv_nhwc_f32/im2col_blas" + c,
             [cc](benchmark::State& s) { conv_nhwc_blas(s, cc); });
#endif
  }

  // Rows: 4096 x 1024 (16 MiB, about the L3), attention-like short rows (BERT's 128 keys) and
  // BERT-base's hidden size at 16384 tokens (48 MiB: DRAM).
  const RowsCase softmaxes[] = {{4096, 1024}, {32768, 128}};
  const RowsCase norms[] = {{4096, 1024}, {16384, 768}};
  std::map<std::string, RowsCase> copies;
  for (const RowsCase& rc : softmaxes) {
    add_case("op_softmax_f32/ember/" + rc.name(),
             [rc](benchmark::State& s) { softmax_ember(s, rc); });
    add_case("op_softmax_f32/loop_omp/" + rc.name(),
             [rc](benchmark::State& s) { softmax_loop(s, rc); });
    copies.emplace(rc.name(), rc);
  }
  for (const RowsCase& rc : norms) {
    add_case("op_layernorm_f32/ember/" + rc.name(),
             [rc](benchmark::State& s) { layernorm_ember(s, rc); });
    add_case("op_layernorm_f32/loop_omp/" + rc.name(),
             [rc](benchmark::State& s) { layernorm_loop(s, rc); });
    add_case("op_add_layernorm_f32/ember_fused/" + rc.name(),
             [rc](benchmark::State& s) { add_layernorm_ember(s, rc, true, 0.0); });
    add_case("op_add_layernorm_f32/ember_fused_dropout/" + rc.name(),
             [rc](benchmark::State& s) { add_layernorm_ember(s, rc, true, 0.1); });
    add_case("op_add_layernorm_f32/ember_unfused/" + rc.name(),
             [rc](benchmark::State& s) { add_layernorm_ember(s, rc, false, 0.0); });
    add_case("op_add_layernorm_f32/loop_omp/" + rc.name(),
             [rc](benchmark::State& s) { add_layernorm_loop(s, rc); });
    copies.emplace(rc.name(), rc);
  }
  for (const auto& [name, rc] : copies) {
    add_case("copy_f32/omp_copy/" + name, [rc](benchmark::State& s) { copy_rows(s, rc); });
  }
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ember_bench::add_common_context();
  ember_bench::add_blas_context();
  const char* wait = std::getenv("OMP_WAIT_POLICY");
  benchmark::AddCustomContext("omp_wait_policy", wait && *wait ? wait : "default");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
