// cuDNN's convolution on the emulated device: the calls ember makes (its legacy convolution API:
// 4-d tensor descriptors with any strides, NCHW or NHWC filters, padding, stride, dilation,
// groups; the forward, backward-data and backward-filter passes with alpha and beta), computed
// on the CPU by plain loops when the stream reaches the call. Like the cuBLASLt substitute it
// proves that ember describes its convolutions to cuDNN correctly, not how cuDNN's kernels add:
// each output is one sum in the compute type (float, or double for double), rounded once.
//
// Descriptors that disagree (an output shape the geometry does not give, channels that do not
// split into the groups) get CUDNN_STATUS_BAD_PARAM, and pointers outside the handle's device
// memory CUDNN_STATUS_EXECUTION_FAILED, when the call is made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../core/bf16.hpp"
#include "../core/half.hpp"
#include "runtime_api.hpp"

enum cudnnStatus_t {
  CUDNN_STATUS_SUCCESS = 0,
  CUDNN_STATUS_NOT_INITIALIZED = 1001,
  CUDNN_STATUS_BAD_PARAM = 2000,
  CUDNN_STATUS_NOT_SUPPORTED = 3000,
  CUDNN_STATUS_EXECUTION_FAILED = 5000,
};
enum cudnnDataType_t {
  CUDNN_DATA_FLOAT = 0,
  CUDNN_DATA_DOUBLE = 1,
  CUDNN_DATA_HALF = 2,
  CUDNN_DATA_BFLOAT16 = 9,
};
enum cudnnTensorFormat_t { CUDNN_TENSOR_NCHW = 0, CUDNN_TENSOR_NHWC = 1 };
enum cudnnConvolutionMode_t { CUDNN_CONVOLUTION = 0, CUDNN_CROSS_CORRELATION = 1 };
enum cudnnMathType_t {
  CUDNN_DEFAULT_MATH = 0,
  CUDNN_TENSOR_OP_MATH = 1,
  CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2,
  CUDNN_FMA_MATH = 3,
};
enum cudnnDeterminism_t { CUDNN_NON_DETERMINISTIC = 0, CUDNN_DETERMINISTIC = 1 };
enum cudnnConvolutionFwdAlgo_t { CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM = 0 };
enum cudnnConvolutionBwdDataAlgo_t { CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 = 0 };
enum cudnnConvolutionBwdFilterAlgo_t { CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 = 0 };

template <class Algo>
struct cudnnAlgoPerfEmulated {
  Algo algo;
  cudnnStatus_t status;
  float time;
  std::size_t memory;
  cudnnDeterminism_t determinism;
  cudnnMathType_t mathType;
  int reserved[3];
};
using cudnnConvolutionFwdAlgoPerf_t = cudnnAlgoPerfEmulated<cudnnConvolutionFwdAlgo_t>;
using cudnnConvolutionBwdDataAlgoPerf_t = cudnnAlgoPerfEmulated<cudnnConvolutionBwdDataAlgo_t>;
using cudnnConvolutionBwdFilterAlgoPerf_t = cudnnAlgoPerfEmulated<cudnnConvolutionBwdFilterAlgo_t>;

struct cudnnContext {
  int device = 0;
  cudaStream_t stream = nullptr;
};
/// A 4-d tensor (n, c, h, w) with strides in elements; a filter (k, c, h, w) is one too, its
/// strides given by its format.
struct cudnnTensorStruct {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::int64_t dims[4] = {};
  std::int64_t strides[4] = {};
  bool set = false;
};
struct cudnnFilterStruct : cudnnTensorStruct {};
struct cudnnConvolutionStruct {
  int pad[2] = {}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  int groups = 1;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  bool set = false;
};
using cudnnHandle_t = cudnnContext*;
using cudnnTensorDescriptor_t = cudnnTensorStruct*;
using cudnnFilterDescriptor_t = cudnnFilterStruct*;
using cudnnConvolutionDescriptor_t = cudnnConvolutionStruct*;

inline const char* cudnnGetErrorString(cudnnStatus_t s) {
  switch (s) {
    case CUDNN_STATUS_SUCCESS:
      return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED:
      return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM:
      return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED:
      return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_EXECUTION_FAILED:
      return "CUDNN_STATUS_EXECUTION_FAILED";
  }
  return "CUDNN_STATUS_UNKNOWN";
}

inline cudnnStatus_t cudnnCreate(cudnnHandle_t* h) {
  *h = new cudnnContext{ember::emulated::current_device(), nullptr};
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroy(cudnnHandle_t h) {
  delete h;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) {
  if (h == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  h->stream = s;
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) {
  *d = new cudnnTensorStruct;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) {
  *d = new cudnnFilterStruct;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  *d = new cudnnConvolutionStruct;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t d, cudnnDataType_t type,
                                                  int n, int c, int h, int w, int ns, int cs,
                                                  int hs, int ws) {
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0 || ns <= 0 || cs <= 0 || hs <= 0 || ws <= 0) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  *d = {type, {n, c, h, w}, {ns, cs, hs, ws}, true};
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type,
                                                cudnnTensorFormat_t format, int k, int c, int h,
                                                int w) {
  if (k <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  d->type = type;
  d->dims[0] = k, d->dims[1] = c, d->dims[2] = h, d->dims[3] = w;
  if (format == CUDNN_TENSOR_NCHW) {
    d->strides[3] = 1, d->strides[2] = w, d->strides[1] = std::int64_t{h} * w;
    d->strides[0] = std::int64_t{c} * h * w;
  } else {
    d->strides[1] = 1, d->strides[3] = c, d->strides[2] = std::int64_t{w} * c;
    d->strides[0] = std::int64_t{h} * w * c;
  }
  d->set = true;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h,
                                                     int pad_w, int stride_h, int stride_w,
                                                     int dilation_h, int dilation_w,
                                                     cudnnConvolutionMode_t mode,
                                                     cudnnDataType_t compute) {
  if (pad_h < 0 || pad_w < 0 || stride_h <= 0 || stride_w <= 0 || dilation_h <= 0 ||
      dilation_w <= 0) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  d->pad[0] = pad_h, d->pad[1] = pad_w, d->stride[0] = stride_h, d->stride[1] = stride_w;
  d->dilation[0] = dilation_h, d->dilation[1] = dilation_w;
  d->mode = mode;
  d->compute = compute;
  d->set = true;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (groups <= 0) return CUDNN_STATUS_BAD_PARAM;
  d->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t, cudnnMathType_t) {
  return CUDNN_STATUS_SUCCESS;  // every math type computes the same sums here
}

namespace ember::emulated {

/// The convolution the descriptors describe, checked as cuDNN checks it.
struct ConvProblem {
  cudnnTensorStruct x, y;
  cudnnFilterStruct w;
  cudnnConvolutionStruct conv;

  bool consistent() const {
    if (!x.set || !y.set || !w.set || !conv.set) return false;
    if (x.type != y.type || x.type != w.type) return false;
    const std::int64_t g = conv.groups;
    if (x.dims[1] != w.dims[1] * g || w.dims[0] % g != 0 || y.dims[1] != w.dims[0]) return false;
    if (y.dims[0] != x.dims[0]) return false;
    for (int d = 0; d < 2; ++d) {
      const std::int64_t span = std::int64_t{conv.dilation[d]} * (w.dims[2 + d] - 1) + 1;
      const std::int64_t out = (x.dims[2 + d] + 2 * conv.pad[d] - span) / conv.stride[d] + 1;
      if (x.dims[2 + d] + 2 * conv.pad[d] < span || y.dims[2 + d] != out) return false;
    }
    return (x.type == CUDNN_DATA_DOUBLE) == (conv.compute == CUDNN_DATA_DOUBLE);
  }
  static std::size_t element_bytes(cudnnDataType_t t) {
    return t == CUDNN_DATA_DOUBLE ? 8 : t == CUDNN_DATA_FLOAT ? 4 : 2;
  }
  /// Bytes from the first element to one past the last.
  static std::size_t extent(const cudnnTensorStruct& t) {
    std::int64_t last = 0;
    for (int d = 0; d < 4; ++d) last += (t.dims[d] - 1) * t.strides[d];
    return static_cast<std::size_t>(last + 1) * element_bytes(t.type);
  }
};

inline std::int64_t at(const cudnnTensorStruct& t, std::int64_t n, std::int64_t c, std::int64_t h,
                       std::int64_t w) {
  return n * t.strides[0] + c * t.strides[1] + h * t.strides[2] + w * t.strides[3];
}

/// Which pass: y from x and w, x from y and w, or w from x and y.
enum class ConvPass { forward, backward_data, backward_filter };

/// One pass: every product x[n, c, ih, iw] w[o, c', kh, kw] of the convolution is visited once
/// and added into the accumulator of the tensor the pass writes; then out = alpha acc + beta out.
template <class T, class Acc>
void conv_compute(const ConvProblem& p, ConvPass pass, Acc alpha, Acc beta, void* xp, void* wp,
                  void* yp) {
  const auto *x = static_cast<const T*>(xp), *w = static_cast<const T*>(wp);
  const auto* y = static_cast<const T*>(yp);
  const cudnnTensorStruct& out_desc = pass == ConvPass::forward         ? p.y
                                      : pass == ConvPass::backward_data ? p.x
                                                                        : p.w;
  T* out = static_cast<T*>(pass == ConvPass::forward         ? yp
                           : pass == ConvPass::backward_data ? xp
                                                             : wp);
  const std::int64_t* od = out_desc.dims;
  std::vector<Acc> acc(static_cast<std::size_t>(od[0] * od[1] * od[2] * od[3]), Acc(0));
  const auto acc_at = [&](std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t ww) {
    return static_cast<std::size_t>(((n * od[1] + c) * od[2] + h) * od[3] + ww);
  };
  const std::int64_t N = p.x.dims[0], OH = p.y.dims[2], OW = p.y.dims[3];
  const std::int64_t O = p.w.dims[0], Cg = p.w.dims[1], KH = p.w.dims[2], KW = p.w.dims[3];
  const std::int64_t Og = O / p.conv.groups;
  const bool flip = p.conv.mode == CUDNN_CONVOLUTION;
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t o = 0; o < O; ++o) {
      const std::int64_t c0 = (o / Og) * Cg;
      for (std::int64_t oh = 0; oh < OH; ++oh) {
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          for (std::int64_t c = 0; c < Cg; ++c) {
            for (std::int64_t kh = 0; kh < KH; ++kh) {
              const std::int64_t ih =
                  oh * p.conv.stride[0] - p.conv.pad[0] + kh * p.conv.dilation[0];
              if (ih < 0 || ih >= p.x.dims[2]) continue;
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t iw =
                    ow * p.conv.stride[1] - p.conv.pad[1] + kw * p.conv.dilation[1];
                if (iw < 0 || iw >= p.x.dims[3]) continue;
                const std::int64_t fh = flip ? KH - 1 - kh : kh, fw = flip ? KW - 1 - kw : kw;
                const auto xv = static_cast<Acc>(x[at(p.x, n, c0 + c, ih, iw)]);
                const auto wv = static_cast<Acc>(w[at(p.w, o, c, fh, fw)]);
                const auto yv = static_cast<Acc>(y[at(p.y, n, o, oh, ow)]);
                switch (pass) {
                  case ConvPass::forward:
                    acc[acc_at(n, o, oh, ow)] += xv * wv;
                    break;
                  case ConvPass::backward_data:
                    acc[acc_at(n, c0 + c, ih, iw)] += yv * wv;
                    break;
                  case ConvPass::backward_filter:
                    acc[acc_at(o, c, fh, fw)] += xv * yv;
                    break;
                }
              }
            }
          }
        }
      }
    }
  }
  for (std::int64_t a = 0; a < od[0]; ++a) {
    for (std::int64_t b = 0; b < od[1]; ++b) {
      for (std::int64_t h = 0; h < od[2]; ++h) {
        for (std::int64_t ww = 0; ww < od[3]; ++ww) {
          T& o = out[at(out_desc, a, b, h, ww)];
          Acc v = alpha * acc[acc_at(a, b, h, ww)];
          if (beta != Acc(0)) v += beta * static_cast<Acc>(o);
          o = T(v);
        }
      }
    }
  }
}

/// Checks the problem and the pointers now, then queues the pass on the handle's stream.
inline cudnnStatus_t conv_enqueue(cudnnHandle_t h, const ConvProblem& p, ConvPass pass,
                                  const void* alpha, const void* beta, const void* x, const void* w,
                                  const void* y) {
  if (h == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!p.consistent()) return CUDNN_STATUS_BAD_PARAM;
  const auto on_device = [&](const void* ptr, const cudnnTensorStruct& desc) {
    return Arena::get().device_of(ptr, ConvProblem::extent(desc)) == h->device;
  };
  if (!on_device(x, p.x) || !on_device(w, p.w) || !on_device(y, p.y)) {
    return CUDNN_STATUS_EXECUTION_FAILED;
  }
  auto* xp = const_cast<void*>(x);
  auto* wp = const_cast<void*>(w);
  auto* yp = const_cast<void*>(y);
  if (p.x.type == CUDNN_DATA_DOUBLE) {
    double al, be;
    std::memcpy(&al, alpha, sizeof al);
    std::memcpy(&be, beta, sizeof be);
    enqueue(h->stream, [=] { conv_compute<double, double>(p, pass, al, be, xp, wp, yp); });
    return CUDNN_STATUS_SUCCESS;
  }
  float al, be;
  std::memcpy(&al, alpha, sizeof al);
  std::memcpy(&be, beta, sizeof be);
  switch (p.x.type) {
    case CUDNN_DATA_FLOAT:
      enqueue(h->stream, [=] { conv_compute<float, float>(p, pass, al, be, xp, wp, yp); });
      break;
    case CUDNN_DATA_BFLOAT16:
      enqueue(h->stream, [=] { conv_compute<ember::bf16, float>(p, pass, al, be, xp, wp, yp); });
      break;
    case CUDNN_DATA_HALF:
      enqueue(h->stream, [=] { conv_compute<ember::half, float>(p, pass, al, be, xp, wp, yp); });
      break;
    default:
      return CUDNN_STATUS_NOT_SUPPORTED;
  }
  return CUDNN_STATUS_SUCCESS;
}

/// One algorithm, needing no workspace, for every consistent problem.
template <class Perf>
cudnnStatus_t one_algorithm(const ConvProblem& p, int requested, int* found, Perf* perf) {
  *found = 0;
  if (requested < 1) return CUDNN_STATUS_BAD_PARAM;
  if (!p.consistent()) return CUDNN_STATUS_BAD_PARAM;
  perf[0] = Perf{};
  perf[0].status = CUDNN_STATUS_SUCCESS;
  perf[0].determinism = CUDNN_DETERMINISTIC;
  *found = 1;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace ember::emulated

inline cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y, int requested, int* found,
    cudnnConvolutionFwdAlgoPerf_t* perf) {
  return ember::emulated::one_algorithm({*x, *y, *w, *conv}, requested, found, perf);
}
inline cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t dx, int requested, int* found,
    cudnnConvolutionBwdDataAlgoPerf_t* perf) {
  return ember::emulated::one_algorithm({*dx, *dy, *w, *conv}, requested, found, perf);
}
inline cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnFilterDescriptor_t dw, int requested, int* found,
    cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
  return ember::emulated::one_algorithm({*x, *dy, *dw, *conv}, requested, found, perf);
}

inline cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t,
    cudnnTensorDescriptor_t, cudnnConvolutionFwdAlgo_t, std::size_t* bytes) {
  *bytes = 0;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t,
    cudnnTensorDescriptor_t, cudnnConvolutionBwdDataAlgo_t, std::size_t* bytes) {
  *bytes = 0;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t,
    cudnnFilterDescriptor_t, cudnnConvolutionBwdFilterAlgo_t, std::size_t* bytes) {
  *bytes = 0;
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void* alpha,
                                             cudnnTensorDescriptor_t xd, const void* x,
                                             cudnnFilterDescriptor_t wd, const void* w,
                                             cudnnConvolutionDescriptor_t conv,
                                             cudnnConvolutionFwdAlgo_t, void*, std::size_t,
                                             const void* beta, cudnnTensorDescriptor_t yd,
                                             void* y) {
  return ember::emulated::conv_enqueue(h, {*xd, *yd, *wd, *conv},
                                       ember::emulated::ConvPass::forward, alpha, beta, x, w, y);
}
inline cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void* alpha,
                                                  cudnnFilterDescriptor_t wd, const void* w,
                                                  cudnnTensorDescriptor_t dyd, const void* dy,
                                                  cudnnConvolutionDescriptor_t conv,
                                                  cudnnConvolutionBwdDataAlgo_t, void*, std::size_t,
                                                  const void* beta, cudnnTensorDescriptor_t dxd,
                                                  void* dx) {
  return ember::emulated::conv_enqueue(h, {*dxd, *dyd, *wd, *conv},
                                       ember::emulated::ConvPass::backward_data, alpha, beta, dx, w,
                                       dy);
}
inline cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void* alpha,
                                                    cudnnTensorDescriptor_t xd, const void* x,
                                                    cudnnTensorDescriptor_t dyd, const void* dy,
                                                    cudnnConvolutionDescriptor_t conv,
                                                    cudnnConvolutionBwdFilterAlgo_t, void*,
                                                    std::size_t, const void* beta,
                                                    cudnnFilterDescriptor_t dwd, void* dw) {
  return ember::emulated::conv_enqueue(h, {*xd, *dyd, *dwd, *conv},
                                       ember::emulated::ConvPass::backward_filter, alpha, beta, x,
                                       dw, dy);
}
