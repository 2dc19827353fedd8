// cuBLASLt's matmul on the emulated device: the calls ember makes, with cuBLASLt's meaning
// (column-major layouts, transposes, strided batches, alpha and beta, and the epilogues: bias,
// ReLU and tanh-GELU with their aux outputs, their gradients DRELU/DGELU with the bias gradient,
// and BGRADB), computed on the CPU by a plain loop when the stream reaches the call. It is a
// substitute, not an emulation of NVIDIA's kernels: it proves that ember describes its products
// to cuBLASLt correctly, not how fast or in which order cuBLASLt adds.
//
// Products accumulate in float (double for CUBLAS_COMPUTE_64F); the epilogue works on the
// accumulated value, and the result is rounded once to the output's type.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "../core/bf16.hpp"
#include "../core/half.hpp"
#include "runtime_api.hpp"

enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
using cudaDataType = cudaDataType_t;

enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };

enum cublasLtEpilogue_t {
  CUBLASLT_EPILOGUE_DEFAULT = 1,
  CUBLASLT_EPILOGUE_RELU = 2,
  CUBLASLT_EPILOGUE_RELU_AUX = 2 | 128,
  CUBLASLT_EPILOGUE_BIAS = 4,
  CUBLASLT_EPILOGUE_RELU_BIAS = 2 | 4,
  CUBLASLT_EPILOGUE_RELU_AUX_BIAS = 2 | 4 | 128,
  CUBLASLT_EPILOGUE_DRELU = 8 | 128,
  CUBLASLT_EPILOGUE_DRELU_BGRAD = 8 | 16 | 128,
  CUBLASLT_EPILOGUE_GELU = 32,
  CUBLASLT_EPILOGUE_GELU_AUX = 32 | 128,
  CUBLASLT_EPILOGUE_GELU_BIAS = 32 | 4,
  CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 32 | 4 | 128,
  CUBLASLT_EPILOGUE_DGELU = 64 | 128,
  CUBLASLT_EPILOGUE_DGELU_BGRAD = 64 | 16 | 128,
  CUBLASLT_EPILOGUE_BGRADA = 256,
  CUBLASLT_EPILOGUE_BGRADB = 512,
};

enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 10,
  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 11,
};
enum cublasLtMatrixLayoutAttribute_t {
  CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,
  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,
};
enum cublasLtMatmulPreferenceAttributes_t { CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1 };

struct cublasLtContext {
  int device;
};
struct cublasLtMatmulDescOpaque_t {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  void* aux = nullptr;
  std::int64_t aux_ld = 0;
};
struct cublasLtMatrixLayoutOpaque_t {
  cudaDataType_t type;
  std::uint64_t rows, cols;
  std::int64_t ld;
  std::int32_t batch = 1;
  std::int64_t batch_stride = 0;
};
struct cublasLtMatmulPreferenceOpaque_t {
  std::uint64_t workspace = 0;
};
struct cublasLtMatmulAlgo_t {
  std::uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  std::size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};
using cublasLtHandle_t = cublasLtContext*;
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque_t*;
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque_t*;
using cublasLtMatmulPreference_t = cublasLtMatmulPreferenceOpaque_t*;

inline const char* cublasLtGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
inline const char* cublasLtGetStatusString(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? "success" : "failed (emulated cuBLASLt)";
}

inline cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  *h = new cublasLtContext{ember::emulated::current_device()};
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t c,
                                               cudaDataType_t scale) {
  *d = new cublasLtMatmulDescOpaque_t{c, scale};
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}

namespace ember::emulated {
template <class V>
bool read_attribute(V& out, const void* buf, std::size_t size) {
  if (size != sizeof(V)) return false;
  std::memcpy(&out, buf, sizeof(V));
  return true;
}
}  // namespace ember::emulated

inline cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                                     cublasLtMatmulDescAttributes_t attr,
                                                     const void* buf, std::size_t size) {
  using ember::emulated::read_attribute;
  bool ok = false;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
      ok = read_attribute(d->trans_a, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_TRANSB:
      ok = read_attribute(d->trans_b, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      ok = read_attribute(d->epilogue, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      ok = read_attribute(d->bias, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
      ok = read_attribute(d->aux, buf, size);
      break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
      ok = read_attribute(d->aux_ld, buf, size);
      break;
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

inline cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType_t type,
                                                 std::uint64_t rows, std::uint64_t cols,
                                                 std::int64_t ld) {
  if (ld < static_cast<std::int64_t>(rows)) return CUBLAS_STATUS_INVALID_VALUE;
  *l = new cublasLtMatrixLayoutOpaque_t{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete l;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                       cublasLtMatrixLayoutAttribute_t attr,
                                                       const void* buf, std::size_t size) {
  using ember::emulated::read_attribute;
  const bool ok = attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
                      ? read_attribute(l->batch, buf, size)
                      : read_attribute(l->batch_stride, buf, size);
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

inline cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  *p = new cublasLtMatmulPreferenceOpaque_t{};
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                           cublasLtMatmulPreferenceAttributes_t,
                                                           const void* buf, std::size_t size) {
  return ember::emulated::read_attribute(p->workspace, buf, size) ? CUBLAS_STATUS_SUCCESS
                                                                  : CUBLAS_STATUS_INVALID_VALUE;
}

namespace ember::emulated {

/// Whether the substitute computes this product: the types ember uses, one type for A, B, C
/// and D, operand shapes that agree.
inline bool lt_supported(const cublasLtMatmulDescOpaque_t& op,
                         const cublasLtMatrixLayoutOpaque_t& a,
                         const cublasLtMatrixLayoutOpaque_t& b,
                         const cublasLtMatrixLayoutOpaque_t& d) {
  const bool t_a = op.trans_a == CUBLAS_OP_T, t_b = op.trans_b == CUBLAS_OP_T;
  const std::uint64_t m = t_a ? a.cols : a.rows, k = t_a ? a.rows : a.cols;
  const std::uint64_t kb = t_b ? b.cols : b.rows, n = t_b ? b.rows : b.cols;
  const bool is_double = op.compute == CUBLAS_COMPUTE_64F;
  return a.type == b.type && a.type == d.type && k == kb && d.rows == m && d.cols == n &&
         (a.type == CUDA_R_64F) == is_double && a.batch == b.batch && a.batch == d.batch;
}

template <class T>
double load(const void* p, std::int64_t i) {
  return static_cast<double>(static_cast<const T*>(p)[i]);
}
template <class T>
void store(void* p, std::int64_t i, double v) {
  if constexpr (std::is_same_v<T, double>) {
    static_cast<T*>(p)[i] = v;
  } else {
    static_cast<T*>(p)[i] = T(static_cast<float>(v));
  }
}

inline double gelu_tanh(double x) {
  const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}
inline double gelu_tanh_grad(double x) {
  const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  const double t = std::tanh(u);
  return 0.5 * (1.0 + t) +
         0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3 * 0.044715 * x * x);
}

/// D = alpha op(A) op(B) + beta C, then the epilogue, for every matrix of the batch. T is the
/// storage type, Acc the accumulation's (float, or double for double).
template <class T, class Acc>
void lt_compute(const cublasLtMatmulDescOpaque_t& op, Acc alpha, Acc beta, const void* A,
                const cublasLtMatrixLayoutOpaque_t& la, const void* B,
                const cublasLtMatrixLayoutOpaque_t& lb, const void* C,
                const cublasLtMatrixLayoutOpaque_t& lc, void* D,
                const cublasLtMatrixLayoutOpaque_t& ld) {
  const bool t_a = op.trans_a == CUBLAS_OP_T, t_b = op.trans_b == CUBLAS_OP_T;
  const auto m = static_cast<std::int64_t>(ld.rows), n = static_cast<std::int64_t>(ld.cols);
  const auto k = static_cast<std::int64_t>(t_a ? la.rows : la.cols);
  const int e = op.epilogue;
  const bool bias = e & 4, relu = e & 2, gelu = e & 32, aux_out = (e & 128) && (relu || gelu);
  const bool drelu = e & 8, dgelu = e & 64, bgrad = e & 16, bgradb = e & 512;
  std::vector<Acc> column_sums(bgrad ? static_cast<std::size_t>(m) : 0, Acc(0));
  for (std::int32_t batch = 0; batch < ld.batch; ++batch) {
    const std::int64_t oa = batch * la.batch_stride, ob = batch * lb.batch_stride;
    const std::int64_t oc = batch * lc.batch_stride, od = batch * ld.batch_stride;
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < m; ++i) {
        Acc acc = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const Acc x = static_cast<Acc>(load<T>(A, oa + (t_a ? p + i * la.ld : i + p * la.ld)));
          const Acc y = static_cast<Acc>(load<T>(B, ob + (t_b ? j + p * lb.ld : p + j * lb.ld)));
          acc += x * y;
        }
        Acc v = alpha * acc;
        if (beta != Acc(0)) v += beta * static_cast<Acc>(load<T>(C, oc + i + j * lc.ld));
        if (bias) v += static_cast<Acc>(load<T>(op.bias, i));
        if (aux_out && gelu) store<T>(op.aux, i + j * op.aux_ld, v);
        if (aux_out && relu) {
          auto* bits = static_cast<std::uint8_t*>(op.aux);
          const std::int64_t bit = i + j * op.aux_ld;
          const auto mask = static_cast<std::uint8_t>(1u << (bit % 8));
          bits[bit / 8] =
              static_cast<std::uint8_t>(v > 0 ? bits[bit / 8] | mask : bits[bit / 8] & ~mask);
        }
        if (relu) v = v > 0 ? v : Acc(0);
        if (gelu) v = static_cast<Acc>(gelu_tanh(v));
        if (drelu) {
          const auto* bits = static_cast<const std::uint8_t*>(op.aux);
          const std::int64_t bit = i + j * op.aux_ld;
          if (((bits[bit / 8] >> (bit % 8)) & 1u) == 0) v = 0;
        }
        if (dgelu) v *= static_cast<Acc>(gelu_tanh_grad(load<T>(op.aux, i + j * op.aux_ld)));
        if (bgrad) column_sums[static_cast<std::size_t>(i)] += v;
        store<T>(D, od + i + j * ld.ld, v);
      }
    }
    if (bgradb) {  // sums of op(B) over k: one per column of D
      for (std::int64_t j = 0; j < n; ++j) {
        Acc s = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          s += static_cast<Acc>(load<T>(B, ob + (t_b ? j + p * lb.ld : p + j * lb.ld)));
        }
        store<T>(const_cast<void*>(op.bias), j, s);
      }
    }
  }
  for (std::size_t i = 0; i < column_sums.size(); ++i) {
    store<T>(const_cast<void*>(op.bias), static_cast<std::int64_t>(i), column_sums[i]);
  }
}

}  // namespace ember::emulated

/// One "algorithm" for every product the substitute computes (lt_supported), none otherwise.
inline cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
    cublasLtMatrixLayout_t, cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t, int requested,
    cublasLtMatmulHeuristicResult_t* results, int* found) {
  *found = 0;
  if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  if (ember::emulated::lt_supported(*op, *a, *b, *d)) {
    results[0] = cublasLtMatmulHeuristicResult_t{};
    results[0].state = CUBLAS_STATUS_SUCCESS;
    *found = 1;
  }
  return CUBLAS_STATUS_SUCCESS;
}

/// Queues the product on `stream`: descriptors, alpha and beta are read now, as cuBLASLt reads
/// them (host pointer mode); the operands when the stream gets there.
[[gnu::noinline]] inline cublasStatus_t cublasLtMatmul(
    cublasLtHandle_t, cublasLtMatmulDesc_t op, const void* alpha, const void* A,
    cublasLtMatrixLayout_t a, const void* B, cublasLtMatrixLayout_t b, const void* beta,
    const void* C, cublasLtMatrixLayout_t c, void* D, cublasLtMatrixLayout_t d,
    const cublasLtMatmulAlgo_t*, void*, std::size_t, cudaStream_t stream) {
  using namespace ember::emulated;
  if (!lt_supported(*op, *a, *b, *d)) return CUBLAS_STATUS_NOT_SUPPORTED;
  const auto o = *op;
  const auto la = *a, lb = *b, lc = *c, ldd = *d;
  if (o.compute == CUBLAS_COMPUTE_64F) {
    double al, be;
    std::memcpy(&al, alpha, sizeof al);
    std::memcpy(&be, beta, sizeof be);
    enqueue(stream, [=] { lt_compute<double, double>(o, al, be, A, la, B, lb, C, lc, D, ldd); });
    return CUBLAS_STATUS_SUCCESS;
  }
  float al, be;
  std::memcpy(&al, alpha, sizeof al);
  std::memcpy(&be, beta, sizeof be);
  switch (la.type) {
    case CUDA_R_32F:
      enqueue(stream, [=] { lt_compute<float, float>(o, al, be, A, la, B, lb, C, lc, D, ldd); });
      break;
    case CUDA_R_16BF:
      enqueue(stream,
              [=] { lt_compute<ember::bf16, float>(o, al, be, A, la, B, lb, C, lc, D, ldd); });
      break;
    case CUDA_R_16F:
      enqueue(stream,
              [=] { lt_compute<ember::half, float>(o, al, be, A, la, B, lb, C, lc, D, ldd); });
      break;
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return CUBLAS_STATUS_SUCCESS;
}
