// layer_norm, batch_norm and dropout on Vars: the Tensor operators of
// ops/normalization/normalization.hpp and ops/dropout.hpp, recorded with their backward passes.
// Weight and bias may be Vars, Tensors (constants) or undefined.
#pragma once

#include <cstdint>
#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../core/compiled_once.hpp"
#include "../ops/dropout.hpp"
#include "../ops/normalization/normalization.hpp"
#include "../ops/rows/dropout_add_layer_norm.hpp"
#include "matmul.hpp"
#include "op_node.hpp"
#include "var.hpp"

namespace ember::autograd::inline EMBER_UNIT_KIND {

/// A weight or bias argument: a Var, a Tensor (constant), or an undefined Tensor (none).
template <FloatingElement T>
struct ParamArg {
  Tensor<T> value;
  std::shared_ptr<VarNode<T>> node;
  ParamArg(const Var<T>& v) : value(v.value()), node(v.node()) {}  // NOLINT: implicit
  ParamArg(const Tensor<T>& t) : value(t) {}                       // NOLINT: implicit
  ParamArg() = default;
};
/// In parameter lists: converts from a Var or a Tensor without taking part in deduction.
template <FloatingElement T>
using param_arg_t = std::type_identity_t<ParamArg<T>>;

/// The recorded normalisation with statistics of x itself (layer_norm where its rows do not
/// apply): y = normalize(x; st, w, b) with the backward of ops/.
template <FloatingElement T>
Var<T> record_normalize(const char* name, const Var<T>& x, const ops::NormStats<acc_t<T>>& st,
                        const ParamArg<T>& w, const ParamArg<T>& b, const Tensor<T>& wv,
                        const Tensor<T>& bv, const Dims& axes) {
  const Tensor<T> xv = x.value();
  const Tensor<T> y = ops::normalize<T>(xv, st, wv, bv);
  return Var<T>::from_node(
      record_op<T>(name, y, {x.node(), w.node, b.node}, {xv, w.value, b.value},
                   [xv, st, wv, bv, axes, wshape = w.value.defined() ? w.value.shape() : Shape(),
                    bshape = b.value.defined() ? b.value.shape() : Shape()](const Tensor<T>& g) {
                     auto [gx, gw, gb] = ops::normalize_backward<T>(xv, st, wv, bv, g, axes, true);
                     return std::vector<Tensor<T>>{gx, gw.defined() ? gw.reshape(wshape) : gw,
                                                   gb.defined() ? gb.reshape(bshape) : gb};
                   }));
}
}  // namespace ember::autograd::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// PyTorch's F.layer_norm(x, normalized_shape, weight, bias, eps) of Vars: over the trailing
/// dims `normalized`; weight and bias may be undefined (no affine), else of that shape.
template <FloatingElement T>
Var<T> layer_norm(const Var<T>& x, const Shape& normalized, const autograd::param_arg_t<T>& weight,
                  const autograd::param_arg_t<T>& bias, double eps = 1e-5) {
  ops::check_layer_norm_params(normalized, weight.value, bias.value);
  const Dims axes = ops::layer_norm_axes(x.value(), normalized);
  const std::int64_t cols = normalized.numel();
  if (ops::row_norm_applies(x.value(), cols)) {
    const Tensor<T> w = ops::as_row_param<T>(weight.value, cols);
    auto forward = ops::row_norm_forward<T>(x.value(), Tensor<T>(), w,
                                            ops::as_row_param<T>(bias.value, cols), cols, eps, {});
    return Var<T>::from_node(autograd::record_op<T>(
        "layer_norm", std::get<0>(forward), {x.node(), weight.node, bias.node},
        {x.value(), weight.value, bias.value},
        [saved = std::move(std::get<1>(forward)), w, has_bias = bias.value.defined(),
         wshape = weight.value.defined() ? weight.value.shape() : Shape(),
         bshape = bias.value.defined() ? bias.value.shape() : Shape()](const Tensor<T>& g) {
          auto [gx, gres, gw, gb] = ops::row_norm_backward<T>(g, saved, w, has_bias, false);
          return std::vector<Tensor<T>>{gx, gw.defined() ? gw.reshape(wshape) : gw,
                                        gb.defined() ? gb.reshape(bshape) : gb};
        }));
  }
  const auto st = ops::norm_stats<T>(x.value(), axes, eps, "layer_norm");
  return autograd::record_normalize<T>("layer_norm", x, st, weight, bias, weight.value, bias.value,
                                       axes);
}
/// layer_norm over the trailing dims of weight's shape (bias's when there is no weight).
template <FloatingElement T>
Var<T> layer_norm(const Var<T>& x, const autograd::param_arg_t<T>& weight,
                  const autograd::param_arg_t<T>& bias, double eps = 1e-5) {
  return layer_norm<T>(x, ops::layer_norm_shape(weight.value, bias.value), weight, bias, eps);
}

template <FloatingElement T>
Var<T> batch_norm(const Var<T>& x, const autograd::param_arg_t<T>& weight,
                  const autograd::param_arg_t<T>& bias,
                  const std::type_identity_t<Tensor<T>>& running_mean,
                  const std::type_identity_t<Tensor<T>>& running_var, bool training,
                  double momentum = 0.1, double eps = 1e-5, ops::StatisticsGroupPtr group = {}) {
  const Tensor<T> xv = x.value();
  const auto s = ops::batch_norm_setup<T>(xv, weight.value, bias.value, running_mean, running_var,
                                          training, momentum, eps, std::move(group));
  return Var<T>::from_node(autograd::record_op<T>(
      "batch_norm", ops::batch_norm_output<T>(xv, s), {x.node(), weight.node, bias.node},
      {xv, weight.value, bias.value},
      [xv, s, training, wshape = weight.value.defined() ? weight.value.shape() : Shape(),
       bshape = bias.value.defined() ? bias.value.shape() : Shape()](const Tensor<T>& g) {
        auto [gx, gw, gb] = ops::batch_norm_backward<T>(xv, s, g, training);
        return std::vector<Tensor<T>>{gx, gw.defined() ? gw.reshape(wshape) : gw,
                                      gb.defined() ? gb.reshape(bshape) : gb};
      }));
}

/// relu(batch_norm(x) + residual) of Vars, in one pass after the statistics (ResNet's block
/// ending); residual may be a Var, a Tensor or undefined. Backward: the ReLU's mask in one pass,
/// then batch_norm's backward; the residual's gradient is the masked gradient itself.
template <FloatingElement T>
Var<T> batch_norm_add_relu(const Var<T>& x, const autograd::param_arg_t<T>& residual,
                           const autograd::param_arg_t<T>& weight,
                           const autograd::param_arg_t<T>& bias,
                           const std::type_identity_t<Tensor<T>>& running_mean,
                           const std::type_identity_t<Tensor<T>>& running_var, bool training,
                           double momentum = 0.1, double eps = 1e-5,
                           ops::StatisticsGroupPtr group = {}) {
  const Tensor<T> xv = x.value();
  const auto s = ops::batch_norm_setup<T>(xv, weight.value, bias.value, running_mean, running_var,
                                          training, momentum, eps, std::move(group));
  const Tensor<T> y = ops::normalize_add_relu<T>(xv, s, residual.value);
  return Var<T>::from_node(autograd::record_op<T>(
      "batch_norm_add_relu", y, {x.node(), residual.node, weight.node, bias.node},
      {xv, residual.value, weight.value, bias.value},
      [xv, y, s, training, wshape = weight.value.shape(),
       residual = residual.value.defined()](const Tensor<T>& g) {
        if (training) {
          // The ReLU's mask inside batch norm's channel loops, where they serve these tensors.
          auto [gx, gw, gb, gpre] = ops::channel_batch_norm_backward<T>(xv, s, g, y, residual);
          if (gx.defined()) {
            return std::vector<Tensor<T>>{gx, gpre, gw.reshape(wshape), gb.reshape(wshape)};
          }
        }
        const Tensor<T> gpre = Tensor<T>(cast<T>(where(y > 0.0, g, 0.0)));
        auto [gx, gw, gb] = ops::batch_norm_backward<T>(xv, s, gpre, training);
        return std::vector<Tensor<T>>{gx, gpre, gw.reshape(wshape), gb.reshape(wshape)};
      }));
}

/// layer_norm(dropout(x) + residual) over the last dimension of Vars, in one row pass each way
/// (ops/rows/dropout_add_layer_norm.hpp); residual, weight and bias may be Vars, Tensors or (weight
/// and bias) undefined.
template <FloatingElement T>
Var<T> dropout_add_layer_norm(const Var<T>& x, const autograd::param_arg_t<T>& residual,
                              const autograd::param_arg_t<T>& weight,
                              const autograd::param_arg_t<T>& bias, double eps = 1e-5,
                              const DropoutOptions& dropout = {}) {
  auto forward = ops::dropout_add_layer_norm_forward<T>(x.value(), residual.value, weight.value,
                                                        bias.value, eps, dropout);
  return Var<T>::from_node(autograd::record_op<T>(
      "dropout_add_layer_norm", std::get<0>(forward),
      {x.node(), residual.node, weight.node, bias.node}, {weight.value},
      [saved = std::move(std::get<1>(forward)), w = weight.value,
       has_bias = bias.value.defined()](const Tensor<T>& g) {
        auto [gx, gres, gw, gb] = ops::row_norm_backward<T>(g, saved, w, has_bias, true);
        return std::vector<Tensor<T>>{gx, gres, gw, gb};
      }));
}

/// Dropout of a Var: the backward applies the same mask (recomputed from seed and offset).
template <FloatingElement T>
Var<T> dropout(const Var<T>& x, double p, bool training, std::uint64_t seed,
               std::uint64_t offset = 0) {
  EMBER_CHECK(p >= 0 && p <= 1, "ember: dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  const Tensor<T> y = ops::apply_dropout_mask<T>(x.value(), p, seed, offset);
  return Var<T>::from_node(
      autograd::record_op<T>("dropout", y, {x.node()}, {}, [p, seed, offset](const Tensor<T>& g) {
        return std::vector<Tensor<T>>{ops::apply_dropout_mask<T>(g, p, seed, offset)};
      }));
}
}  // namespace ember::inline EMBER_UNIT_KIND

/// Compiled once in ember::kernels (core/compiled_once.hpp): batch norm (and its fused add + ReLU),
/// layer norm, dropout and dropout + add + layer norm on tensors and Vars, and the passes behind
/// them.
#define EMBER_NORMALIZATION_INSTANCES(EXPLICIT, T)                                                \
  namespace ember {                                                                               \
  EXPLICIT Tensor<T> batch_norm<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&,          \
                                   const Tensor<T>&, const Tensor<T>&, bool, double, double);     \
  EXPLICIT Tensor<T> batch_norm_add_relu<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, \
                                            const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, \
                                            bool, double, double);                                \
  EXPLICIT Var<T> batch_norm<T>(const Var<T>&, const autograd::ParamArg<T>&,                      \
                                const autograd::ParamArg<T>&, const Tensor<T>&, const Tensor<T>&, \
                                bool, double, double, ops::StatisticsGroupPtr);                   \
  EXPLICIT Var<T> batch_norm_add_relu<T>(const Var<T>&, const autograd::ParamArg<T>&,             \
                                         const autograd::ParamArg<T>&,                            \
                                         const autograd::ParamArg<T>&, const Tensor<T>&,          \
                                         const Tensor<T>&, bool, double, double,                  \
                                         ops::StatisticsGroupPtr);                                \
  EXPLICIT Tensor<T> layer_norm<T>(const Tensor<T>&, const Shape&, const Tensor<T>&,              \
                                   const Tensor<T>&, double);                                     \
  EXPLICIT Var<T> layer_norm<T>(const Var<T>&, const Shape&, const autograd::ParamArg<T>&,        \
                                const autograd::ParamArg<T>&, double);                            \
  EXPLICIT Tensor<T> dropout_add_layer_norm<T>(const Tensor<T>&, const Tensor<T>&,                \
                                               const Tensor<T>&, const Tensor<T>&, double,        \
                                               const DropoutOptions&);                            \
  EXPLICIT Var<T> dropout_add_layer_norm<T>(const Var<T>&, const autograd::ParamArg<T>&,          \
                                            const autograd::ParamArg<T>&,                         \
                                            const autograd::ParamArg<T>&, double,                 \
                                            const DropoutOptions&);                               \
  EXPLICIT Tensor<T> dropout<T>(const Tensor<T>&, double, bool, std::uint64_t, std::uint64_t);    \
  EXPLICIT Var<T> dropout<T>(const Var<T>&, double, bool, std::uint64_t, std::uint64_t);          \
  }                                                                                               \
  namespace ember::ops {                                                                          \
  EXPLICIT NormStats<acc_t<T>> norm_stats<T>(const Tensor<T>&, const Dims&, double, const char*); \
  EXPLICIT Tensor<T> normalize<T>(const Tensor<T>&, const NormStats<acc_t<T>>&, const Tensor<T>&, \
                                  const Tensor<T>&);                                              \
  EXPLICIT std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> normalize_backward<T>(                     \
      const Tensor<T>&, const NormStats<acc_t<T>>&, const Tensor<T>&, const Tensor<T>&,           \
      const Tensor<T>&, const Dims&, bool);                                                       \
  EXPLICIT BatchNormSetup<T> batch_norm_setup<T>(const Tensor<T>&, const Tensor<T>&,              \
                                                 const Tensor<T>&, const Tensor<T>&,              \
                                                 const Tensor<T>&, bool, double, double,          \
                                                 StatisticsGroupPtr);                             \
  EXPLICIT std::tuple<Tensor<T>, Tensor<T>, Tensor<T>, Tensor<T>> channel_batch_norm_backward<T>( \
      const Tensor<T>&, const BatchNormSetup<T>&, const Tensor<T>&, const Tensor<T>&, bool);      \
  EXPLICIT std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> batch_norm_backward<T>(                    \
      const Tensor<T>&, const BatchNormSetup<T>&, const Tensor<T>&, bool);                        \
  EXPLICIT Tensor<T> batch_norm_output<T>(const Tensor<T>&, const BatchNormSetup<T>&);            \
  EXPLICIT Tensor<T> normalize_add_relu<T>(const Tensor<T>&, const BatchNormSetup<T>&,            \
                                           const Tensor<T>&);                                     \
  EXPLICIT std::tuple<Tensor<T>, RowNormSaved<T>> dropout_add_layer_norm_forward<T>(              \
      const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, double,             \
      const DropoutOptions&);                                                                     \
  }
EMBER_EXTERN_INSTANCES(EMBER_NORMALIZATION_INSTANCES)
