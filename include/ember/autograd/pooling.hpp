// max_pool2d, avg_pool2d and adaptive_avg_pool2d on Vars: the Tensor operators of
// ops/pooling.hpp, recorded with their gather backward passes (one launch each). Max pooling
// keeps its int32 argmax for the backward (only when recorded); neither saves the input, whose
// values the backward does not read. The input's gradient is written in the input's layout
// (autograd keeps a channels-last value's gradient channels-last: an NCHW one here would cost
// the next layer's backward a copy back).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "../core/compiled_once.hpp"
#include "../ops/pooling.hpp"
#include "grad_mode.hpp"
#include "op_node.hpp"
#include "var.hpp"

namespace ember::inline EMBER_UNIT_KIND {

template <FloatingElement T>
Var<T> max_pool2d(const Var<T>& x, const Pool2dOptions& opt) {
  const ops::Pool2dGeometry g = ops::pool2d_geometry(x.value(), opt, "max_pool2d");
  const bool record = grad_enabled() && x.requires_grad();
  auto [y, argmax] = ops::max_pool2d_forward<T>(x.value(), g, record);
  return Var<T>::from_node(autograd::record_op<T>(
      "max_pool2d", y, {x.node()}, {}, [argmax = argmax, g](const Tensor<T>& gy) {
        return std::vector<Tensor<T>>{ops::max_pool2d_backward<T>(gy, argmax, g, g.format())};
      }));
}

template <FloatingElement T>
Var<T> avg_pool2d(const Var<T>& x, const Pool2dOptions& opt) {
  const ops::Pool2dGeometry g = ops::avg_pool2d_geometry(x.value(), opt);
  const bool include_pad = opt.count_include_pad;
  const Tensor<T> y = ops::avg_pool2d_forward<T>(x.value(), g, include_pad);
  return Var<T>::from_node(autograd::record_op<T>(
      "avg_pool2d", y, {x.node()}, {}, [g, include_pad](const Tensor<T>& gy) {
        return std::vector<Tensor<T>>{ops::avg_pool2d_backward<T>(gy, g, include_pad, g.format())};
      }));
}

template <FloatingElement T>
Var<T> adaptive_avg_pool2d(const Var<T>& x, std::array<std::int64_t, 2> out) {
  const ops::Pool2dGeometry g =
      ops::adaptive_pool2d_geometry(x.value(), out, "adaptive_avg_pool2d");
  const Tensor<T> y = ops::avg_pool2d_forward<T>(x.value(), g, true);
  return Var<T>::from_node(
      autograd::record_op<T>("adaptive_avg_pool2d", y, {x.node()}, {}, [g](const Tensor<T>& gy) {
        return std::vector<Tensor<T>>{ops::avg_pool2d_backward<T>(gy, g, true, g.format())};
      }));
}
}  // namespace ember::inline EMBER_UNIT_KIND

/// Compiled once in ember::kernels (core/compiled_once.hpp): max, average and adaptive average
/// pooling on tensors and Vars, and their passes.
#define EMBER_POOLING_INSTANCES(EXPLICIT, T)                                                       \
  namespace ember {                                                                                \
  EXPLICIT Tensor<T> max_pool2d<T>(const Tensor<T>&, const Pool2dOptions&);                        \
  EXPLICIT Tensor<T> avg_pool2d<T>(const Tensor<T>&, const Pool2dOptions&);                        \
  EXPLICIT Tensor<T> adaptive_avg_pool2d<T>(const Tensor<T>&, std::array<std::int64_t, 2>);        \
  EXPLICIT Var<T> max_pool2d<T>(const Var<T>&, const Pool2dOptions&);                              \
  EXPLICIT Var<T> avg_pool2d<T>(const Var<T>&, const Pool2dOptions&);                              \
  EXPLICIT Var<T> adaptive_avg_pool2d<T>(const Var<T>&, std::array<std::int64_t, 2>);              \
  }                                                                                                \
  namespace ember::ops {                                                                           \
  EXPLICIT std::pair<Tensor<T>, Tensor<std::int32_t>> max_pool2d_forward<T>(const Tensor<T>&,      \
                                                                            const Pool2dGeometry&, \
                                                                            bool);                 \
  EXPLICIT Tensor<T> avg_pool2d_forward<T>(const Tensor<T>&, const Pool2dGeometry&, bool);         \
  EXPLICIT Tensor<T> max_pool2d_backward<T>(const Tensor<T>&, const Tensor<std::int32_t>&,         \
                                            const Pool2dGeometry&, MemoryFormat);                  \
  EXPLICIT Tensor<T> avg_pool2d_backward<T>(const Tensor<T>&, const Pool2dGeometry&, bool,         \
                                            MemoryFormat);                                         \
  }
EMBER_EXTERN_INSTANCES(EMBER_POOLING_INSTANCES)
