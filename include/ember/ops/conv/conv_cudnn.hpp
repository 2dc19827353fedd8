// conv2d on CUDA through cuDNN 9 (its convolution API: tensor, filter and convolution
// descriptors). Tensors are described by their strides, so NCHW and NHWC (channels-last) inputs
// are read in place; the weight is described as NCHW or NHWC by its own layout. bf16 and half run
// on tensor cores with float accumulation; float uses FMA math (no TF32, so results match the
// CPU's float closely); double in double. The algorithm for each shape is cuDNN's best heuristic
// choice that fits the workspace limit, cached per (shape, dtype, layout) key; workspaces come
// from ember's stream-ordered pool. Host code only: any translation unit of a CUDA build.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "../../core/bf16.hpp"
#include "../../core/cuda.hpp"
#include "../../core/error.hpp"
#include "../../core/half.hpp"
#include "../../exec/launch_counter.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "conv_geometry.hpp"

namespace ember::ops::cudnn::inline EMBER_UNIT_KIND {

inline void check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) {
    fail("ember: cuDNN ", what, " failed: ", cudnnGetErrorString(status));
  }
}

/// One cuDNN handle per device, made on first use, kept for the process.
inline cudnnHandle_t handle(int device) {
  static std::array<cudnnHandle_t, ember::cuda::detail::kMaxDevices> handles{};
  static std::array<std::once_flag, ember::cuda::detail::kMaxDevices> once;
  std::call_once(once[static_cast<std::size_t>(device)], [device] {
    ember::cuda::DeviceGuard guard(device);
    check(cudnnCreate(&handles[static_cast<std::size_t>(device)]), "cudnnCreate");
  });
  const cudnnHandle_t h = handles[static_cast<std::size_t>(device)];
  check(cudnnSetStream(h, ember::cuda::current_stream(device)), "cudnnSetStream");
  return h;
}

template <class T>
constexpr cudnnDataType_t data_type() {
  if constexpr (std::is_same_v<T, float>) return CUDNN_DATA_FLOAT;
  if constexpr (std::is_same_v<T, double>) return CUDNN_DATA_DOUBLE;
  if constexpr (std::is_same_v<T, bf16>) return CUDNN_DATA_BFLOAT16;
  if constexpr (std::is_same_v<T, half>) return CUDNN_DATA_HALF;
}

inline constexpr std::size_t kWorkspaceLimit = std::size_t{256} << 20;

/// The descriptors of one convolution, owned.
template <class T>
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  Descriptors(const Tensor<T>& xt, const Tensor<T>& wt, const Tensor<T>& yt,
              const ConvGeometry& g) {
    check(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
    check(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
    check(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    check(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    describe(x, xt);
    describe(y, yt);
    const bool nhwc = wt.memory_format() == MemoryFormat::channels_last;
    check(cudnnSetFilter4dDescriptor(w, data_type<T>(),
                                     nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, dim(wt.size(0)),
                                     dim(wt.size(1)), dim(wt.size(2)), dim(wt.size(3))),
          "cudnnSetFilter4dDescriptor");
    constexpr bool is_double = std::is_same_v<T, double>;
    check(cudnnSetConvolution2dDescriptor(
              conv, dim(g.opt.padding[0]), dim(g.opt.padding[1]), dim(g.opt.stride[0]),
              dim(g.opt.stride[1]), dim(g.opt.dilation[0]), dim(g.opt.dilation[1]),
              CUDNN_CROSS_CORRELATION, is_double ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
    check(cudnnSetConvolutionGroupCount(conv, dim(g.groups)), "cudnnSetConvolutionGroupCount");
    const bool tensor_cores = std::is_same_v<T, bf16> || std::is_same_v<T, half>;
    check(cudnnSetConvolutionMathType(conv, tensor_cores ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
          "cudnnSetConvolutionMathType");
  }
  ~Descriptors() {
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  static int dim(std::int64_t v) {
    EMBER_CHECK(v >= 0 && v <= INT32_MAX, "ember: conv2d: a size of ", v,
                " exceeds what cuDNN takes");
    return static_cast<int>(v);
  }
  static void describe(cudnnTensorDescriptor_t d, const Tensor<T>& t) {
    check(cudnnSetTensor4dDescriptorEx(d, data_type<T>(), dim(t.size(0)), dim(t.size(1)),
                                       dim(t.size(2)), dim(t.size(3)), dim(t.stride(0)),
                                       dim(t.stride(1)), dim(t.stride(2)), dim(t.stride(3))),
          "cudnnSetTensor4dDescriptorEx");
  }
};

/// The key an algorithm choice is cached under.
using AlgoKey = std::tuple<int, int, std::array<std::int64_t, 17>>;
template <class T>
AlgoKey algo_key(int which, const Tensor<T>& x, const Tensor<T>& w, const ConvGeometry& g) {
  return {which,
          static_cast<int>(data_type<T>()),
          {g.N, g.C, g.H, g.W, g.O, g.KH, g.KW, g.opt.stride[0], g.opt.stride[1], g.opt.padding[0],
           g.opt.padding[1], g.opt.dilation[0], g.opt.dilation[1], g.groups, x.stride(1),
           w.stride(1), x.device().index()}};
}
inline std::mutex& algo_mutex() {
  static std::mutex m;
  return m;
}
template <class Algo>
std::map<AlgoKey, Algo>& algo_cache() {
  static std::map<AlgoKey, Algo> cache;
  return cache;
}

/// cuDNN's first heuristic choice whose workspace fits, cached.
template <class Algo, class Perf, class Query>
Algo choose(const AlgoKey& key, Query&& query) {
  {
    std::lock_guard<std::mutex> lock(algo_mutex());
    auto& cache = algo_cache<Algo>();
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::array<Perf, 16> perf{};
  int found = 0;
  query(static_cast<int>(perf.size()), &found, perf.data());
  for (int i = 0; i < found; ++i) {
    if (perf[static_cast<std::size_t>(i)].status == CUDNN_STATUS_SUCCESS &&
        perf[static_cast<std::size_t>(i)].memory <= kWorkspaceLimit) {
      std::lock_guard<std::mutex> lock(algo_mutex());
      algo_cache<Algo>()[key] = perf[static_cast<std::size_t>(i)].algo;
      return perf[static_cast<std::size_t>(i)].algo;
    }
  }
  fail("ember: cuDNN offers no convolution algorithm for this shape within ", kWorkspaceLimit,
       " bytes of workspace");
}

template <class T>
using Scale = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The three passes of a convolution, each over the same three tensors in their forward roles:
// x (input), w (weight), y (output); each writes one of them.
struct Forward {
  using Algo = cudnnConvolutionFwdAlgo_t;
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr int id = 0;
  template <class D>
  static void heuristic(cudnnHandle_t h, const D& d, int n, int* found, Perf* perf) {
    check(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, n, found, perf),
          "cudnnGetConvolutionForwardAlgorithm_v7");
  }
  template <class D>
  static void workspace(cudnnHandle_t h, const D& d, Algo a, std::size_t* bytes) {
    check(cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, a, bytes),
          "cudnnGetConvolutionForwardWorkspaceSize");
  }
  template <class D, class S>
  static void run(cudnnHandle_t h, const D& d, Algo a, void* ws, std::size_t bytes, const S* one,
                  const S* zero, void* x, void* w, void* y) {
    check(cudnnConvolutionForward(h, one, d.x, x, d.w, w, d.conv, a, ws, bytes, zero, d.y, y),
          "cudnnConvolutionForward");
  }
};
struct BackwardData {
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr int id = 1;
  template <class D>
  static void heuristic(cudnnHandle_t h, const D& d, int n, int* found, Perf* perf) {
    check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, n, found, perf),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  }
  template <class D>
  static void workspace(cudnnHandle_t h, const D& d, Algo a, std::size_t* bytes) {
    check(cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, a, bytes),
          "cudnnGetConvolutionBackwardDataWorkspaceSize");
  }
  template <class D, class S>
  static void run(cudnnHandle_t h, const D& d, Algo a, void* ws, std::size_t bytes, const S* one,
                  const S* zero, void* x, void* w, void* y) {
    check(cudnnConvolutionBackwardData(h, one, d.w, w, d.y, y, d.conv, a, ws, bytes, zero, d.x, x),
          "cudnnConvolutionBackwardData");
  }
};
struct BackwardFilter {
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr int id = 2;
  template <class D>
  static void heuristic(cudnnHandle_t h, const D& d, int n, int* found, Perf* perf) {
    check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, n, found, perf),
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  }
  template <class D>
  static void workspace(cudnnHandle_t h, const D& d, Algo a, std::size_t* bytes) {
    check(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, a, bytes),
          "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  }
  template <class D, class S>
  static void run(cudnnHandle_t h, const D& d, Algo a, void* ws, std::size_t bytes, const S* one,
                  const S* zero, void* x, void* w, void* y) {
    check(
        cudnnConvolutionBackwardFilter(h, one, d.x, x, d.y, y, d.conv, a, ws, bytes, zero, d.w, w),
        "cudnnConvolutionBackwardFilter");
  }
};

/// Runs one pass over x, w, y (in their forward roles): the algorithm cached per shape, the
/// workspace from ember's pool, the call on ember's stream.
template <class Pass, class T>
void run_pass(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>& y, const ConvGeometry& g) {
  const Device device = x.device();
  Descriptors<T> d(x, w, y, g);
  const cudnnHandle_t h = handle(device.index());
  const auto algo = choose<typename Pass::Algo, typename Pass::Perf>(
      algo_key(Pass::id, x, w, g),
      [&](int n, int* found, typename Pass::Perf* perf) { Pass::heuristic(h, d, n, found, perf); });
  std::size_t bytes = 0;
  Pass::workspace(h, d, algo, &bytes);
  const Tensor<std::uint8_t> ws =
      empty<std::uint8_t>(Shape{static_cast<std::int64_t>(bytes)}, device);
  using Scale = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Scale one = 1, zero = 0;
  exec::count_launch();
  Pass::run(h, d, algo, bytes ? ws.data() : nullptr, bytes, &one, &zero, x.data(), w.data(),
            y.data());
}

/// The weight as cuDNN takes it: dense in NCHW or NHWC order.
template <class T>
Tensor<T> dense_filter(const Tensor<T>& w) {
  return w.is_contiguous() || w.is_contiguous(MemoryFormat::channels_last) ? w : w.contiguous();
}

template <class T>
void conv_forward(const Tensor<T>& x, const Tensor<T>& w, const ConvGeometry& g, Tensor<T>& y) {
  if (y.numel() > 0) run_pass<Forward>(x, dense_filter(w), y, g);
}
template <class T>
void conv_backward_data(const Tensor<T>& w, const Tensor<T>& dy, const ConvGeometry& g,
                        Tensor<T>& dx) {
  if (dx.numel() > 0) run_pass<BackwardData>(dx, dense_filter(w), dy, g);
}
template <class T>
void conv_backward_filter(const Tensor<T>& x, const Tensor<T>& dy, const ConvGeometry& g,
                          Tensor<T>& dw) {
  run_pass<BackwardFilter>(x, dw, dy, g);
}
}  // namespace ember::ops::cudnn::inline EMBER_UNIT_KIND
