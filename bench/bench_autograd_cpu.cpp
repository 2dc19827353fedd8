// CPU benchmarks of ember's autodiff: the fused backward of an 8-op elementwise chain against the
// same chain differentiated op by op (one tape node per op, as an eager framework records it),
// and against hand-written OpenMP loops computing the analytic gradients (the floor).
//
// The chain, over three inputs of the same shape (exactly 8 elementwise ops):
//   y = tanh(a*b + c) * sigmoid(a - c) + exp(b)
//     t1 = a*b   t2 = t1 + c   t3 = tanh(t2)   t4 = a - c   t5 = sigmoid(t4)   t6 = t3*t5
//     t7 = exp(b)   y = t6 + t7
// and its gradients for an upstream gradient g = dL/dy:
//   u = g t5 (1 - t3^2) (= dL/dt2)   v = g t3 t5 (1 - t5) (= dL/dt4)
//   da = u b + v   db = u a + g t7   dc = u - v
//
// Names are "<group>/<variant>/<elements>" so bench/report.py can pair them up:
//   autograd_bwd_<dt>     the backward alone: y.backward(g) writes a.grad, b.grad and c.grad
//   autograd_fwdbwd_<dt>  a whole step: zero the gradients, the forward (recording the tape),
//                         the backward
//   copy_<dt>             omp_copy, the STREAM-style copy of bench_elementwise_cpu: the bandwidth
//                         reference for "% of copy"
// Variants:
//   ember_fused   `Var<T> y = chain(a, b, c)`: one forward launch and one tape node; its backward
//                 is one multi-output launch that recomputes t1..t7 per element and writes all
//                 three gradients
//   ember_opbyop  each op into its own Var (`Var<T> t1 = a * b; Var<T> t2 = t1 + c; ...`):
//                 8 forward launches, 8 tape nodes, 8 backward launches, with the intermediates
//                 and their gradients in memory
//   loop_omp      (f32 only, as in bench_elementwise_cpu) the forward as one OpenMP loop and the
//                 backward as one more reading a, b, c and g once and writing the three
//                 gradients, into buffers allocated once, with ember's vectorised tanh and exp
//                 (ember::math) and a branch-free sigmoid: what the hardware allows for this
//                 arithmetic
//
// What is timed (wall clock, UseRealTime; process CPU time with EMBER_BENCH_CPU_TIME=1):
//   * autograd_bwd: backward() releases the graph, so each iteration rebuilds the forward with
//     the timer paused (PauseTiming/ResumeTiming; about a microsecond of overhead against tens of
//     microseconds of backward at the smallest size), then times y.backward(g) alone. At the
//     cache-resident sizes the forward leaves the inputs in cache, for every variant alike.
//   * The gradients are zeroed between iterations with zero_grad(), which frees them (as
//     PyTorch's zero_grad(set_to_none=True) does), so every backward allocates its gradients
//     afresh. That allocation is in the timed region, and so is whatever else the API does (op
//     by op allocates the gradient of every intermediate and frees the intermediates as the
//     released nodes let go of them; a copy of the seed would show in bwd_launches). ember's
//     host allocator does not cache, so at 2^24 (64 MiB per float array, beyond glibc's mmap
//     threshold) each fresh gradient is a fresh mapping whose pages fault on first touch.
//     loop_omp allocates nothing. These are real costs of a training step with ember, hence
//     included; the difference between ember_fused and loop_omp is their price together with
//     the kernel's own.
//   * autograd_fwdbwd times everything: zero_grad, forward, backward.
// Bytes counted are the fewest that must cross memory, the same for every variant (STREAM's
// convention: write-allocate traffic is not counted):
//   backward            a, b, c, g read and three gradients written:        7 n elements
//   forward + backward  a, b, c read and y written (4 n), then the backward: 11 n elements
// so "GB/s" of ember_opbyop is the effective rate, not what it moved (it moves about 5x more).
// Every variant's gradients are checked against a float64 reference after its timed loop, and
// the counter bwd_launches records the parallel passes one backward ran (ember::launch_count()).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <ember/ember.hpp>

#include "bench_support.hpp"

namespace {

using ember::bf16;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using ember_bench::add;
using ember_bench::ContentionProbe;
using ember_bench::report_bytes;

// ---- the chain ----
// The same source for Tensors, Vars and mixes of them: a lazy expression of 8 ops.
template <class A, class B, class C>
auto chain(const A& a, const B& b, const C& c) {
  return ember::tanh(a * b + c) * ember::sigmoid(a - c) + ember::exp(b);
}

// The same chain materialised op by op: every op is its own Var and tape node.
template <class T>
Var<T> chain_opbyop(const Var<T>& a, const Var<T>& b, const Var<T>& c) {
  Var<T> t1 = a * b;
  Var<T> t2 = t1 + c;
  Var<T> t3 = ember::tanh(t2);
  Var<T> t4 = a - c;
  Var<T> t5 = ember::sigmoid(t4);
  Var<T> t6 = t3 * t5;
  Var<T> t7 = ember::exp(b);
  return t6 + t7;  // the intermediates live on in the tape only
}

// The float64 reference of one element: y and the three gradients for upstream g.
struct RefGrad {
  double y, da, db, dc;
};
RefGrad chain_ref(double a, double b, double c, double g) {
  const double t3 = std::tanh(a * b + c);
  const double t5 = 1.0 / (1.0 + std::exp(-(a - c)));
  const double t7 = std::exp(b);
  const double u = g * t5 * (1.0 - t3 * t3);
  const double v = g * t3 * t5 * (1.0 - t5);
  return {t3 * t5 + t7, u * b + v, u * a + g * t7, u - v};
}

// ---- inputs, made once per (dtype, size) and shared by every variant ----
template <class T>
struct Inputs {
  Tensor<T> a, b, c, g;     // the inputs and the upstream gradient (seed)
  Tensor<T> y, da, db, dc;  // loop_omp's outputs, allocated (and touched) once
  Var<T> va, vb, vc;        // the same inputs as Vars that require grad
  void zero_grad() const {
    va.zero_grad();
    vb.zero_grad();
    vc.zero_grad();
  }
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
    slot->g = ember::rand<T>(Shape{n}, 4, ember::Device::cpu(), -1.0, 1.0);
    for (Tensor<T>* t : {&slot->y, &slot->da, &slot->db, &slot->dc}) {
      *t = ember::full<T>(Shape{n}, 7.0);  // touched, so no first-use page faults in timing
    }
    slot->va = ember::param(slot->a);
    slot->vb = ember::param(slot->b);
    slot->vc = ember::param(slot->c);
  }
  return *slot;
}

template <class T>
constexpr double grad_tol() {
  // float: ember's vectorised tanh and exp are within an ulp or two; the gradients are a few
  // products of them. bf16: 8 bits, and op by op rounds every intermediate and its gradient.
  return std::is_same_v<T, float> ? 1e-4 : 6e-2;
}

// Fails the benchmark unless (da, db, dc) are the chain's gradients at (a, b, c) for upstream
// g, within tol relative to 1 + |want|; checks 4096 elements spread over the array.
template <class T>
bool check_grads(benchmark::State& state, const Inputs<T>& in, const Tensor<T>& da,
                 const Tensor<T>& db, const Tensor<T>& dc, double tol) {
  if (!da.defined() || !db.defined() || !dc.defined()) {
    state.SkipWithError("a gradient is missing after backward");
    return false;
  }
  const std::int64_t n = in.a.numel();
  const T *a = in.a.data(), *b = in.b.data(), *c = in.c.data(), *g = in.g.data();
  const T* got[3] = {da.data(), db.data(), dc.data()};
  double worst = 0;
  const std::int64_t step = std::max<std::int64_t>(1, n / 4096);
  for (std::int64_t i = 0; i < n; i += step) {
    const RefGrad r = chain_ref(float(a[i]), float(b[i]), float(c[i]), float(g[i]));
    const double want[3] = {r.da, r.db, r.dc};
    for (int k = 0; k < 3; ++k) {
      const double err = std::fabs(double(float(got[k][i])) - want[k]) / (1.0 + std::fabs(want[k]));
      if (worst == worst && !(err <= worst)) worst = err;  // a NaN sticks
    }
  }
  if (!(worst <= tol)) {
    state.SkipWithError(("wrong gradient: relative error " + std::to_string(worst)).c_str());
    return false;
  }
  return true;
}

// After the timed loop: one more forward, and the backward's parallel passes counted.
template <class T, class Forward>
bool check_ember(benchmark::State& state, const Inputs<T>& in, Forward forward) {
  in.zero_grad();
  Var<T> y = forward(in);
  const std::uint64_t before = ember::launch_count();
  y.backward(in.g);
  state.counters["bwd_launches"] = double(ember::launch_count() - before);
  return check_grads(state, in, in.va.grad(), in.vb.grad(), in.vc.grad(), grad_tol<T>());
}

template <class T>
Var<T> forward_fused(const Inputs<T>& in) {
  return chain(in.va, in.vb, in.vc);
}
template <class T>
Var<T> forward_opbyop(const Inputs<T>& in) {
  return chain_opbyop(in.va, in.vb, in.vc);
}

// ---- ember: the backward alone ----
template <class T, Var<T> (*Forward)(const Inputs<T>&)>
void bwd_ember(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<T>(n);
  Var<T> y;
  const ContentionProbe probe;
  for (auto _ : state) {
    state.PauseTiming();
    y = Var<T>();  // the previous iteration's output (its graph was released by backward)
    in.zero_grad();
    y = Forward(in);
    state.ResumeTiming();
    y.backward(in.g);
    benchmark::DoNotOptimize(in.va.grad().data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  y = Var<T>();
  if (!check_ember(state, in, Forward)) return;
  report_bytes(state, 7 * n * std::int64_t(sizeof(T)), n);
}

// ---- ember: the whole step ----
template <class T, Var<T> (*Forward)(const Inputs<T>&)>
void fwdbwd_ember(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<T>(n);
  const ContentionProbe probe;
  for (auto _ : state) {
    in.zero_grad();
    Var<T> y = Forward(in);
    y.backward(in.g);
    benchmark::DoNotOptimize(in.va.grad().data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_ember(state, in, Forward)) return;
  report_bytes(state, 11 * n * std::int64_t(sizeof(T)), n);
}

// ---- the hand-written floor (float) ----
// Sigmoid without a branch, stable on both tails (exp of a non-positive number only), so the
// loops vectorise: 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below.
inline float sigmoid_select(float x) {
  const float e = ember::math::exp(-std::fabs(x));
  const float r = 1.0f / (1.0f + e);
  return x >= 0.0f ? r : e * r;
}

void forward_loop(const Inputs<float>& in) {
  const std::int64_t n = in.a.numel();
  const float* __restrict a = in.a.data();
  const float* __restrict b = in.b.data();
  const float* __restrict c = in.c.data();
  float* __restrict y = in.y.data();
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    y[i] = ember::math::tanh(a[i] * b[i] + c[i]) * sigmoid_select(a[i] - c[i]) +
           ember::math::exp(b[i]);
  }
}
void backward_loop(const Inputs<float>& in) {
  const std::int64_t n = in.a.numel();
  const float* __restrict a = in.a.data();
  const float* __restrict b = in.b.data();
  const float* __restrict c = in.c.data();
  const float* __restrict g = in.g.data();
  float* __restrict da = in.da.data();
  float* __restrict db = in.db.data();
  float* __restrict dc = in.dc.data();
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const float t3 = ember::math::tanh(a[i] * b[i] + c[i]);
    const float t5 = sigmoid_select(a[i] - c[i]);
    const float t7 = ember::math::exp(b[i]);
    const float u = g[i] * t5 * (1.0f - t3 * t3);
    const float v = g[i] * t3 * t5 * (1.0f - t5);
    da[i] = u * b[i] + v;
    db[i] = u * a[i] + g[i] * t7;
    dc[i] = u - v;
  }
}

void bwd_loop(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<float>(n);
  const ContentionProbe probe;
  for (auto _ : state) {
    backward_loop(in);
    benchmark::DoNotOptimize(in.da.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_grads(state, in, in.da, in.db, in.dc, grad_tol<float>())) return;
  report_bytes(state, 7 * n * 4, n);
}

void fwdbwd_loop(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto& in = inputs<float>(n);
  const ContentionProbe probe;
  for (auto _ : state) {
    forward_loop(in);
    benchmark::DoNotOptimize(in.y.data());
    backward_loop(in);
    benchmark::DoNotOptimize(in.da.data());
    benchmark::ClobberMemory();
  }
  probe.finish(state);
  if (!check_grads(state, in, in.da, in.db, in.dc, grad_tol<float>())) return;
  report_bytes(state, 11 * n * 4, n);
}

// ---- the bandwidth reference: the same OpenMP copy as bench_elementwise_cpu ----
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

// ---- registration ----
template <class T>
const char* dt_name() {
  return std::is_same_v<T, float> ? "f32" : "bf16";
}

template <class T>
void add_autograd() {
  const std::string dt = dt_name<T>();
  add("copy_" + dt + "/omp_copy", copy_omp<T>);
  const std::string bwd = "autograd_bwd_" + dt + "/";
  add(bwd + "ember_fused", bwd_ember<T, forward_fused<T>>);
  add(bwd + "ember_opbyop", bwd_ember<T, forward_opbyop<T>>);
  if constexpr (std::is_same_v<T, float>) add(bwd + "loop_omp", bwd_loop);
  const std::string fb = "autograd_fwdbwd_" + dt + "/";
  add(fb + "ember_fused", fwdbwd_ember<T, forward_fused<T>>);
  add(fb + "ember_opbyop", fwdbwd_ember<T, forward_opbyop<T>>);
  if constexpr (std::is_same_v<T, float>) add(fb + "loop_omp", fwdbwd_loop);
}

const bool registered = [] {
  add_autograd<float>();
  add_autograd<bf16>();
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ember_bench::add_common_context();
  benchmark::AddCustomContext("chain", "tanh(a*b + c) * sigmoid(a - c) + exp(b), 8 ops");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
