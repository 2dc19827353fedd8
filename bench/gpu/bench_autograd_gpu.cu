// GPU benchmarks of ember's autodiff, timed with CUDA events on ember's stream (median of N runs
// after warm-up): the fused backward of an 8-op elementwise chain against the same chain
// differentiated op by op. bench/gpu/torch_peer.py --suite autograd times PyTorch autograd on the
// same chain (eager, and torch.compile's fused forward and backward), and bench/gpu/summarize.py
// joins the two.
//
// The chain (the CPU benchmark's, bench/bench_autograd_cpu.cpp), over three inputs of n elements:
//   y = tanh(a*b + c) * sigmoid(a - c) + exp(b)        8 ops: *, +, tanh, -, sigmoid, *, exp, +
// with the upstream gradient g = dL/dy (a fixed random tensor, the seed of y.backward(g)).
//
//   autograd_bwd_<dt>     y.backward(g) alone, writing a.grad, b.grad, c.grad
//   autograd_fwdbwd_<dt>  zero_grad, the forward (recording the tape) and the backward
// for <dt> f32 and bf16, 2^28 elements (1 GiB per f32 tensor: every pass streams from HBM), and
//   ember_fused   `Var<T> y = chain(a, b, c)`: one forward launch, one tape node, and a backward
//                 of one multi-output launch that recomputes the intermediates in registers
//   ember_opbyop  each op into its own Var: 8 forward launches, 8 backward launches, the
//                 intermediates and their gradients in memory (what an eager framework does)
//
// Timing: each repetition zeroes the gradients (zero_grad() frees them; the stream-ordered pool
// hands the blocks back without a cudaMalloc) and, for autograd_bwd, runs the forward before the
// start event, so the events bracket the backward only; the host's own time to enqueue the
// backward is in the measurement when the GPU waits for it, as it would in training.
// Bytes counted are the fewest that must cross memory (inputs read once, outputs written once):
//   backward            a, b, c, g read and three gradients written: 7 n elements
//   forward + backward  a, b, c read, y written, then the backward:   11 n elements
// The gradients are checked against a float64 reference on the host (the first and last 2^20
// elements), with the memory they are allocated from poisoned with NaN. Writes JSON records in
// bench_elementwise_gpu's format.
//
// Build (bench/gpu/check.sh does this):
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90,code=sm_90 --expt-relaxed-constexpr
//        -Xcompiler=-fopenmp -Iinclude bench/gpu/bench_autograd_gpu.cu -o bench_autograd_gpu
//        -lgomp
// Run: bench_autograd_gpu [--json out.json] [--reps N] [--quick | --tiny]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <ember/ember.hpp>

#include "bench_gpu_support.cuh"

namespace {

using ember::bf16;
using ember::Device;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using namespace ember_gpu_bench;  // the shared harness: bench_gpu_support.cuh

// ---- the chain ----
template <class A, class B, class C>
auto chain(const A& a, const B& b, const C& c) {
  return ember::tanh(a * b + c) * ember::sigmoid(a - c) + ember::exp(b);
}

template <class T>
Var<T> chain_fused(const Var<T>& a, const Var<T>& b, const Var<T>& c) {
  return chain(a, b, c);
}

template <class T>
Var<T> chain_opbyop(const Var<T>& a, const Var<T>& b, const Var<T>& c) {
  Var<T> t1 = a * b;
  Var<T> t2 = t1 + c;
  Var<T> t3 = ember::tanh(t2);
  Var<T> t4 = a - c;
  Var<T> t5 = ember::sigmoid(t4);
  Var<T> t6 = t3 * t5;
  Var<T> t7 = ember::exp(b);
  return t6 + t7;
}

// ---------------------------------------------------------------------------------------------
template <class T>
void run_autograd(std::int64_t n, const char* dt) {
  const Device gpu = Device::cuda(0);
  const std::string shape = std::to_string(n);
  const Tensor<T> a = ember::rand<T>(Shape{n}, 1, gpu, -2.0, 2.0);
  const Tensor<T> b = ember::rand<T>(Shape{n}, 2, gpu, -2.0, 2.0);
  const Tensor<T> c = ember::rand<T>(Shape{n}, 3, gpu, -2.0, 2.0);
  const Tensor<T> g = ember::rand<T>(Shape{n}, 4, gpu, -1.0, 1.0);
  const Var<T> va = ember::param(a), vb = ember::param(b), vc = ember::param(c);
  const double elem = sizeof(T);
  auto zero_grads = [&] {
    va.zero_grad();
    vb.zero_grad();
    vc.zero_grad();
  };

  // The gradients of one more step against float64 at both ends of the arrays. Between the
  // forward and the backward, blocks of the gradients' size are filled with NaN and handed back
  // to the pool, which the backward's fresh gradients then reuse: a gradient element the
  // backward did not write shows up as NaN instead of as a stale right answer.
  auto check = [&](Var<T> (*forward)(const Var<T>&, const Var<T>&, const Var<T>&)) {
    zero_grads();
    Var<T> y = forward(va, vb, vc);
    {
      Tensor<T> poison[4];
      for (Tensor<T>& t : poison) {
        t = ember::empty<T>(Shape{n}, gpu);
        t = kNaN;
      }
    }
    y.backward(g);
    const std::int64_t k = std::min<std::int64_t>(n, 1 << 20);
    double worst = 0;
    for (std::int64_t start : {std::int64_t{0}, n - k}) {
      const auto av = host_floats(a.narrow(0, start, k)), bv = host_floats(b.narrow(0, start, k));
      const auto cv = host_floats(c.narrow(0, start, k)), gv = host_floats(g.narrow(0, start, k));
      const std::vector<float> got[3] = {host_floats(va.grad().narrow(0, start, k)),
                                         host_floats(vb.grad().narrow(0, start, k)),
                                         host_floats(vc.grad().narrow(0, start, k))};
      for (std::size_t i = 0; i < av.size(); ++i) {
        const double x = av[i], w = bv[i], z = cv[i], up = gv[i];
        const double t3 = std::tanh(x * w + z), t5 = 1.0 / (1.0 + std::exp(-(x - z)));
        const double u = up * t5 * (1.0 - t3 * t3), v = up * t3 * t5 * (1.0 - t5);
        const double want[3] = {u * w + v, u * x + up * std::exp(w), u - v};
        for (int j = 0; j < 3; ++j) {
          const double e = std::fabs(double(got[j][i]) - want[j]) / (1.0 + std::fabs(want[j]));
          if (worst == worst && !(e <= worst)) worst = e;  // a NaN sticks
        }
      }
      if (worst != worst) break;
    }
    // float: CUDA's tanhf/expf are within 2 ulp; bf16: 8 bits, op by op rounds every step.
    return verdict(worst, std::is_same_v<T, float> ? 1e-4 : 6e-2);
  };

  struct Variant {
    const char* impl;
    Var<T> (*forward)(const Var<T>&, const Var<T>&, const Var<T>&);
  };
  for (const Variant& v :
       {Variant{"ember_fused", chain_fused<T>}, Variant{"ember_opbyop", chain_opbyop<T>}}) {
    Var<T> y;
    // The backward alone: the forward is enqueued before the start event.
    Record r = time_it(
        std::string("autograd_bwd_") + dt, shape, v.impl, 7 * n * elem, 0.0,
        [&] {
          y = Var<T>();
          zero_grads();
          y = v.forward(va, vb, vc);
        },
        [&] { y.backward(g); });
    y = Var<T>();
    r.check = check(v.forward);
    keep(r);
    // The whole step.
    r = time_it(
        std::string("autograd_fwdbwd_") + dt, shape, v.impl, 11 * n * elem, 0.0, [] {},
        [&] {
          zero_grads();
          Var<T> out = v.forward(va, vb, vc);
          out.backward(g);
        });
    r.check = check(v.forward);
    keep(r);
  }
  zero_grads();
}

}  // namespace

int main(int argc, char** argv) {
  return ember_gpu_bench::bench_main(
      argc, argv, "bench_autograd_gpu", {.bench = 22, .shape = 12, .impl = 14}, [](Size size) {
        // 2^28 elements: 1 GiB per f32 tensor, far beyond the L2. Op by op holds about 20 such
        // tensors at once (inputs, seed, intermediates and their gradients).
        const std::int64_t n = by_size<std::int64_t>(size, std::int64_t{1} << 28,
                                                     std::int64_t{1} << 22, std::int64_t{1} << 14);
        run_autograd<float>(n, "f32");
        run_autograd<bf16>(n, "bf16");
      });
}
