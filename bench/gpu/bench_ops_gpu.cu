// GPU benchmarks of ember's operators (issue 4), timed with CUDA events on ember's stream (median
// of N runs after warm-up). bench/gpu/torch_peer.py --suite ops times PyTorch on the same shapes
// (eager, and torch.compile where it applies), and bench/gpu/summarize.py joins the two.
//
//   op_matmul_bf16       y[M, N] = x[M, K] w[N, K]^T: ember::matmul(x, w.t()), cuBLASLt without
//                        an epilogue: the ceiling for the fused linear below
//   op_linear_gelu_bf16  y = gelu(x w^T + b), shape "MxNxK", two ways:
//     ember_fused          ember::linear(x, w, b, Activation::gelu): one cuBLASLt call, the bias
//                          and GELU in its epilogue (CUBLASLT_EPILOGUE_GELU_BIAS, cuBLASLt's GELU
//                          being the tanh approximation)
//     ember_unfused        ember::matmul(x, w.t()), then one ember pass y = gelu_tanh(y + b): the
//                          same function, the product written to memory and read back once
//   op_ffn_fwdbwd_bf16   a feed-forward block y = linear(gelu_tanh(linear(x, w1, b1)), w2, b2),
//                        forward and y.backward(g), shape "MxHxF" (x [M, H], hidden F), two ways:
//     ember_fused          ember::feed_forward(x, w1, b1, w2, b2, gelu_tanh): GELU_AUX_BIAS
//                          keeps the pre-activation, and the backward's dH GEMM multiplies by
//                          gelu' and sums b1's gradient in its epilogue (DGELU_BGRAD)
//     ember_two_linears    linear(linear(x, w1, b1, gelu_tanh), w2, b2): the same GEMMs, gelu'
//                          a pass of its own
//   op_conv2d_fwd_bf16   y = conv2d(x, w, stride, padding), x and w channels-last (NHWC, as a
//                        channels-last model keeps them), cuDNN through ember::conv2d
//   op_conv2d_bwd_bf16   dx and dw from dy: ember::ops::conv2d_backward(x, w, dy, opt, true, true)
//                        (cuDNN backward data + backward filter), what Var's backward runs
//   op_softmax_bf16      ember::softmax(x, 1): one online-logsumexp reduction + one pass
//   op_layernorm_bf16    ember::layer_norm(x, w, b, 1e-5): mean, Welford variance, one pass
//   op_add_layernorm_bf16  y = layer_norm(x + r, w, b, 1e-5), the sum kept for the backward
//                        (a post-LN transformer's sublayer ending), two ways:
//     ember_fused          ember::dropout_add_layer_norm(x, r, w, b) (p = 0): a warp per row
//     ember_unfused        s = x + r, then ember::layer_norm(s, w, b)
//   copy_bf16            cudaMemcpyAsync of 1 GiB device to device: the bandwidth reference
//                        (bench_elementwise_gpu's record, repeated so this program stands alone)
//
// Shapes:
//   GEMMs: 8192^3, and BERT-base at 4096 tokens (32 sequences of 128): [4096, 768] x [768, 3072]
//          (FFN up), [4096, 3072] x [3072, 768] (FFN down), [4096, 768] x [768, 768] (projections)
//   conv2d: ResNet-50's main shapes at batch 256: the 7x7 stride-2 stem, the 3x3 of each stage
//          (64 ch at 56x56, 128 at 28x28, 256 at 14x14, 512 at 7x7) and two 1x1 (64 -> 256 at
//          56x56, 1024 -> 256 at 14x14)
//   rows:  [4096 * 12, 128] (BERT-base's attention probabilities: 32 sequences x 12 heads x 128
//          queries, over 128 keys) and [4096, 768] (its hidden states), for both softmax and
//          layer norm. Both fit in the H200's 50 MiB L2 (12 and 6 MiB per tensor): repeated
//          runs read from L2, as a layer right after its producer would.
//
// FLOPs (field "flops"; TFLOP/s = flops / time; a multiply-add is 2, bias and activation not
// counted): GEMM and linear 2 M N K; the feed-forward block six GEMMs, 12 M H F; conv2d forward 2 N
// O OH OW C KH KW, backward twice that (data and filter). Bytes (field "bytes", the fewest that
// must cross memory): GEMMs and convs their operands read and the output written once; softmax 2
// rows cols 2; layer norm the same plus the weight and bias.
//
// Checks: every result against a float64 reference on the host (sampled outputs of the GEMMs and
// convolutions, sampled rows of softmax and layer norm), after the memory the checked call
// allocates from was poisoned with NaN. bf16 rounds each stored value to 8 bits.
//
// Build (bench/gpu/check.sh does this; cuDNN optional: without it the conv2d records are left
// out):
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90,code=sm_90 --expt-relaxed-constexpr
//        -Xcompiler=-fopenmp -Iinclude -DEMBER_WITH_CUDNN=1 bench/gpu/bench_ops_gpu.cu
//        -o bench_ops_gpu -lcublasLt -lcudnn -lgomp
// Run: bench_ops_gpu [--json out.json] [--reps N] [--quick | --tiny]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ember/ember.hpp>

#include "bench_gpu_support.cuh"

namespace {

using ember::bf16;
using ember::Device;
using ember::Shape;
using ember::Tensor;
using namespace ember_gpu_bench;  // the shared harness: bench_gpu_support.cuh

// max(worst, err) with a NaN sticking.
void worsen(double& worst, double err) {
  if (worst == worst && !(err <= worst)) worst = err;
}

// Fills `count` freshly allocated elements with NaN and frees them: the next allocation of that
// size from ember's pool (the output of the call being checked) starts out as NaN, so an element
// the call did not write shows up instead of a stale right answer.
void poison(std::int64_t count) {
  Tensor<bf16> t = ember::empty<bf16>(Shape{count}, Device::cuda(0));
  t = kNaN;
}

double gelu_tanh_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

// ---------------------------------------------------------------------------------------------
// GEMM and linear + bias + GELU, bf16 in and out, float accumulation
void run_linear(std::int64_t M, std::int64_t N, std::int64_t K) {
  const Device gpu = Device::cuda(0);
  const std::string shape = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  const Tensor<bf16> x = ember::randn<bf16>(Shape{M, K}, 1, gpu);
  // Weights ~ N(0, 1/K): pre-activations ~ N(0, 1), where GELU is curved.
  const Tensor<bf16> w = ember::randn<bf16>(Shape{N, K}, 2, gpu, 0.0, 1.0 / std::sqrt(double(K)));
  const Tensor<bf16> b = ember::randn<bf16>(Shape{N}, 3, gpu, 0.0, 0.5);
  const double flops = 2.0 * double(M) * double(N) * double(K);
  const double bytes = 2.0 * double(M * K + N * K + M * N);

  // 16 rows of x and 16 rows of w on the host: 256 outputs checked.
  std::vector<std::int64_t> is, js;
  for (int t = 0; t < 16; ++t) {
    is.push_back(t * (M - 1) / 15);
    js.push_back((t * 7 % 16) * (N - 1) / 15);
  }
  std::vector<std::vector<float>> xr, wr;
  for (int t = 0; t < 16; ++t) {
    xr.push_back(host_floats(x.narrow(0, is[t], 1)));
    wr.push_back(host_floats(w.narrow(0, js[t], 1)));
  }
  const std::vector<float> bh = host_floats(b);
  // The error relative to 1 + |want|: the product accumulates in float, and the output is
  // rounded to bf16 once (fused) or twice (unfused: the product, then the GELU).
  auto check = [&](const Tensor<bf16>& y, bool act) {
    double worst = 0;
    for (int a = 0; a < 16; ++a) {
      const std::vector<float> yr = host_floats(y.narrow(0, is[a], 1));
      for (int c = 0; c < 16; ++c) {
        double pre = 0;
        for (std::int64_t k = 0; k < K; ++k) pre += double(xr[a][k]) * double(wr[c][k]);
        const double want = act ? gelu_tanh_ref(pre + bh[js[c]]) : pre;
        worsen(worst, std::fabs(double(yr[js[c]]) - want) / (1.0 + std::fabs(want)));
      }
    }
    return verdict(worst, 2e-2);
  };

  Tensor<bf16> y;
  Record r =
      time_it("op_matmul_bf16", shape, "ember", bytes, flops, [&] { y = ember::matmul(x, w.t()); });
  y = Tensor<bf16>();
  poison(M * N);
  y = ember::matmul(x, w.t());
  r.check = check(y, false);
  keep(r);

  r = time_it("op_linear_gelu_bf16", shape, "ember_fused", bytes + 2.0 * N, flops,
              [&] { y = ember::linear(x, w, b, ember::Activation::gelu); });
  y = Tensor<bf16>();
  poison(M * N);
  y = ember::linear(x, w, b, ember::Activation::gelu);
  r.check = check(y, true);
  keep(r);

  auto unfused = [&] {
    y = ember::matmul(x, w.t());
    y = ember::gelu_tanh(y + b);  // one pass, in place
  };
  r = time_it("op_linear_gelu_bf16", shape, "ember_unfused", bytes + 2.0 * N, flops, unfused);
  y = Tensor<bf16>();
  poison(M * N);
  unfused();
  r.check = check(y, true);
  keep(r);
}

// ---------------------------------------------------------------------------------------------
// A feed-forward block, forward and backward, bf16: y = linear(gelu_tanh(linear(x, w1, b1)), w2,
// b2) with x [M, H], w1 [F, H], w2 [H, F], then y.backward(g)
void run_ffn(std::int64_t M, std::int64_t H, std::int64_t F) {
  const Device gpu = Device::cuda(0);
  const std::string shape = std::to_string(M) + "x" + std::to_string(H) + "x" + std::to_string(F);
  const Tensor<bf16> x = ember::randn<bf16>(Shape{M, H}, 11, gpu);
  const Tensor<bf16> w1 = ember::randn<bf16>(Shape{F, H}, 12, gpu, 0.0, 1.0 / std::sqrt(double(H)));
  const Tensor<bf16> b1 = ember::randn<bf16>(Shape{F}, 13, gpu, 0.0, 0.5);
  const Tensor<bf16> w2 = ember::randn<bf16>(Shape{H, F}, 14, gpu, 0.0, 1.0 / std::sqrt(double(F)));
  const Tensor<bf16> b2 = ember::randn<bf16>(Shape{H}, 15, gpu, 0.0, 0.5);
  const Tensor<bf16> g = ember::randn<bf16>(Shape{M, H}, 16, gpu);
  const ember::Var<bf16> vx = ember::param(x), vw1 = ember::param(w1), vb1 = ember::param(b1),
                         vw2 = ember::param(w2), vb2 = ember::param(b2);
  const auto zero_grads = [&] {
    for (const ember::Var<bf16>& v : {vx, vw1, vb1, vw2, vb2}) v.zero_grad();
  };
  // Six GEMMs of 2 M H F each (two forward, four backward); bytes: the operands and results of
  // the six, once each.
  const double flops = 12.0 * double(M) * double(H) * double(F);
  const double bytes = 2.0 * (6.0 * double(M * H) + 4.0 * double(F * H) + 5.0 * double(M * F));
  const auto act = ember::Activation::gelu_tanh;
  const auto fused = [&] { ember::feed_forward(vx, vw1, vb1, vw2, vb2, act).backward(g); };
  const auto two_linears = [&] {
    ember::linear(ember::linear(vx, vw1, vb1, act), vw2, vb2).backward(g);
  };

  // Check: 16 rows of dx against float64 on the host, dx[i] = sum_f dP[i, f] w1[f, :] with
  // dP[i, f] = (g[i] . w2[:, f]) gelu'(x[i] . w1[f] + b1[f]).
  const std::vector<float> w1h = host_floats(w1), b1h = host_floats(b1), w2h = host_floats(w2);
  std::vector<std::int64_t> is;
  for (int t = 0; t < 16; ++t) is.push_back(t * (M - 1) / 15);
  auto check = [&] {
    double worst = 0;
    for (std::int64_t i : is) {
      const std::vector<float> xi = host_floats(x.narrow(0, i, 1)),
                               gi = host_floats(g.narrow(0, i, 1));
      const std::vector<float> dxi = host_floats(vx.grad().narrow(0, i, 1));
      std::vector<double> want(static_cast<std::size_t>(H), 0.0);
      for (std::int64_t f = 0; f < F; ++f) {
        double pre = b1h[f], dh = 0;
        for (std::int64_t k = 0; k < H; ++k) pre += double(xi[k]) * double(w1h[f * H + k]);
        for (std::int64_t n = 0; n < H; ++n) dh += double(gi[n]) * double(w2h[n * F + f]);
        const double u = 0.79788456080286535588 * (pre + 0.044715 * pre * pre * pre);
        const double t = std::tanh(u);
        const double d = 0.5 * (1 + t) + 0.5 * pre * (1 - t * t) * 0.79788456080286535588 *
                                             (1 + 3 * 0.044715 * pre * pre);
        for (std::int64_t k = 0; k < H; ++k) want[k] += dh * d * double(w1h[f * H + k]);
      }
      double scale = 0;
      for (double v : want) scale = std::max(scale, std::fabs(v));
      for (std::int64_t k = 0; k < H; ++k) {
        worsen(worst, std::fabs(double(dxi[k]) - want[k]) / (1.0 + scale));
      }
    }
    return verdict(worst, 2e-2);
  };
  for (const auto& [impl, run] :
       {std::pair<const char*, std::function<void()>>{"ember_fused", fused},
        {"ember_two_linears", two_linears}}) {
    Record r = time_it("op_ffn_fwdbwd_bf16", shape, impl, bytes, flops, zero_grads, run);
    zero_grads();
    poison(M * H);
    run();
    r.check = check();
    keep(r);
  }
}

// ---------------------------------------------------------------------------------------------
// conv2d, bf16, channels-last input and weight, forward and backward (cuDNN)
#if defined(EMBER_WITH_CUDNN)
struct ConvCase {
  const char* label;
  std::int64_t N, C, H, W, O, K, stride, pad;
  std::int64_t OH() const { return (H + 2 * pad - K) / stride + 1; }
  std::int64_t OW() const { return (W + 2 * pad - K) / stride + 1; }
  std::string name() const {
    return std::string(label) + "_n" + std::to_string(N) + "_c" + std::to_string(C) + "_" +
           std::to_string(H) + "x" + std::to_string(W) + "_o" + std::to_string(O) + "_k" +
           std::to_string(K) + "s" + std::to_string(stride);
  }
};

void run_conv(const ConvCase& cc) {
  const Device gpu = Device::cuda(0);
  const auto cl = ember::MemoryFormat::channels_last;
  const std::int64_t OH = cc.OH(), OW = cc.OW();
  const Tensor<bf16> x = ember::randn<bf16>(Shape{cc.N, cc.C, cc.H, cc.W}, 4, gpu).contiguous(cl);
  const Tensor<bf16> w = ember::randn<bf16>(Shape{cc.O, cc.C, cc.K, cc.K}, 5, gpu, 0.0,
                                            1.0 / std::sqrt(double(cc.C * cc.K * cc.K)))
                             .contiguous(cl);
  const Tensor<bf16> dy = ember::randn<bf16>(Shape{cc.N, cc.O, OH, OW}, 6, gpu).contiguous(cl);
  ember::Conv2dOptions opt;
  opt.stride = {cc.stride, cc.stride};
  opt.padding = {cc.pad, cc.pad};
  const double fwd_flops = 2.0 * double(cc.N * cc.O * OH * OW) * double(cc.C * cc.K * cc.K);
  const double xb = 2.0 * double(x.numel()), wb = 2.0 * double(w.numel()),
               yb = 2.0 * double(cc.N * cc.O * OH * OW);

  // Host copies for the checks: the first and the last image (x, and dy for dx), all of w.
  const std::int64_t imgs[2] = {0, cc.N - 1};
  std::vector<float> xh[2], dyh[2];
  for (int t = 0; t < 2; ++t) {
    xh[t] = host_floats(x.narrow(0, imgs[t], 1));    // [C, H, W] logical order
    dyh[t] = host_floats(dy.narrow(0, imgs[t], 1));  // [O, OH, OW]
  }
  const std::vector<float> wh = host_floats(w);  // [O, C, K, K]
  auto xat = [&](int t, std::int64_t c, std::int64_t h, std::int64_t ww) {
    return double(xh[t][std::size_t((c * cc.H + h) * cc.W + ww)]);
  };
  auto wat = [&](std::int64_t o, std::int64_t c, std::int64_t kh, std::int64_t kw) {
    return double(wh[std::size_t(((o * cc.C + c) * cc.K + kh) * cc.K + kw)]);
  };
  // Errors relative to |want| + 1e-3 sum |terms|: bf16 rounds each output once (2^-9 of |want|),
  // float accumulation adds far less; the second term keeps sums that cancel to near zero from
  // failing, yet an output of zeros fails (|want| is a few percent of sum |terms| for a sum of
  // random terms, more than 1e-3 of it).
  auto rel = [](double got, double want, double mag) {
    return std::fabs(got - want) / (std::fabs(want) + 1e-3 * mag + 1e-30);
  };
  auto check_fwd = [&](const Tensor<bf16>& y) {
    double worst = 0;
    for (int t = 0; t < 2; ++t) {
      const std::vector<float> yh = host_floats(y.narrow(0, imgs[t], 1));  // [O, OH, OW]
      for (int s = 0; s < 128; ++s) {
        const std::int64_t o = (s * 37) % cc.O, oh = (s * 11) % OH, ow = (s * 5 + t) % OW;
        double want = 0, mag = 0;
        for (std::int64_t c = 0; c < cc.C; ++c) {
          for (std::int64_t kh = 0; kh < cc.K; ++kh) {
            const std::int64_t ih = oh * cc.stride - cc.pad + kh;
            if (ih < 0 || ih >= cc.H) continue;
            for (std::int64_t kw = 0; kw < cc.K; ++kw) {
              const std::int64_t iw = ow * cc.stride - cc.pad + kw;
              if (iw < 0 || iw >= cc.W) continue;
              const double p = xat(t, c, ih, iw) * wat(o, c, kh, kw);
              want += p;
              mag += std::fabs(p);
            }
          }
        }
        worsen(worst, rel(yh[std::size_t((o * OH + oh) * OW + ow)], want, mag));
      }
    }
    return verdict(worst, 1e-2);
  };
  // dx at 64 points of the first and of the last image; dw, a sum over the whole batch, at 16
  // entries computed on the host from every image.
  auto check_bwd = [&](const Tensor<bf16>& dx, const Tensor<bf16>& dw) {
    double worst = 0;
    for (int t = 0; t < 2; ++t) {
      const std::vector<float> dxh = host_floats(dx.narrow(0, imgs[t], 1));  // [C, H, W]
      for (int s = 0; s < 64; ++s) {
        const std::int64_t c = (s * 13) % cc.C, h = (s * 7 + t) % cc.H, ww = (s * 3) % cc.W;
        double want = 0, mag = 0;
        for (std::int64_t o = 0; o < cc.O; ++o) {
          for (std::int64_t kh = 0; kh < cc.K; ++kh) {
            const std::int64_t a = h + cc.pad - kh;  // = oh * stride
            if (a < 0 || a % cc.stride || a / cc.stride >= OH) continue;
            for (std::int64_t kw = 0; kw < cc.K; ++kw) {
              const std::int64_t bb = ww + cc.pad - kw;
              if (bb < 0 || bb % cc.stride || bb / cc.stride >= OW) continue;
              const double p =
                  double(dyh[t][std::size_t((o * OH + a / cc.stride) * OW + bb / cc.stride)]) *
                  wat(o, c, kh, kw);
              want += p;
              mag += std::fabs(p);
            }
          }
        }
        worsen(worst, rel(dxh[std::size_t((c * cc.H + h) * cc.W + ww)], want, mag));
      }
    }
    // dw[o, c, kh, kw] = the sum over images and output pixels of dy x, one image at a time.
    const std::vector<float> dwh = host_floats(dw);
    std::vector<double> want(16, 0.0), mag(16, 0.0);
    std::vector<std::int64_t> idx(16);
    for (int e = 0; e < 16; ++e) idx[std::size_t(e)] = (e * 7919) % w.numel();
    for (std::int64_t n = 0; n < cc.N; ++n) {
      const std::vector<float> xn = host_floats(x.narrow(0, n, 1));
      const std::vector<float> dyn = host_floats(dy.narrow(0, n, 1));
      for (int e = 0; e < 16; ++e) {
        const std::int64_t i = idx[std::size_t(e)];
        const std::int64_t kw = i % cc.K, kh = i / cc.K % cc.K, c = i / (cc.K * cc.K) % cc.C,
                           o = i / (cc.K * cc.K * cc.C);
        for (std::int64_t oh = 0; oh < OH; ++oh) {
          const std::int64_t ih = oh * cc.stride - cc.pad + kh;
          if (ih < 0 || ih >= cc.H) continue;
          for (std::int64_t ow = 0; ow < OW; ++ow) {
            const std::int64_t iw = ow * cc.stride - cc.pad + kw;
            if (iw < 0 || iw >= cc.W) continue;
            const double p = double(dyn[std::size_t((o * OH + oh) * OW + ow)]) *
                             double(xn[std::size_t((c * cc.H + ih) * cc.W + iw)]);
            want[std::size_t(e)] += p;
            mag[std::size_t(e)] += std::fabs(p);
          }
        }
      }
    }
    for (int e = 0; e < 16; ++e) {
      const std::size_t k = std::size_t(e);
      worsen(worst, rel(dwh[std::size_t(idx[k])], want[k], mag[k]));
    }
    return verdict(worst, 1e-2);
  };

  Tensor<bf16> y;
  Record r = time_it("op_conv2d_fwd_bf16", cc.name(), "ember", xb + wb + yb, fwd_flops,
                     [&] { y = ember::conv2d(x, w, opt); });
  y = Tensor<bf16>();
  poison(cc.N * cc.O * OH * OW);
  y = ember::conv2d(x, w, opt);
  r.check = y.memory_format() == cl ? check_fwd(y) : "FAIL: output not channels-last";
  keep(r);
  y = Tensor<bf16>();

  std::pair<Tensor<bf16>, Tensor<bf16>> g;
  r = time_it("op_conv2d_bwd_bf16", cc.name(), "ember", xb + wb + 2 * yb, 2 * fwd_flops,
              [&] { g = ember::ops::conv2d_backward(x, w, dy, opt, true, true); });
  g = {};
  poison(x.numel());
  g = ember::ops::conv2d_backward(x, w, dy, opt, true, true);
  r.check = check_bwd(g.first, g.second);
  keep(r);
}
#endif  // EMBER_WITH_CUDNN

// ---------------------------------------------------------------------------------------------
// The device's copy bandwidth over n bf16 elements (read + write)
void run_copy(std::int64_t n) {
  const Device gpu = Device::cuda(0);
  const Tensor<bf16> a = ember::randn<bf16>(Shape{n}, 10, gpu);
  Tensor<bf16> y = ember::empty<bf16>(Shape{n}, gpu);
  keep(time_it("copy_bf16", std::to_string(n), "cuda_memcpy", 4.0 * double(n), 0.0, [&] {
    CK(cudaMemcpyAsync(y.data(), a.data(), std::size_t(n) * sizeof(bf16), cudaMemcpyDeviceToDevice,
                       stream()));
  }));
}

// ---------------------------------------------------------------------------------------------
// softmax and layer_norm over rows, bf16 (float compute)
void run_rows(std::int64_t rows, std::int64_t cols) {
  const Device gpu = Device::cuda(0);
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
  const Tensor<bf16> x = ember::randn<bf16>(Shape{rows, cols}, 7, gpu, 0.0, 2.0);
  const Tensor<bf16> w = ember::rand<bf16>(Shape{cols}, 8, gpu, 0.5, 1.5);
  const Tensor<bf16> b = ember::randn<bf16>(Shape{cols}, 9, gpu, 0.0, 0.1);
  const double bytes = 2.0 * 2.0 * double(rows * cols);
  const std::vector<float> wh = host_floats(w), bh = host_floats(b);

  // 64 rows from both ends and the middle, against float64: softmax's error relative to its
  // value (bf16 keeps 8 bits), layer norm's relative to 1 + |want|.
  auto check = [&](const Tensor<bf16>& y, bool softmax) {
    double worst = 0;
    for (int s = 0; s < 64; ++s) {
      const std::int64_t r = s * (rows - 1) / 63;
      const std::vector<float> xr = host_floats(x.narrow(0, r, 1));
      const std::vector<float> yr = host_floats(y.narrow(0, r, 1));
      std::vector<double> want(static_cast<std::size_t>(cols));
      if (softmax) {
        double m = xr[0], sum = 0;
        for (float v : xr) m = std::max(m, double(v));
        for (float v : xr) sum += std::exp(double(v) - m);
        for (std::int64_t j = 0; j < cols; ++j)
          want[std::size_t(j)] = std::exp(double(xr[std::size_t(j)]) - m) / sum;
      } else {
        double mean = 0, var = 0;
        for (float v : xr) mean += v;
        mean /= double(cols);
        for (float v : xr) var += (v - mean) * (v - mean);
        const double rstd = 1.0 / std::sqrt(var / double(cols) + 1e-5);
        for (std::int64_t j = 0; j < cols; ++j) {
          const std::size_t k = std::size_t(j);
          want[k] = (xr[k] - mean) * rstd * wh[k] + bh[k];
        }
      }
      for (std::size_t k = 0; k < want.size(); ++k) {
        worsen(worst, std::fabs(double(yr[k]) - want[k]) /
                          (softmax ? std::fabs(want[k]) + 1e-30 : 1.0 + std::fabs(want[k])));
      }
    }
    return verdict(worst, 1e-2);
  };

  Tensor<bf16> y;
  Record r =
      time_it("op_softmax_bf16", shape, "ember", bytes, 0.0, [&] { y = ember::softmax(x, 1); });
  y = Tensor<bf16>();
  poison(rows * cols);
  y = ember::softmax(x, 1);
  r.check = check(y, true);
  keep(r);

  r = time_it("op_layernorm_bf16", shape, "ember", bytes + 4.0 * cols, 0.0,
              [&] { y = ember::layer_norm(x, w, b, 1e-5); });
  y = Tensor<bf16>();
  poison(rows * cols);
  y = ember::layer_norm(x, w, b, 1e-5);
  r.check = check(y, false);
  keep(r);

  // add + layer norm: x + r read, the sum and y written. The check normalises x + r with r = 0
  // so the reference above applies: a residual of zeros is added (the same work).
  const Tensor<bf16> zero = ember::zeros<bf16>(Shape{rows, cols}, gpu);
  const double add_bytes = 2.0 * bytes + 4.0 * cols;
  r = time_it("op_add_layernorm_bf16", shape, "ember_fused", add_bytes, 0.0,
              [&] { y = ember::dropout_add_layer_norm(x, zero, w, b, 1e-5); });
  y = Tensor<bf16>();
  poison(rows * cols);
  y = ember::dropout_add_layer_norm(x, zero, w, b, 1e-5);
  r.check = check(y, false);
  keep(r);
  r = time_it("op_add_layernorm_bf16", shape, "ember_unfused", add_bytes, 0.0,
              [&] { y = ember::layer_norm(Tensor<bf16>(x + zero), w, b, 1e-5); });
  y = Tensor<bf16>();
  poison(rows * cols);
  y = ember::layer_norm(Tensor<bf16>(x + zero), w, b, 1e-5);
  r.check = check(y, false);
  keep(r);
}

}  // namespace

int main(int argc, char** argv) {
  return ember_gpu_bench::bench_main(
      argc, argv, "bench_ops_gpu", {.bench = 20, .shape = 34, .impl = 14, .flops = true},
      [](Size size) {
        // GEMMs: 8192^3 (1.1 TFLOP: about 1.5 ms at 700 TFLOP/s) and BERT-base at 4096 tokens.
        if (size == Size::full) {
          run_linear(8192, 8192, 8192);
          run_linear(4096, 3072, 768);
          run_linear(4096, 768, 3072);
          run_linear(4096, 768, 768);
        } else {
          const std::int64_t s = size == Size::quick ? 1024 : 64;
          run_linear(s, s, s);
        }
        // BERT-base's feed-forward block at 4096 tokens (GPT-2's GELU: cuBLASLt's epilogue).
        if (size == Size::tiny) {
          run_ffn(64, 64, 256);
        } else {
          run_ffn(size == Size::quick ? 512 : 4096, 768, 3072);
        }

#if defined(EMBER_WITH_CUDNN)
        // ResNet-50 at batch 256 (about 60 GFLOP per forward for each 3x3 and the stem); tiny:
        // one image at an eighth of the side.
        const std::int64_t n = by_size<std::int64_t>(size, 256, 8, 1);
        const std::int64_t side = size == Size::tiny ? 8 : 1;
        const ConvCase convs[] = {{"stem", n, 3, 224 / side, 224 / side, 64, 7, 2, 3},
                                  {"res2_3x3", n, 64, 56 / side, 56 / side, 64, 3, 1, 1},
                                  {"res3_3x3", n, 128, 28 / side, 28 / side, 128, 3, 1, 1},
                                  {"res4_3x3", n, 256, 14 / side, 14 / side, 256, 3, 1, 1},
                                  {"res5_3x3", n, 512, 7, 7, 512, 3, 1, 1},
                                  {"res2_1x1", n, 64, 56 / side, 56 / side, 256, 1, 1, 0},
                                  {"res4_1x1", n, 1024, 14 / side, 14 / side, 256, 1, 1, 0}};
        for (const ConvCase& cc : convs) run_conv(cc);
#else
        std::printf("conv2d: skipped (built without cuDNN: EMBER_WITH_CUDNN undefined)\n");
#endif

        // BERT-base: attention probabilities [32 x 12 x 128, 128] and hidden states [4096, 768].
        run_copy(by_size<std::int64_t>(size, std::int64_t{1} << 29, std::int64_t{1} << 22,
                                       std::int64_t{1} << 14));
        run_rows(by_size<std::int64_t>(size, 4096 * 12, 1024, 16), 128);
        run_rows(by_size<std::int64_t>(size, 4096, 1024, 16), 768);
      });
}
