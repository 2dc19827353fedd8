// CPU benchmarks of ember's fused elementwise expressions and reductions, against the same work
// done op by op, against Eigen's Tensor module on a thread pool of the same size, and against a
// STREAM-style copy on the same machine.
//
// Names are "<group>/<variant>/<elements>" so bench/report.py can pair them up:
//   chain_tanh_<dt>   y = tanh(a*b + c) * 0.5 + a*c          (6 ops, 3 inputs, 1 output)
//   chain_relu_<dt>   y = relu(a*b + c) * 0.5 + a*c          (the same without a transcendental)
//   copy_<dt>         y = a
//   rowsum_f32        s[r] = sum_j x[r, j]                    (x is rows x 1024)
//   softmax_f32       y[r, :] = softmax(x[r, :])
//   randn_f32, rand_f32  y = randn / rand (Philox): ember's factory against loop_omp, a
//                     hand-written OpenMP loop over the same Philox blocks (philox_normal_block,
//                     philox_uniform_block): the cost of the algorithm itself
// Variants: ember_fused (one pass), ember_opbyop (each op into a fresh Tensor, as eager code does),
// ember_opbyop_prealloc (each op into a tensor allocated once), eigen (ThreadPoolDevice),
// loop_omp (a hand-written OpenMP loop: what a compiler makes of the same arithmetic), and for
// copies ember_copy, memcpy (one thread) and omp_copy (OpenMP loop, the STREAM reference).
// Times are wall-clock (UseRealTime), or process CPU time with EMBER_BENCH_CPU_TIME=1; the probe
// of other processes' CPU use, the counters and the registration are shared with the other CPU
// benchmarks (bench_support.hpp).
//
// Bytes counted are the fewest that must cross memory: each input read once, each output written
// once (STREAM's convention: write-allocate traffic is not counted). By default everything runs
// under UseRealTime(): the work runs on OpenMP or Eigen threads, not on the benchmark's thread.
#define EIGEN_USE_THREADS

#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

// Eigen's Tensor module is the peer when it is there (CMake defines EMBER_HAVE_EIGEN when it finds
// Eigen3); without it the Eigen benchmarks are left out and the rest still builds.
#if defined(EMBER_HAVE_EIGEN) || __has_include(<unsupported/Eigen/CXX11/Tensor>)
#define EMBER_BENCH_EIGEN 1
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns inside its own AVX-512 intrinsics as Eigen's packet code inlines them.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <unsupported/Eigen/CXX11/Tensor>
#else
#define EMBER_BENCH_EIGEN 0
#endif

#include <ember/ember.hpp>

#include "bench_support.hpp"

namespace {

using ember::bf16;
using ember::Shape;
using ember::Tensor;
using ember_bench::add;
using ember_bench::ContentionProbe;
using ember_bench::kSizes;
using ember_bench::report_bytes;
using ember_bench::threads;

constexpr std::int64_t kCols = 1024;  // row length of the reduction benchmarks

// ---- one thread pool for Eigen, as many threads as OpenMP uses ----
#if EMBER_BENCH_EIGEN
Eigen::ThreadPoolDevice& eigen_device() {
  static Eigen::ThreadPool pool(threads());
  static Eigen::ThreadPoolDevice device(&pool, threads());
  return device;
}
#endif  // EMBER_BENCH_EIGEN

// ---- dtype plumbing ----
template <class T>
struct DT;
template <>
struct DT<float> {
  static constexpr const char* name = "f32";
#if EMBER_BENCH_EIGEN
  using eigen = float;
#endif
};
template <>
struct DT<bf16> {
  static constexpr const char* name = "bf16";
#if EMBER_BENCH_EIGEN
  using eigen = Eigen::bfloat16;  // same bits, same rounding (nearest even)
#endif
};
#if EMBER_BENCH_EIGEN
static_assert(sizeof(bf16) == sizeof(Eigen::bfloat16));

template <class T>
using EMap =
    Eigen::TensorMap<Eigen::Tensor<typename DT<T>::eigen, 1, Eigen::RowMajor, std::int64_t>,
                     Eigen::Aligned64>;
template <class T>
using EMap2 =
    Eigen::TensorMap<Eigen::Tensor<typename DT<T>::eigen, 2, Eigen::RowMajor, std::int64_t>,
                     Eigen::Aligned64>;

template <class T>
EMap<T> emap(const Tensor<T>& t) {
  return EMap<T>(reinterpret_cast<typename DT<T>::eigen*>(t.data()), t.numel());
}
template <class T>
EMap2<T> emap2(const Tensor<T>& t) {
  return EMap2<T>(reinterpret_cast<typename DT<T>::eigen*>(t.data()), t.size(0), t.size(1));
}
#endif  // EMBER_BENCH_EIGEN

// ---- inputs, made once per (dtype, size) and shared by every variant ----
template <class T>
struct Inputs {
  Tensor<T> a, b, c, y;
};
template <class T>
Inputs<T>& inputs(std::int64_t n) {
  static std::map<std::int64_t, std::unique_ptr<Inputs<T>>> cache;
  auto& slot = cache[n];
  if (!slot) {
    slot = std::make_unique<Inputs<T>>();
    slot->a = ember::rand<T>(Shape{n}, 1, ember::Device::cpu(), -2.0, 2.0);
    slot->b = ember::rand<T>(Shape{n}, 2, ember::Device::cpu(), -2.0, 2.0);
    slot->c = ember::rand<T>(Shape{n}, 3, ember::Device::cpu(), -2.0, 2.0);
    slot->y = ember::full<T>(Shape{n}, 7.0);  // touched, so no first-use page faults in timing
  }
  return *slot;
}

// Which activation the chain uses.
enum class Act { tanh, relu };
const char* act_name(Act act) { return act == Act::tanh ? "tanh" : "relu"; }

template <Act A, class E>
auto ember_act(const E& e) {
  if constexpr (A == Act::tanh) {
    return ember::tanh(e);
  } else {
    return ember::relu(e);
  }
}

// The float reference of one element (also the body of the hand-written loop).
template <Act A>
inline float chain_ref(float a, float b, float c) {
  const float t = a * b + c;
  const float act = A == Act::tanh ? std::tanh(t) : (t < 0.0f ? 0.0f : t);
  return act * 0.5f + a * c;
}

// Fails the benchmark unless y holds the chain of (a, b, c), within the rounding of T and of the
// math library (Eigen's tanh is a rational approximation; op by op rounds each step to T).
template <Act A, class T>
bool check_chain(benchmark::State& state, const Inputs<T>& in, double tol) {
  const std::int64_t n = in.a.numel();
  const T* a = in.a.data();
  const T* b = in.b.data();
  const T* c = in.c.data();
  const T* y = in.y.data();
  double worst = 0;
  const std::int64_t step = std::max<std::int64_t>(1, n / 4096);
  for (std::int64_t i = 0; i < n; i += step) {
    const float want = chain_ref<A>(float(a[i]), float(b[i]), float(c[i]));
    const double err = std::fabs(double(float(y[i])) - want) / (1.0 + std::fabs(want));
    if (worst == worst && !(err <= worst)) worst = err;  // a NaN sticks
  }
  if (!(worst <= tol)) {
    state.SkipWithError(("wrong result: relative error " + std::to_string(worst)).c_str());
    return false;
  }
  return true;
}

template <class T>
constexpr double chain_tol() {
  return std::is_same_v<T, float> ? 1e-5 : 3e-2;  // bf16 op by op rounds every step
}

// ---- the chain ----
template <Act A, class T>
void chain_ember_fused(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<T>(n);
  in.y = 0.0;
  const ContentionProbe probe;
  for (auto _ : state) {
    in.y = ember_act<A>(in.a * in.b + in.c) * 0.5 + in.a * in.c;
    benchmark::DoNotOptimize(in.y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_chain<A>(state, in, chain_tol<T>())) return;
  report_bytes(state, 4 * n * std::int64_t(sizeof(T)), n);
}

template <Act A, class T>
void chain_ember_opbyop(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<T>(n);
  in.y = 0.0;
  const ContentionProbe probe;
  for (auto _ : state) {
    Tensor<T> t1 = in.a * in.b;
    Tensor<T> t2 = t1 + in.c;
    Tensor<T> t3 = ember_act<A>(t2);
    Tensor<T> t4 = t3 * 0.5;
    Tensor<T> t5 = in.a * in.c;
    in.y = t4 + t5;
    benchmark::DoNotOptimize(in.y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_chain<A>(state, in, chain_tol<T>())) return;
  report_bytes(state, 4 * n * std::int64_t(sizeof(T)), n);
}

template <Act A, class T>
void chain_ember_opbyop_prealloc(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<T>(n);
  in.y = 0.0;
  Tensor<T> t1 = ember::empty<T>(Shape{n}), t2 = ember::empty<T>(Shape{n}),
            t3 = ember::empty<T>(Shape{n}), t4 = ember::empty<T>(Shape{n}),
            t5 = ember::empty<T>(Shape{n});
  const ContentionProbe probe;
  for (auto _ : state) {
    t1 = in.a * in.b;
    t2 = t1 + in.c;
    t3 = ember_act<A>(t2);
    t4 = t3 * 0.5;
    t5 = in.a * in.c;
    in.y = t4 + t5;
    benchmark::DoNotOptimize(in.y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_chain<A>(state, in, chain_tol<T>())) return;
  report_bytes(state, 4 * n * std::int64_t(sizeof(T)), n);
}

#if EMBER_BENCH_EIGEN
template <Act A, class T>
void chain_eigen(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<T>(n);
  in.y = 0.0;
  auto a = emap(in.a), b = emap(in.b), c = emap(in.c), y = emap(in.y);
  auto& dev = eigen_device();
  const ContentionProbe probe;
  for (auto _ : state) {
    if constexpr (std::is_same_v<T, float>) {
      if constexpr (A == Act::tanh) {
        y.device(dev) = (a * b + c).tanh() * 0.5f + a * c;
      } else {
        y.device(dev) = (a * b + c).cwiseMax(0.0f) * 0.5f + a * c;
      }
    } else {
      // bf16 storage, float arithmetic, one rounding at the store: what ember does.
      auto fa = a.template cast<float>();
      auto fb = b.template cast<float>();
      auto fc = c.template cast<float>();
      if constexpr (A == Act::tanh) {
        y.device(dev) = ((fa * fb + fc).tanh() * 0.5f + fa * fc).template cast<Eigen::bfloat16>();
      } else {
        y.device(dev) =
            ((fa * fb + fc).cwiseMax(0.0f) * 0.5f + fa * fc).template cast<Eigen::bfloat16>();
      }
    }
    benchmark::DoNotOptimize(in.y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  // Eigen's float tanh is a rational approximation (a few ulp); allow for it.
  if (!check_chain<A>(state, in, std::is_same_v<T, float> ? 1e-4 : chain_tol<T>())) return;
  report_bytes(state, 4 * n * std::int64_t(sizeof(T)), n);
}
#endif  // EMBER_BENCH_EIGEN

// The same arithmetic as a plain OpenMP loop: the ceiling for code that calls the C library's tanh.
template <Act A, class T>
void chain_loop_omp(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<T>(n);
  in.y = 0.0;
  const T* __restrict a = in.a.data();
  const T* __restrict b = in.b.data();
  const T* __restrict c = in.c.data();
  T* __restrict y = in.y.data();
  const ContentionProbe probe;
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i)
      y[i] = T(chain_ref<A>(float(a[i]), float(b[i]), float(c[i])));
    benchmark::DoNotOptimize(y);
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_chain<A>(state, in, chain_tol<T>())) return;
  report_bytes(state, 4 * n * std::int64_t(sizeof(T)), n);
}

// ---- copies (the bandwidth reference) ----
template <class T>
void copy_ember(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<T>(n);
  const ContentionProbe probe;
  for (auto _ : state) {
    in.y.copy_(in.a);
    benchmark::DoNotOptimize(in.y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (std::memcmp(in.y.data(), in.a.data(), std::size_t(n) * sizeof(T)) != 0) {
    state.SkipWithError("copy differs");
    return;
  }
  report_bytes(state, 2 * n * std::int64_t(sizeof(T)), n);
}

template <class T>
void copy_memcpy(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<T>(n);
  const ContentionProbe probe;
  for (auto _ : state) {
    std::memcpy(in.y.data(), in.a.data(), std::size_t(n) * sizeof(T));
    benchmark::DoNotOptimize(in.y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  report_bytes(state, 2 * n * std::int64_t(sizeof(T)), n);
}

template <class T>
void copy_omp(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<T>(n);
  // Copy as 32-bit words, so bf16 and float take the same vector loop.
  static_assert(sizeof(T) == 2 || sizeof(T) == 4);
  const std::int64_t words = n * std::int64_t(sizeof(T)) / 4;
  const auto* __restrict src = reinterpret_cast<const std::uint32_t*>(in.a.data());
  auto* __restrict dst = reinterpret_cast<std::uint32_t*>(in.y.data());
  const ContentionProbe probe;
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < words; ++i) dst[i] = src[i];
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  report_bytes(state, 2 * n * std::int64_t(sizeof(T)), n);
}

// ---- reductions over the last axis of a rows x 1024 matrix ----
struct Matrix {
  Tensor<float> x, y;
};
Matrix& matrix(std::int64_t n) {
  static std::map<std::int64_t, std::unique_ptr<Matrix>> cache;
  auto& slot = cache[n];
  if (!slot) {
    slot = std::make_unique<Matrix>();
    slot->x = ember::randn<float>(Shape{n / kCols, kCols}, 11, ember::Device::cpu(), 0.0, 2.0);
    slot->y = ember::full<float>(Shape{n / kCols, kCols}, 7.0);
  }
  return *slot;
}

bool check_rows(benchmark::State& state, const float* got, const std::vector<double>& want) {
  double worst = 0;
  for (std::size_t r = 0; r < want.size(); ++r) {
    const double err = std::fabs(got[r] - want[r]) / (1.0 + std::fabs(want[r]));
    if (worst == worst && !(err <= worst)) worst = err;  // a NaN sticks
  }
  if (!(worst <= 1e-4)) {
    state.SkipWithError(("wrong result: relative error " + std::to_string(worst)).c_str());
    return false;
  }
  return true;
}

std::vector<double> row_sums(const Tensor<float>& x) {
  const std::int64_t rows = x.size(0), cols = x.size(1);
  std::vector<double> s(static_cast<std::size_t>(rows), 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j) s[std::size_t(r)] += x.data()[r * cols + j];
  return s;
}

void rowsum_ember(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& m = matrix(n);
  Tensor<float> s;
  const ContentionProbe probe;
  for (auto _ : state) {
    s = ember::sum(m.x, {1});
    benchmark::DoNotOptimize(s.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_rows(state, s.data(), row_sums(m.x))) return;
  report_bytes(state, (n + n / kCols) * 4, n);
}

#if EMBER_BENCH_EIGEN
void rowsum_eigen(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& m = matrix(n);
  const std::int64_t rows = n / kCols;
  Eigen::Tensor<float, 1, Eigen::RowMajor, std::int64_t> s(rows);
  auto x = emap2(m.x);
  const Eigen::array<std::int64_t, 1> axis{1};
  auto& dev = eigen_device();
  const ContentionProbe probe;
  for (auto _ : state) {
    s.device(dev) = x.sum(axis);
    benchmark::DoNotOptimize(s.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_rows(state, s.data(), row_sums(m.x))) return;
  report_bytes(state, (n + n / kCols) * 4, n);
}
#endif  // EMBER_BENCH_EIGEN

// Row softmax as expressions: max, subtract, exp, sum, divide (three passes over x).
void softmax_ember(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& m = matrix(n);
  const ContentionProbe probe;
  for (auto _ : state) {
    Tensor<float> mx = ember::max(m.x, {1}, true);
    Tensor<float> s = ember::sum(ember::exp(m.x - mx), {1}, true);
    m.y = ember::exp(m.x - mx) / s;
    benchmark::DoNotOptimize(m.y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_rows(state, ember::sum(m.y, {1}).data(),
                  std::vector<double>(std::size_t(n / kCols), 1.0)))
    return;
  report_bytes(state, 2 * n * 4, n);
}

// The same through logsumexp: exp(x - logsumexp(x)), two passes over x.
void softmax_ember_lse(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& m = matrix(n);
  const ContentionProbe probe;
  for (auto _ : state) {
    Tensor<float> lse = ember::logsumexp(m.x, {1}, true);
    m.y = ember::exp(m.x - lse);
    benchmark::DoNotOptimize(m.y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_rows(state, ember::sum(m.y, {1}).data(),
                  std::vector<double>(std::size_t(n / kCols), 1.0)))
    return;
  report_bytes(state, 2 * n * 4, n);
}

#if EMBER_BENCH_EIGEN
// Eigen, written the way TensorFlow's softmax functor writes it: reductions into small
// temporaries, broadcast back over the rows.
void softmax_eigen(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& m = matrix(n);
  const std::int64_t rows = n / kCols;
  auto x = emap2(m.x);
  auto y = emap2(m.y);
  Eigen::Tensor<float, 1, Eigen::RowMajor, std::int64_t> mx(rows), s(rows);
  const Eigen::array<std::int64_t, 1> axis{1};
  const Eigen::array<std::int64_t, 2> column{rows, 1};
  const Eigen::array<std::int64_t, 2> across{1, kCols};
  auto& dev = eigen_device();
  const ContentionProbe probe;
  for (auto _ : state) {
    mx.device(dev) = x.maximum(axis);
    y.device(dev) = (x - mx.reshape(column).broadcast(across)).exp();
    s.device(dev) = y.sum(axis);
    y.device(dev) = y / s.reshape(column).broadcast(across);
    benchmark::DoNotOptimize(m.y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_rows(state, ember::sum(m.y, {1}).data(), std::vector<double>(std::size_t(rows), 1.0)))
    return;
  report_bytes(state, 2 * n * 4, n);
}
#endif  // EMBER_BENCH_EIGEN

// ---- registration ----
template <Act A, class T>
void add_chain(bool with_opbyop) {
  const std::string g = std::string("chain_") + act_name(A) + "_" + DT<T>::name + "/";
  add(g + "ember_fused", chain_ember_fused<A, T>);
#if EMBER_BENCH_EIGEN
  add(g + "eigen", chain_eigen<A, T>);
#endif
  // The plain loop is the float reference for what libm costs; for bf16 GCC does not vectorise
  // the element-wise conversions in it, so it would only measure that.
  if constexpr (std::is_same_v<T, float>) add(g + "loop_omp", chain_loop_omp<A, T>);
  if (with_opbyop) {
    add(g + "ember_opbyop", chain_ember_opbyop<A, T>);
    add(g + "ember_opbyop_prealloc", chain_ember_opbyop_prealloc<A, T>);
  }
}

// ---- random numbers: ember's factories against a loop over the same Philox blocks ----
template <bool Normal>
void random_ember(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  Tensor<float> y;
  const ContentionProbe probe;
  for (auto _ : state) {
    y = Normal ? ember::randn<float>(Shape{n}, 5) : ember::rand<float>(Shape{n}, 5);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  // The factory's values are the element-by-element ones.
  const std::int64_t last = n - 1;
  const float want = Normal ? ember::philox_normal(5, 0, std::uint64_t(last))
                            : ember::philox_uniform(5, 0, std::uint64_t(last));
  if (y.data()[last] != want) {
    state.SkipWithError("wrong result: the last element differs from Philox's");
    return;
  }
  report_bytes(state, n * 4, n);
}

template <bool Normal>
void random_loop_omp(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  std::vector<float> y(static_cast<std::size_t>(n));
  float* out = y.data();
  const ContentionProbe probe;
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < n / 4; ++b) {
      float four[4];
      if constexpr (Normal) {
        ember::philox_normal_block(5, 0, std::uint64_t(b), four);
      } else {
        ember::philox_uniform_block(5, 0, std::uint64_t(b), four);
      }
      for (int w = 0; w < 4; ++w) out[4 * b + w] = four[w];
    }
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  report_bytes(state, n * 4, n);
}

template <class T>
void add_copy() {
  const std::string g = std::string("copy_") + DT<T>::name + "/";
  add(g + "ember_copy", copy_ember<T>);
  add(g + "memcpy", copy_memcpy<T>);
  add(g + "omp_copy", copy_omp<T>);
}

const bool registered = [] {
  add_copy<float>();
  add_chain<Act::tanh, float>(true);
  add_chain<Act::relu, float>(true);
  add_copy<bf16>();
  add_chain<Act::tanh, bf16>(true);
  add_chain<Act::relu, bf16>(false);
  add("rowsum_f32/ember", rowsum_ember);
#if EMBER_BENCH_EIGEN
  add("rowsum_f32/eigen", rowsum_eigen);
#endif
  add("randn_f32/ember", random_ember<true>);
  add("randn_f32/loop_omp", random_loop_omp<true>);
  add("rand_f32/ember", random_ember<false>);
  add("rand_f32/loop_omp", random_loop_omp<false>);
  add("softmax_f32/ember_expr", softmax_ember);
  add("softmax_f32/ember_lse", softmax_ember_lse);
#if EMBER_BENCH_EIGEN
  add("softmax_f32/eigen", softmax_eigen);
#endif
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ember_bench::add_common_context();
#if EMBER_BENCH_EIGEN
  benchmark::AddCustomContext("eigen_version", std::to_string(EIGEN_WORLD_VERSION) + "." +
                                                   std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                                   std::to_string(EIGEN_MINOR_VERSION));
#else
  benchmark::AddCustomContext("eigen_version", "not found: Eigen benchmarks left out");
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
