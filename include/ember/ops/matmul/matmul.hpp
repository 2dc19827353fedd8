// matmul and linear on Tensors: NumPy matrix products, and the fully connected layer.
//
//   matmul(a, b)            a [..., M, K] x b [..., K, N] -> [..., M, N]; batch dims broadcast;
//                           a 1-D a is a row [1, K] and a 1-D b a column [K, 1], whose unit
//                           dimension is then dropped (1-D x 1-D is a rank-0 dot product)
//   linear(x, w)            x [..., K] x w [N, K]^T -> [..., N] (PyTorch's weight layout)
//   linear(x, w, bias, act) the same + bias [N], then act (none, relu, gelu, gelu_tanh) in the
//                           same pass (on CUDA, cuBLASLt's epilogue; its GELU is the tanh form,
//                           so the exact gelu is a pass after the product there)
//
// Transposed and sliced views are read in place (no copy) wherever the GEMM accepts their
// strides. CPU (ops/matmul/gemm_cpu.hpp): oneDNN's matmul or CBLAS on float and double; bf16 on
// oneDNN's bf16 matmul where the CPU has AVX512-BF16 (float accumulation); elsewhere bf16, and
// half always, are widened to float, multiplied, and rounded once. CUDA: cuBLASLt with float
// accumulation and its epilogues (ops/matmul/matmul_cuda.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/shape.hpp"
#include "../../exec/assign.hpp"
#include "../../exec/generate.hpp"
#include "../../expr/operators.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "gemm_cpu.hpp"
#include "matmul_operands.hpp"
#if defined(EMBER_WITH_CUDA)
#include "matmul_cuda.hpp"
#endif

namespace ember::ops::inline EMBER_UNIT_KIND {

/// out[batch..., M, N] (dense, already allocated) = a b (+ out when accumulate), on the CPU, in
/// float, double or bf16.
/// A batch of small products (attention's, per head) runs one product per OpenMP thread with a
/// single-threaded BLAS: a multi-threaded BLAS would wake and join its own threads for each small
/// product, which costs more than the product (a fifth of a BERT step on two cores). Large
/// products keep the BLAS's threads.
inline constexpr std::int64_t kSerialBlasMaxMacs = std::int64_t{1} << 22;

template <class T>
void matmul_cpu_into(const MatmulOperands<T>& m, const Tensor<T>& out, bool accumulate) {
  const std::int64_t nb = m.batch.numel();
  if (nb > 1 &&
      cpu::gemm_batch<T>(matrix_batch<const T>(m.a, m.batch), matrix_batch<const T>(m.b, m.batch),
                         matrix_batch<T>(out, m.batch), T(1), accumulate ? T(1) : T(0))) {
    return;
  }
  auto product = [&](std::int64_t i) {
    cpu::gemm<T>(batch_matrix<const T>(m.a, m.batch, i), batch_matrix<const T>(m.b, m.batch, i),
                 batch_matrix<T>(out, m.batch, i), T(1), accumulate ? T(1) : T(0));
  };
  if (nb > 1 && m.M * m.N * m.K <= kSerialBlasMaxMacs) {
    const cpu::SerialBlas serial;
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < nb; ++i) product(i);
    return;
  }
  for (std::int64_t i = 0; i < nb; ++i) product(i);
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// The matrix product of a and b with NumPy's rules (see the top of this header).
template <FloatingElement T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b) {
  auto m = ops::matmul_operands(a, b, "matmul");
  Shape full = m.batch;
  full.push_back(m.M);
  full.push_back(m.N);
  const Device device = a.device();
  if (device.is_cuda()) {
#if defined(EMBER_WITH_CUDA)
    Tensor<T> out = empty<T>(full, device);
    ops::cuda::matmul_into(m, out, ops::cuda::Epilogue{});
    return out.view(m.out_shape);
#else
    fail("ember: matmul: a CUDA tensor in a build without CUDA");
#endif
  }
  if constexpr (!std::is_same_v<T, half>) {
    if (!std::is_same_v<T, bf16> || ops::cpu::native_bf16_gemm()) {
      Tensor<T> out = empty<T>(full, device);
      ops::matmul_cpu_into(m, out, false);
      return out.view(m.out_shape);
    }
  }
  // half, and bf16 without a native product: widened to float once, multiplied in float,
  // rounded once.
  const Tensor<float> outf =
      matmul<float>(Tensor<float>(cast<float>(a)), Tensor<float>(cast<float>(b)));
  return Tensor<T>(cast<T>(outf));
}
}  // namespace ember::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// linear's argument checks: w [N, K], x [..., K], bias undefined or [N].
template <Storable T>
void check_linear_args(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>& bias) {
  EMBER_CHECK(w.defined() && w.rank() == 2, "ember: linear: weight must be [out, in], got ",
              w.defined() ? w.shape().str() : std::string("undefined"));
  EMBER_CHECK(x.defined() && x.rank() >= 1 && x.size(-1) == w.size(1), "ember: linear: input ",
              x.defined() ? x.shape().str() : std::string("undefined"), " does not end in ",
              w.size(1), " features (weight ", w.shape().str(), ")");
  EMBER_CHECK(!bias.defined() || bias.shape() == Shape{w.size(0)}, "ember: linear: bias ",
              bias.defined() ? bias.shape().str() : std::string(), " for ", w.size(0),
              " output features");
  EMBER_CHECK(!bias.defined() || bias.device() == w.device(), "ember: linear: bias on ",
              bias.defined() ? bias.device().str() : std::string(), ", weight on ",
              w.device().str());
}

/// linear(x, w, bias, act) on the CPU as one oneDNN matmul with the bias, and ReLU, in its
/// epilogue (GELU, either form, is left to the caller: a pass of ember's, to the same bits as
/// everywhere else), for float, and bf16 where the CPU multiplies it natively. Undefined, with
/// nothing done, where there is nothing to fuse (no bias, no ReLU) or oneDNN does not take the
/// product: not built with it, not enabled, inside an OpenMP region, a product small enough for
/// the BLAS, or strides oneDNN reads only with its reference kernel.
template <FloatingElement T>
Tensor<T> linear_on_onednn([[maybe_unused]] const Tensor<T>& x, [[maybe_unused]] const Tensor<T>& w,
                           [[maybe_unused]] const Tensor<T>& bias,
                           [[maybe_unused]] Activation act) {
#if defined(EMBER_WITH_DNNL)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16>) {
    const bool relu = act == Activation::relu;
    const std::int64_t N = w.size(0), K = w.size(1), rows = K > 0 ? x.numel() / K : 0;
    if ((!bias.defined() && !relu) || (std::is_same_v<T, bf16> && !cpu::native_bf16_gemm()) ||
        !onednn::gemm_enabled() || rows * N * K < (std::int64_t{1} << 15)) {
      return {};
    }
#if defined(EMBER_OPENMP)
    if (omp_in_parallel()) return {};
#endif
    const Tensor<T> x2 = x.reshape(Shape{rows, K});
    const Tensor<T> b = bias.defined() ? bias.contiguous() : Tensor<T>();
    Tensor<T> y = empty<T>(Shape{rows, N}, x.device());
    const MatrixView<const T> A{x2.data(), rows, K, x2.stride(0), x2.stride(1)};
    const MatrixView<const T> B{w.data(), K, N, w.stride(1), w.stride(0)};  // w transposed
    const MatrixView<T> C{y.data(), rows, N, N, 1};
    if (!onednn::gemm<T>(MatrixBatch<const T>{A}, MatrixBatch<const T>{B}, MatrixBatch<T>{C}, 1.0f,
                         0.0f, {.bias = bias.defined(), .relu = relu},
                         bias.defined() ? b.data() : nullptr)) {
      return {};
    }
    exec::count_launch();
    Shape shape = x.shape();
    shape[shape.rank() - 1] = N;
    return y.view(shape);
  }
#endif
  return {};
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// x [..., K] times w [N, K] transposed, plus bias [N] (optional, undefined for none), then
/// `act`: PyTorch's linear, with the bias and activation fused into the product where the
/// device allows (cuBLASLt epilogues; one pass after the GEMM on the CPU).
template <FloatingElement T>
Tensor<T> linear(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>& bias = Tensor<T>(),
                 Activation act = Activation::none) {
  ops::check_linear_args(x, w, bias);
  if (x.device().is_cuda()) {
#if defined(EMBER_WITH_CUDA)
    // cuBLASLt's GELU epilogue is the tanh form: the exact GELU is one pass after the product.
    if (act != Activation::gelu) return ops::cuda::linear(x, w, bias, act);
    return Tensor<T>(gelu(ops::cuda::linear(x, w, bias, Activation::none)));
#else
    fail("ember: linear: a CUDA tensor in a build without CUDA");
#endif
  }
  if (Tensor<T> y = ops::linear_on_onednn<T>(x, w, bias, act); y.defined()) {
    if (act == Activation::gelu) y = gelu(y);
    if (act == Activation::gelu_tanh) y = gelu_tanh(y);
    return y;
  }
  if constexpr (!std::is_same_v<acc_t<T>, T>) {
    // bf16 and half: the product stays in float until the bias and the activation are applied,
    // so the result is rounded once, as PyTorch's addmm and oneDNN's epilogue round it (rounding
    // the product first moved a ReLU's kink: a test against PyTorch caught it).
    if (bias.defined() || act != Activation::none) {
      using A = acc_t<T>;
      const Tensor<A> ba = bias.defined() ? Tensor<A>(cast<A>(bias)) : Tensor<A>();
      return Tensor<T>(cast<T>(linear<A>(Tensor<A>(cast<A>(x)), Tensor<A>(cast<A>(w)), ba, act)));
    }
  }
  Tensor<T> y = matmul<T>(x, w.t());
  // One pass over y for the bias and the activation.
  const auto finish = [&](const auto& pre) {
    switch (act) {
      case Activation::none:
        y = pre;
        break;
      case Activation::relu:
        y = relu(pre);
        break;
      case Activation::gelu:
        y = gelu(pre);
        break;
      case Activation::gelu_tanh:
        y = gelu_tanh(pre);
        break;
    }
  };
  if (bias.defined()) {
    finish(y + bias);
  } else if (act != Activation::none) {
    finish(y * 1.0);
  }
  return y;
}
}  // namespace ember::inline EMBER_UNIT_KIND
