// layer_norm, batch_norm and dropout on Vars: the Tensor operators of ops/normalization.hpp and
// ops/dropout.hpp, recorded with their backward passes. Weight and bias may be Vars, Tensors
// (constants) or undefined.
#pragma once

#include <cstdint>
#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../ops/dropout.hpp"
#include "../ops/normalization.hpp"
#include "matmul.hpp"
#include "op_node.hpp"
#include "var.hpp"

namespace ember {

namespace autograd {
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

/// The recorded normalisation: y = normalize(x; st, w, b) with the backward of ops/.
template <FloatingElement T, class Mode>
Var<T> record_normalize(const char* name, const Var<T>& x, const ops::NormStats<acc_t<T>>& st,
                        const ParamArg<T>& w, const ParamArg<T>& b, const Tensor<T>& wv,
                        const Tensor<T>& bv, const Dims& axes, bool batch_stats) {
  const Tensor<T> xv = x.value();
  const Tensor<T> y = ops::normalize<T, Mode>(xv, st, wv, bv);
  return Var<T>::from_node(record_op<T>(
      name, y, {x.node(), w.node, b.node}, {xv, w.value, b.value},
      [xv, st, wv, bv, axes, batch_stats, wshape = w.value.defined() ? w.value.shape() : Shape(),
       bshape = b.value.defined() ? b.value.shape() : Shape()](const Tensor<T>& g) {
        Tensor<T> gx, gw, gb;
        if (batch_stats) {
          std::tie(gx, gw, gb) = ops::normalize_backward<T, Mode>(xv, st, wv, bv, g, axes, true);
        } else {
          // Fixed statistics (batch_norm in evaluation): y is affine in x.
          gx =
              wv.defined() ? Tensor<T>(cast<T>(g * wv * st.rstd)) : Tensor<T>(cast<T>(g * st.rstd));
          std::tie(std::ignore, gw, gb) =
              ops::normalize_backward<T, Mode>(xv, st, wv, bv, g, axes, false);
        }
        return std::vector<Tensor<T>>{gx, gw.defined() ? gw.reshape(wshape) : gw,
                                      gb.defined() ? gb.reshape(bshape) : gb};
      }));
}
}  // namespace autograd

template <FloatingElement T, class Mode = exec::mode>
Var<T> layer_norm(const Var<T>& x, const autograd::param_arg_t<T>& weight,
                  const autograd::param_arg_t<T>& bias, double eps = 1e-5) {
  const Shape normalized = weight.value.defined() ? weight.value.shape() : bias.value.shape();
  const Dims axes = ops::layer_norm_axes(x.value(), normalized);
  const auto st = ops::norm_stats<T, Mode>(x.value(), axes, eps, "layer_norm");
  return autograd::record_normalize<T, Mode>("layer_norm", x, st, weight, bias, weight.value,
                                             bias.value, axes, true);
}

template <FloatingElement T, class Mode = exec::mode>
Var<T> batch_norm(const Var<T>& x, const autograd::param_arg_t<T>& weight,
                  const autograd::param_arg_t<T>& bias,
                  const std::type_identity_t<Tensor<T>>& running_mean,
                  const std::type_identity_t<Tensor<T>>& running_var, bool training,
                  double momentum = 0.1, double eps = 1e-5) {
  using A = acc_t<T>;
  const Tensor<T> xv = x.value();
  const Dims axes = ops::batch_norm_axes(xv, weight.value, bias.value, running_mean, running_var);
  const int r = xv.rank();
  const Tensor<T> wv =
      weight.value.defined() ? ops::param_view(weight.value, r, true) : Tensor<T>();
  const Tensor<T> bv = bias.value.defined() ? ops::param_view(bias.value, r, true) : Tensor<T>();
  ops::NormStats<A> st;
  if (training) {
    st = ops::norm_stats<T, Mode>(xv, axes, eps, "batch_norm");
    // The running statistics, as the Tensor batch_norm updates them.
    if (running_mean.defined() && running_var.defined()) {
      no_grad guard;
      const double n = static_cast<double>(xv.numel() / std::max<std::int64_t>(xv.size(1), 1));
      const double unbias = n > 1 ? n / (n - 1) : 1.0;
      Tensor<T> rm = running_mean, rv = running_var;
      assign(std::tie(rm, rv),
             rm * (1.0 - momentum) + st.mean.reshape(Shape{xv.size(1)}) * momentum,
             rv * (1.0 - momentum) + st.var.reshape(Shape{xv.size(1)}) * (unbias * momentum));
    }
  } else {
    EMBER_CHECK(running_mean.defined() && running_var.defined(),
                "ember: batch_norm: evaluation needs the running statistics");
    st = {Tensor<A>(cast<A>(ops::param_view(running_mean, r, true))), Tensor<A>(),
          Tensor<A>(rsqrt(cast<A>(ops::param_view(running_var, r, true)) + eps))};
  }
  return autograd::record_normalize<T, Mode>("batch_norm", x, st, weight, bias, wv, bv, axes,
                                             training);
}

/// Dropout of a Var: the backward applies the same mask (recomputed from seed and offset).
template <FloatingElement T, class Mode = exec::mode>
Var<T> dropout(const Var<T>& x, double p, bool training, std::uint64_t seed,
               std::uint64_t offset = 0) {
  EMBER_CHECK(p >= 0 && p <= 1, "ember: dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  const Tensor<T> y = ops::apply_dropout_mask<T, Mode>(x.value(), p, seed, offset);
  return Var<T>::from_node(
      autograd::record_op<T>("dropout", y, {x.node()}, {}, [p, seed, offset](const Tensor<T>& g) {
        return std::vector<Tensor<T>>{ops::apply_dropout_mask<T, Mode>(g, p, seed, offset)};
      }));
}

}  // namespace ember
