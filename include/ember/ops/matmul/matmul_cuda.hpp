// Matrix products on CUDA through cuBLASLt: float accumulation for bf16, half and float (double
// in double), strided batches, and the epilogues that fuse a bias and ReLU/GELU into the GEMM.
//
// cuBLASLt is column-major; ember's matrices are row-major. A row-major C = A B is the
// column-major C^T = B^T A^T, so ember hands cuBLASLt B as its first operand and A as its
// second, each with the transpose flag that its strides call for (a transposed view is read in
// place). The handle and a workspace are created once per device; heuristics are asked per
// call (cheap next to a GEMM large enough to matter). Host code only: any translation unit of a
// CUDA build may call it.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "../../core/bf16.hpp"
#include "../../core/cuda.hpp"
#include "../../core/error.hpp"
#include "../../core/half.hpp"
#include "../../exec/launch_counter.hpp"
#include "../../memory/cuda_pool.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "matmul_operands.hpp"

namespace ember::ops::cuda::inline EMBER_UNIT_KIND {

inline void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    fail("ember: cuBLASLt ", what, " failed: ", cublasLtGetStatusName(status), " (",
         cublasLtGetStatusString(status), ")");
  }
}

/// What cuBLASLt applies to the product before storing it.
struct Epilogue {
  const void* bias = nullptr;  // [N], the output's type
  bool relu = false;
  bool gelu = false;
  // With relu or gelu: receives what their backward reads (see activation_aux_ld): GELU's
  // pre-activation ([rows, N], the output's type) or ReLU's sign bits ([rows,
  // relu_mask_row_bytes(N)] bytes, bit n of row r set where the pre-activation was positive).
  void* aux = nullptr;
  // The backward of an activation applied to this product's output by an earlier linear: the
  // product is multiplied by relu' or gelu' read from that linear's aux (`grad_aux`).
  bool relu_grad = false;
  bool gelu_grad = false;
  const void* grad_aux = nullptr;
  // With relu_grad or gelu_grad: [N], the output's type: receives the output's column sums (the
  // earlier linear's bias gradient: cuBLASLt's DRELU_BGRAD / DGELU_BGRAD).
  void* out_col_sums = nullptr;
  // [M], the output's type: receives the sums of a over K (a linear's bias gradient, computed
  // by the weight gradient's GEMM: cuBLASLt's BGRADB, a being its second operand). Not with
  // the others.
  void* a_row_sums = nullptr;
};

/// Bytes per row of ReLU's sign bits for N outputs: cuBLASLt wants the bit matrix's leading
/// dimension a multiple of 128 bits.
constexpr std::int64_t relu_mask_row_bytes(std::int64_t N) { return (N + 127) / 128 * 128 / 8; }

/// The leading dimension cuBLASLt reads and writes an activation's aux with, in its elements
/// (ReLU: bits): GELU's pre-activation is dense, ReLU's bits are padded to 128.
inline std::int64_t activation_aux_ld(bool relu, std::int64_t N) {
  return relu ? relu_mask_row_bytes(N) * 8 : N;
}

/// Whether cuBLASLt can keep an activation's aux for N outputs: GELU's pre-activation wants a
/// leading dimension that is a multiple of 8; ReLU's bits are padded to fit.
inline bool activation_aux_supported(Activation act, std::int64_t N) {
  return act == Activation::relu || (act == Activation::gelu_tanh && N % 8 == 0);
}

inline constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

/// One handle and one workspace per device, made on first use and kept for the process.
struct DeviceContext {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};
inline DeviceContext& device_context(int index) {
  static std::array<DeviceContext, ember::cuda::detail::kMaxDevices> contexts{};
  static std::array<std::once_flag, ember::cuda::detail::kMaxDevices> once;
  std::call_once(once[static_cast<std::size_t>(index)], [index] {
    ember::cuda::DeviceGuard guard(index);
    DeviceContext& c = contexts[static_cast<std::size_t>(index)];
    check_lt(cublasLtCreate(&c.handle), "cublasLtCreate");
    ember::cuda::check(cudaMalloc(&c.workspace, kWorkspaceBytes),
                       "cudaMalloc (cuBLASLt workspace)");
  });
  return contexts[static_cast<std::size_t>(index)];
}

template <class T>
constexpr cudaDataType_t data_type() {
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  if constexpr (std::is_same_v<T, double>) return CUDA_R_64F;
  if constexpr (std::is_same_v<T, bf16>) return CUDA_R_16BF;
  if constexpr (std::is_same_v<T, half>) return CUDA_R_16F;
}

/// RAII owners of the cuBLASLt descriptors of one call.
struct MatmulDesc {
  cublasLtMatmulDesc_t d = nullptr;
  ~MatmulDesc() {
    if (d) cublasLtMatmulDescDestroy(d);
  }
  template <class V>
  void set(cublasLtMatmulDescAttributes_t attr, const V& v) {
    check_lt(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)), "MatmulDescSetAttribute");
  }
};
struct Layout {
  cublasLtMatrixLayout_t l = nullptr;
  ~Layout() {
    if (l) cublasLtMatrixLayoutDestroy(l);
  }
  template <class V>
  void set(cublasLtMatrixLayoutAttribute_t attr, const V& v) {
    check_lt(cublasLtMatrixLayoutSetAttribute(l, attr, &v, sizeof(v)), "MatrixLayoutSetAttribute");
  }
};
struct Preference {
  cublasLtMatmulPreference_t p = nullptr;
  ~Preference() {
    if (p) cublasLtMatmulPreferenceDestroy(p);
  }
};

/// A row-major [rows, cols] matrix with strides (rs, cs) as a column-major operand of the
/// transposed matrix: returns whether cuBLASLt must transpose it, and its leading dimension.
/// False when neither stride is 1 (the caller copies first).
inline bool column_major_operand(std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                 std::int64_t cs, bool& trans, std::int64_t& ld) {
  // Read as column-major, row-major memory [rows, cols] is the matrix^T [cols, rows] with ld rs.
  if (cs == 1 || cols == 1) {
    trans = false;
    ld = rows == 1 ? std::max<std::int64_t>(cols, 1) : rs;
    return ld >= std::max<std::int64_t>(cols, 1);
  }
  if (rs == 1 || rows == 1) {
    trans = true;
    ld = cols == 1 ? std::max<std::int64_t>(rows, 1) : cs;
    return ld >= std::max<std::int64_t>(rows, 1);
  }
  return false;
}

/// The batch of an operand as one strided dimension: its stride, or false when the batch dims
/// do not collapse to one stride (the caller loops over the batch instead).
template <Storable T>
bool single_batch_stride(const Tensor<T>& t, const Shape& batch, std::int64_t& stride) {
  stride = 0;
  bool first = true;
  std::int64_t expect = 0;
  for (int d = batch.rank() - 1; d >= 0; --d) {
    if (batch[d] == 1) continue;
    const std::int64_t s = t.stride(d);
    if (first) {
      stride = s;
      expect = s * batch[d];
      first = false;
    } else {
      if (s != expect) return false;
      expect = s * batch[d];
    }
  }
  return true;
}

/// D = a b for `count` matrices: a, b, d point at the first; strides between matrices given.
/// Returns false, having run nothing, only when cuBLASLt has no algorithm for a backward epilogue
/// (row sums, an activation's gradient: the caller computes them apart); any other failure
/// throws.
template <Storable T>
bool lt_matmul(int device, const T* a, std::int64_t a_rs, std::int64_t a_cs, std::int64_t a_batch,
               const T* b, std::int64_t b_rs, std::int64_t b_cs, std::int64_t b_batch, T* d,
               std::int64_t d_rs, std::int64_t d_batch, std::int64_t M, std::int64_t N,
               std::int64_t K, std::int64_t count, bool accumulate, const Epilogue& ep) {
  DeviceContext& ctx = device_context(device);
  constexpr bool is_double = std::is_same_v<T, double>;
  using Scale = std::conditional_t<is_double, double, float>;
  const cublasComputeType_t compute = is_double ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const cudaDataType_t scale_type = is_double ? CUDA_R_64F : CUDA_R_32F;
  const cudaDataType_t type = data_type<T>();

  // Column-major: first operand = b^T [N, K], second = a^T [K, M], D = d^T [N, M].
  bool tb = false, ta = false;
  std::int64_t ldb = 0, lda = 0;
  EMBER_CHECK(column_major_operand(K, N, b_rs, b_cs, tb, ldb) &&
                  column_major_operand(M, K, a_rs, a_cs, ta, lda),
              "ember: internal: matmul operand strides not readable by cuBLASLt");
  MatmulDesc op;
  check_lt(cublasLtMatmulDescCreate(&op.d, compute, scale_type), "MatmulDescCreate");
  const cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  op.set(CUBLASLT_MATMUL_DESC_TRANSA, opb);
  op.set(CUBLASLT_MATMUL_DESC_TRANSB, opa);
  const bool act_grad = ep.relu_grad || ep.gelu_grad;
  EMBER_CHECK(!ep.a_row_sums || (!ep.bias && !ep.relu && !ep.gelu && !act_grad),
              "ember: internal: a row-sums epilogue combined with another");
  EMBER_CHECK(!act_grad || (ep.grad_aux && !ep.bias && !ep.relu && !ep.gelu),
              "ember: internal: an activation-gradient epilogue needs its aux, and nothing else");
  EMBER_CHECK(!ep.out_col_sums || act_grad,
              "ember: internal: column sums come with an activation gradient");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (ep.gelu) {
    epi = ep.aux ? (ep.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX)
                 : (ep.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU);
  } else if (ep.relu) {
    epi = ep.aux ? (ep.bias ? CUBLASLT_EPILOGUE_RELU_AUX_BIAS : CUBLASLT_EPILOGUE_RELU_AUX)
                 : (ep.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU);
  } else if (ep.bias) {
    epi = CUBLASLT_EPILOGUE_BIAS;
  } else if (ep.gelu_grad) {
    epi = ep.out_col_sums ? CUBLASLT_EPILOGUE_DGELU_BGRAD : CUBLASLT_EPILOGUE_DGELU;
  } else if (ep.relu_grad) {
    epi = ep.out_col_sums ? CUBLASLT_EPILOGUE_DRELU_BGRAD : CUBLASLT_EPILOGUE_DRELU;
  } else if (ep.a_row_sums) {
    epi = CUBLASLT_EPILOGUE_BGRADB;  // reduces cuBLASLt's second operand (ember's a) over k
  }
  op.set(CUBLASLT_MATMUL_DESC_EPILOGUE, epi);
  if (ep.bias) op.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, ep.bias);
  if (ep.a_row_sums) op.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, ep.a_row_sums);
  if (ep.out_col_sums) op.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, ep.out_col_sums);
  if ((ep.relu || ep.gelu) && ep.aux) {
    op.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, ep.aux);
    op.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, activation_aux_ld(ep.relu, N));
  }
  if (act_grad) {
    op.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, ep.grad_aux);
    op.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, activation_aux_ld(ep.relu_grad, N));
  }

  // Row counts/columns of the stored (column-major) matrices.
  Layout lb, la, ld;
  check_lt(cublasLtMatrixLayoutCreate(&lb.l, type, tb ? K : N, tb ? N : K, ldb), "LayoutCreate");
  check_lt(cublasLtMatrixLayoutCreate(&la.l, type, ta ? M : K, ta ? K : M, lda), "LayoutCreate");
  check_lt(cublasLtMatrixLayoutCreate(&ld.l, type, N, M, d_rs), "LayoutCreate");
  if (count > 1) {
    const auto n = static_cast<std::int32_t>(count);
    for (Layout* l : {&lb, &la, &ld}) l->set(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, n);
    lb.set(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, b_batch);
    la.set(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, a_batch);
    ld.set(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, d_batch);
  }

  Preference pref;
  check_lt(cublasLtMatmulPreferenceCreate(&pref.p), "PreferenceCreate");
  const std::uint64_t ws = kWorkspaceBytes;
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &ws, sizeof(ws)),
           "PreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  check_lt(cublasLtMatmulAlgoGetHeuristic(ctx.handle, op.d, lb.l, la.l, ld.l, ld.l, pref.p, 1,
                                          &result, &found),
           "MatmulAlgoGetHeuristic");
  // The backward epilogues are optional: the caller has a plain path.
  if (found == 0 && (ep.a_row_sums || act_grad)) return false;
  EMBER_CHECK(found > 0, "ember: cuBLASLt has no algorithm for this matmul ([", M, ", ", K, "] x [",
              K, ", ", N, "], batch ", count, ")");
  const Scale alpha = 1, beta = accumulate ? 1 : 0;
  ember::cuda::DeviceGuard guard(device);
  exec::count_launch();
  check_lt(cublasLtMatmul(ctx.handle, op.d, &alpha, b, lb.l, a, la.l, &beta, d, ld.l, d, ld.l,
                          &result.algo, ctx.workspace, kWorkspaceBytes,
                          ember::cuda::current_stream(device)),
           "Matmul");
  return true;
}

/// out[batch..., M, N] (dense) = m.a m.b (+ out when accumulate), with the epilogue. Returns
/// false, having run nothing, only when cuBLASLt has no algorithm for a backward epilogue.
template <Storable T>
bool matmul_into(const MatmulOperands<T>& m, const Tensor<T>& out, const Epilogue& ep,
                 bool accumulate = false) {
  static_assert(FloatingElement<T>, "ember: matmul on CUDA takes float, double, bf16 or half");
  const int device = out.device().index();
  Tensor<T> a = m.a, b = m.b;
  const int ra = a.rank(), rb = b.rank();
  bool t = false;
  std::int64_t ld = 0;
  // An operand with no unit stride in its matrix dims is copied dense first.
  if (!column_major_operand(m.M, m.K, a.stride(ra - 2), a.stride(ra - 1), t, ld)) a = a.clone();
  if (!column_major_operand(m.K, m.N, b.stride(rb - 2), b.stride(rb - 1), t, ld)) b = b.clone();
  const std::int64_t nb = m.batch.numel();
  EMBER_CHECK(!ep.a_row_sums || (nb == 1 && m.K > 0),
              "ember: internal: row sums need one product with a nonempty inner dimension");
  EMBER_CHECK(nb == 1 || (!ep.aux && !ep.grad_aux),
              "ember: internal: an activation's aux belongs to one product");
  if (nb == 0 || m.M == 0 || m.N == 0) return true;
  std::int64_t sa = 0, sb = 0, sd = 0;
  const bool one_stride = single_batch_stride(a, m.batch, sa) &&
                          single_batch_stride(b, m.batch, sb) &&
                          single_batch_stride(out, m.batch, sd);
  const auto run = [&](const T* pa, const T* pb, T* pd, std::int64_t count) {
    return lt_matmul<T>(device, pa, a.stride(ra - 2), a.stride(ra - 1), sa, pb, b.stride(rb - 2),
                        b.stride(rb - 1), sb, pd, out.stride(out.rank() - 2), sd, m.M, m.N, m.K,
                        count, accumulate, ep);
  };
  if (one_stride || nb == 1) return run(a.data(), b.data(), out.data(), nb);
  // Batch dims that do not collapse: one call per matrix.
  for (std::int64_t i = 0; i < nb; ++i) {
    std::int64_t oa = 0, ob = 0, od = 0, r = i;
    for (int d = m.batch.rank() - 1; d >= 0; --d) {
      const std::int64_t c = r % m.batch[d];
      r /= m.batch[d];
      oa += c * a.stride(d);
      ob += c * b.stride(d);
      od += c * out.stride(d);
    }
    run(a.data() + oa, b.data() + ob, out.data() + od, 1);
  }
  return true;
}

/// linear on CUDA: x [..., K] as [rows, K] times w [N, K]^T (read transposed in place), with the
/// bias and activation in cuBLASLt's epilogue. `aux`, when given, receives what the activation's
/// backward epilogue reads (Epilogue::aux: GELU's pre-activation, [rows, N] of T, or ReLU's
/// sign bits, [rows, relu_mask_row_bytes(N)] bytes; see activation_aux_supported).
template <Storable T>
Tensor<T> linear(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>& bias, Activation act,
                 void* aux = nullptr) {
  const std::int64_t K = w.size(1), N = w.size(0);
  const Tensor<T> x2 = x.reshape(Shape{x.numel() / std::max<std::int64_t>(K, 1), K});
  Shape out_shape = x.shape();
  out_shape[out_shape.rank() - 1] = N;
  Tensor<T> out = empty<T>(Shape{x2.size(0), N}, x.device());
  Epilogue ep;
  ep.bias = bias.defined() ? bias.data() : nullptr;
  ep.relu = act == Activation::relu;
  ep.gelu = act == Activation::gelu_tanh;  // cuBLASLt's GELU is the tanh approximation
  EMBER_CHECK(act != Activation::gelu,
              "ember: internal: the exact GELU is not a cuBLASLt epilogue");
  EMBER_CHECK(!aux || activation_aux_supported(act, N),
              "ember: internal: no activation aux for this linear");
  ep.aux = aux;
  matmul_into(matmul_operands(x2, w.t(), "linear"), out, ep);
  return out.view(out_shape);
}

/// dP = (dY W) * act'(P) for a linear(act) (pre-activation P [rows, N1]) whose output fed a
/// linear with weight W [N2, N1] and output gradient dY [rows, N2]: one GEMM whose epilogue
/// (cuBLASLt's DRELU / DGELU) reads the aux that the first linear's forward kept (`act` relu or
/// gelu_tanh). db [N1], when defined, receives the column sums of dP (the first linear's bias
/// gradient: DRELU_BGRAD / DGELU_BGRAD) from the same call. Returns false, having written
/// nothing, when cuBLASLt has no algorithm for it (the caller multiplies by act' apart).
template <Storable T>
bool activation_input_grad(const Tensor<T>& dy, const Tensor<T>& w, Activation act, const void* aux,
                           const Tensor<T>& dp, const Tensor<T>& db) {
  EMBER_CHECK(dy.rank() == 2 && w.rank() == 2 && dy.size(1) == w.size(0) &&
                  dp.shape() == Shape({dy.size(0), w.size(1)}) &&
                  (!db.defined() || db.shape() == Shape{w.size(1)}) && aux &&
                  activation_aux_supported(act, w.size(1)),
              "ember: internal: activation_input_grad shapes");
  if (dy.size(0) == 0 || w.size(0) == 0) return false;  // nothing for a GEMM to reduce
  Epilogue ep;
  ep.relu_grad = act == Activation::relu;
  ep.gelu_grad = act == Activation::gelu_tanh;
  ep.grad_aux = aux;
  ep.out_col_sums = db.defined() ? db.data() : nullptr;
  return matmul_into(matmul_operands(dy, w, "linear backward"), dp, ep);
}

/// The weight and bias gradients of linear in one GEMM: dW = dP^T X ([N, K]) with db = the
/// column sums of dP ([N]) from the same call (cuBLASLt's BGRADB epilogue), for dP [rows, N]
/// and X [rows, K], rows > 0. Returns false, having written nothing, when cuBLASLt has no
/// algorithm for the epilogue on these operands (the caller sums dP apart).
template <Storable T>
bool linear_weight_and_bias_grad(const Tensor<T>& dp, const Tensor<T>& x, const Tensor<T>& dw,
                                 const Tensor<T>& db) {
  EMBER_CHECK(dp.rank() == 2 && x.rank() == 2 && dp.size(0) == x.size(0) && dp.size(0) > 0 &&
                  dw.shape() == Shape({dp.size(1), x.size(1)}) && db.shape() == Shape{dp.size(1)},
              "ember: internal: linear_weight_and_bias_grad shapes");
  Epilogue ep;
  ep.a_row_sums = db.data();
  return matmul_into(matmul_operands(dp.t(), x, "linear backward"), dw, ep);
}
}  // namespace ember::ops::cuda::inline EMBER_UNIT_KIND
