// layer_norm and batch_norm on Tensors, and the backward they share.
//
// Both normalise x over some axes with statistics of those axes, then scale and shift per
// feature:  y = (x - mean) rstd w + b,  rstd = 1 / sqrt(var + eps)  (biased variance).
//   layer_norm: over the trailing dims that weight's shape names (weight and bias optional).
//   batch_norm: over every axis but the channel axis 1, in training (and then it updates the
//               running statistics: the unbiased variance, as PyTorch); with the running
//               statistics in evaluation. The memory format comes from the strides: a
//               channels-last tensor is read in place.
// layer_norm runs one row at a time (ops/rows/layer_norm_rows.hpp) unless its rows are too long for
// a CUDA warp or empty; otherwise, and for batch_norm:
// Forward: two reductions (mean; then the mean squared deviation) and one elementwise pass.
// Backward:
//   dx = rstd (dxh - mean(dxh) - xh mean(dxh xh)),  dxh = g w,  xh = (x - mean) rstd
//   dw = sum(g xh), db = sum(g)  over the axes the parameters were broadcast along
// in two reductions over the normalised axes, one pass, and two reductions for the parameters.
// batch_norm's parameters are per channel, constant over its normalised axes, so its two
// reductions serve both: with s1 = sum(g), s2 = sum(g xh) per channel,
//   dx = rstd w (g - (s1 + xh s2) / n),  dw = s2,  db = s1
// (two reductions and one pass). On the CPU a dense NCHW or channels-last tensor takes channel
// loops instead (ops/normalization/batch_norm_channels.hpp): the statistics, s1 and s2 together,
// and the elementwise passes either side, with relu(bn(x) + residual)'s ReLU mask folded into the
// backward's loops.
// With a StatisticsGroup (ops/normalization/statistics_group.hpp: synchronised batch norm),
// batch_norm's training statistics, n, and the s1, s2 that dx is formed from are those of every
// member of the group; dw and db stay this member's own.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>

#include "../../core/dtype.hpp"
#include "../../core/shape.hpp"
#include "../../exec/assign.hpp"
#include "../../exec/reduce.hpp"
#include "../../expr/operators.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "../rows/layer_norm_rows.hpp"
#include "batch_norm_channels.hpp"
#include "statistics_group.hpp"

namespace ember::ops::inline EMBER_UNIT_KIND {

/// The statistics a normalisation used, kept (size 1 along the normalised axes), in the
/// compute type: what its backward needs.
template <class A>
struct NormStats {
  Tensor<A> mean, var, rstd;  // var: biased (undefined when the statistics were given)
};

template <FloatingElement T>
NormStats<acc_t<T>> norm_stats(const Tensor<T>& x, const Dims& axes, double eps, const char* name) {
  using A = acc_t<T>;
  const Tensor<A> mean = exec::reduce_expression<A>(
      expr::Leaf<T>(x), reduce::Bound<reduce::Mean<A>>{}, name, axes, true, true);
  // Two-pass variance: a plain sum of squared deviations vectorises where Welford's update
  // (a division per element) does not, and is at least as accurate.
  const Tensor<A> var = exec::reduce_expression<A>(
      square(expr::Leaf<T>(x) - mean), reduce::Bound<reduce::Mean<A>>{}, name, axes, true, true);
  return {mean, var, Tensor<A>(rsqrt(var + eps))};
}

/// weight/bias of shape `param` viewed so they broadcast against x of rank `rank` along the
/// axes they describe: trailing (layer norm) or axis 1 (batch norm).
template <Storable T>
Tensor<T> param_view(const Tensor<T>& p, int rank, bool channel_axis) {
  if (!channel_axis) return p;
  Shape s = Shape::filled(rank, 1);
  s[1] = p.numel();
  return p.reshape(s);
}

/// y = (x - mean) rstd w + b, with w and b optional (undefined).
template <FloatingElement T>
Tensor<T> normalize(const Tensor<T>& x, const NormStats<acc_t<T>>& st, const Tensor<T>& w,
                    const Tensor<T>& b) {
  const auto xh = (x - st.mean) * st.rstd;
  if (w.defined() && b.defined()) return Tensor<T>(cast<T>(xh * w + b));
  if (w.defined()) return Tensor<T>(cast<T>(xh * w));
  if (b.defined()) return Tensor<T>(cast<T>(xh + b));
  return Tensor<T>(cast<T>(xh));
}

/// The gradients of x, w and b (those defined) of normalize(), given the output's gradient g.
/// `axes`: the normalised axes; w and b are views that broadcast against x. `batch_stats`: the
/// statistics came from x itself (training); else they are constants (batch_norm in evaluation).
template <FloatingElement T>
std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> normalize_backward(
    const Tensor<T>& x, const NormStats<acc_t<T>>& st, const Tensor<T>& w, const Tensor<T>& b,
    const Tensor<T>& g, const Dims& axes, bool batch_stats) {
  using A = acc_t<T>;
  const auto xh = (x - st.mean) * st.rstd;
  Tensor<T> gx, gw, gb;
  if (!batch_stats) {
    // Fixed statistics (batch_norm in evaluation): y is affine in x.
    gx = w.defined() ? Tensor<T>(cast<T>(g * w * st.rstd)) : Tensor<T>(cast<T>(g * st.rstd));
  } else {
    auto run = [&](const auto& dxh) {
      const Tensor<A> m1 = exec::reduce_expression<A>(dxh, reduce::Bound<reduce::Mean<A>>{}, "norm",
                                                      axes, true, true);
      const Tensor<A> m2 = exec::reduce_expression<A>(dxh * xh, reduce::Bound<reduce::Mean<A>>{},
                                                      "norm", axes, true, true);
      gx = Tensor<T>(cast<T>(st.rstd * (dxh - m1 - xh * m2)));
    };
    if (w.defined()) {
      run(g * w);
    } else {
      run(expr::Leaf<T>(g));
    }
  }
  if (w.defined()) gw = sum_to<T>(Tensor<T>(cast<T>(g * xh)), w.shape());
  if (b.defined()) gb = sum_to<T>(g, b.shape());
  return {gx, gw, gb};
}

/// The normalised shape of a layer_norm given only its parameters: weight's (bias's when there is
/// no weight). Without either, the shape must be given (layer_norm(x, normalized, {}, {})).
template <Storable T>
Shape layer_norm_shape(const Tensor<T>& weight, const Tensor<T>& bias) {
  EMBER_CHECK(weight.defined() || bias.defined(),
              "ember: layer_norm: no weight and no bias to take the normalised shape from; give "
              "it: layer_norm(x, normalized_shape, weight, bias, eps)");
  return weight.defined() ? weight.shape() : bias.shape();
}
/// weight and bias, where given, have the normalised shape.
template <Storable T>
void check_layer_norm_params(const Shape& normalized, const Tensor<T>& weight,
                             const Tensor<T>& bias) {
  EMBER_CHECK(!weight.defined() || weight.shape() == normalized, "ember: layer_norm: weight ",
              weight.shape().str(), " is not of the normalised shape ", normalized.str());
  EMBER_CHECK(!bias.defined() || bias.shape() == normalized, "ember: layer_norm: bias ",
              bias.shape().str(), " is not of the normalised shape ", normalized.str());
}

/// The axes layer_norm normalises: the trailing ones that `normalized` names.
template <Storable T>
Dims layer_norm_axes(const Tensor<T>& x, const Shape& normalized) {
  const int k = normalized.rank();
  EMBER_CHECK(k >= 1 && x.rank() >= k, "ember: layer_norm: input ", x.shape().str(),
              " cannot be normalised over the trailing shape ", normalized.str());
  Dims axes;
  for (int i = 0; i < k; ++i) {
    EMBER_CHECK(x.size(x.rank() - k + i) == normalized[i], "ember: layer_norm: input ",
                x.shape().str(), " does not end in the normalised shape ", normalized.str());
    axes.push_back(x.rank() - k + i);
  }
  return axes;
}

/// Every axis but 1 (the channels), after checking the shapes of batch_norm's operands.
template <Storable T>
Dims batch_norm_axes(const Tensor<T>& x, const Tensor<T>& w, const Tensor<T>& b,
                     const Tensor<T>& rm, const Tensor<T>& rv) {
  EMBER_CHECK(x.rank() >= 2, "ember: batch_norm: input must be [N, C, ...], got ", x.shape().str());
  const std::int64_t C = x.size(1);
  for (const Tensor<T>* p : {&w, &b, &rm, &rv}) {
    EMBER_CHECK(!p->defined() || p->shape() == Shape{C}, "ember: batch_norm: a parameter of shape ",
                p->defined() ? p->shape().str() : std::string(), " for ", C, " channels (input ",
                x.shape().str(), ")");
  }
  Dims axes;
  for (int d = 0; d < x.rank(); ++d) {
    if (d != 1) axes.push_back(d);
  }
  return axes;
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// PyTorch's F.layer_norm(x, normalized_shape, weight, bias, eps): over the trailing dims
/// `normalized`; weight and bias may be undefined (no affine), else of that shape.
template <FloatingElement T>
Tensor<T> layer_norm(const Tensor<T>& x, const Shape& normalized, const Tensor<T>& weight,
                     const Tensor<T>& bias, double eps = 1e-5) {
  ops::check_layer_norm_params(normalized, weight, bias);
  const Dims axes = ops::layer_norm_axes(x, normalized);
  const std::int64_t cols = normalized.numel();
  if (ops::row_norm_applies(x, cols)) {
    return std::get<0>(ops::row_norm_forward<T>(x, Tensor<T>(), ops::as_row_param<T>(weight, cols),
                                                ops::as_row_param<T>(bias, cols), cols, eps,
                                                DropoutOptions{}));
  }
  return ops::normalize<T>(x, ops::norm_stats<T>(x, axes, eps, "layer_norm"), weight, bias);
}
/// Layer normalisation over the trailing dims of weight's shape (bias's when there is no weight).
template <FloatingElement T>
Tensor<T> layer_norm(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias,
                     double eps = 1e-5) {
  return layer_norm<T>(x, ops::layer_norm_shape(weight, bias), weight, bias, eps);
}
}  // namespace ember::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// The batch's own statistics (training): the channel loops where they serve x, else two
/// reductions. In the compute type, kept.
template <FloatingElement T>
NormStats<acc_t<T>> batch_stats(const Tensor<T>& x, const Dims& axes, double eps) {
  using A = acc_t<T>;
  if (!channel_loop_applies(x) && channel_layout(x) != ChannelLayout::nhwc) {
    return norm_stats<T>(x, axes, eps, "batch_norm");
  }
  NormStats<A> st;
  std::tie(st.mean, st.var) =
      channel_loop_applies(x) ? channel_mean_var(x) : channels_last_mean_var(x);
  st.rstd = Tensor<A>(rsqrt(st.var + eps));
  return st;
}

/// What batch_norm normalises with: the axes, weight and bias as views against x (undefined when
/// not given), the statistics, and the values per channel they cover (x's alone, or with a
/// group, every member's: then the backward sums over the group too).
template <FloatingElement T>
struct BatchNormSetup {
  Dims axes;
  Tensor<T> w, b;
  NormStats<acc_t<T>> st;
  double count = 0;
  StatisticsGroupPtr group;
};

/// The setup of batch_norm: in training the batch's statistics (the group's, when given), and
/// then the running statistics, when defined, are updated in place with `momentum`; in
/// evaluation the running statistics.
template <FloatingElement T>
BatchNormSetup<T> batch_norm_setup(const Tensor<T>& x, const Tensor<T>& weight,
                                   const Tensor<T>& bias, const Tensor<T>& running_mean,
                                   const Tensor<T>& running_var, bool training, double momentum,
                                   double eps, StatisticsGroupPtr group = {}) {
  using A = acc_t<T>;
  BatchNormSetup<T> s;
  s.axes = batch_norm_axes(x, weight, bias, running_mean, running_var);
  const int r = x.rank();
  if (weight.defined()) s.w = param_view(weight, r, true);
  if (bias.defined()) s.b = param_view(bias, r, true);
  const std::int64_t local_count = x.numel() / std::max<std::int64_t>(x.size(1), 1);
  s.count = static_cast<double>(local_count);
  if (!training) {
    EMBER_CHECK(running_mean.defined() && running_var.defined(),
                "ember: batch_norm: evaluation needs the running statistics");
    s.st = {Tensor<A>(cast<A>(param_view(running_mean, r, true))), Tensor<A>(),
            Tensor<A>(rsqrt(cast<A>(param_view(running_var, r, true)) + eps))};
    return s;
  }
  s.st = batch_stats<T>(x, s.axes, eps);
  if (group) {
    s.count = combine_statistics<A>(*group, s.st.mean, s.st.var, local_count);
    s.st.rstd = Tensor<A>(rsqrt(s.st.var + eps));
    s.group = std::move(group);
  }
  if (running_mean.defined() && running_var.defined()) {
    const double unbias = s.count > 1 ? s.count / (s.count - 1) : 1.0;  // unbiased, as PyTorch
    Tensor<T> rm = running_mean, rv = running_var;
    const Tensor<A> mean = s.st.mean.reshape(Shape{x.size(1)});
    const Tensor<A> var = s.st.var.reshape(Shape{x.size(1)});
    assign(std::tie(rm, rv), rm * (1.0 - momentum) + mean * momentum,
           rv * (1.0 - momentum) + var * (unbias * momentum));
  }
  return s;
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::ops::detail::inline EMBER_UNIT_KIND {

/// A per-channel tensor's C values in the compute type (`fill` where t is undefined).
template <class A, class T>
std::vector<A> channel_values(const Tensor<T>& t, std::int64_t C, A fill) {
  if (!t.defined()) return std::vector<A>(static_cast<std::size_t>(C), fill);
  const Tensor<T> c = t.contiguous();
  std::vector<A> v(static_cast<std::size_t>(C));
  for (std::int64_t i = 0; i < C; ++i) v[i] = static_cast<A>(to_acc(c.data()[i]));
  return v;
}
/// The channel layout x and every defined tensor of `others` share, or none.
template <class T>
ChannelLayout shared_channel_layout(const Tensor<T>& x, std::initializer_list<Tensor<T>> others) {
  const ChannelLayout layout = channel_layout(x);
  if (layout == ChannelLayout::none) return layout;
  const MemoryFormat f =
      layout == ChannelLayout::nhwc ? MemoryFormat::channels_last : MemoryFormat::contiguous;
  for (const Tensor<T>& t : others) {
    if (t.defined() && (t.shape() != x.shape() || !t.device().is_cpu() || !t.is_contiguous(f))) {
      return ChannelLayout::none;
    }
  }
  return layout;
}

/// The forward's per-channel affine (x - mean) scale + shift of batch_norm's channel loops,
/// scale = rstd w, shift = b; the backward recomputes a ReLU's mask with the same values.
template <class A>
struct ChannelAffine {
  std::vector<A> mean, scale, shift;
};
template <FloatingElement T>
ChannelAffine<acc_t<T>> channel_affine_of(const BatchNormSetup<T>& s, std::int64_t C) {
  using A = acc_t<T>;
  ChannelAffine<A> f{channel_values(s.st.mean, C, A(0)), channel_values(s.st.rstd, C, A(1)),
                     channel_values(s.b, C, A(0))};
  const std::vector<A> w = channel_values(s.w, C, A(1));
  for (std::int64_t c = 0; c < C; ++c) f.scale[c] *= w[c];
  return f;
}
}  // namespace ember::ops::detail::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// relu(normalize(x) + residual) (the ReLU when `relu`, residual optional) in one loop over a
/// dense NCHW or channels-last CPU tensor (ops/normalization/batch_norm_channels.hpp); undefined
/// where the loop does not serve x and residual.
template <FloatingElement T>
Tensor<T> channel_normalize(const Tensor<T>& x, const BatchNormSetup<T>& s,
                            const Tensor<T>& residual, bool relu) {
  const ChannelLayout layout = detail::shared_channel_layout(x, {residual});
  if (layout == ChannelLayout::none) return {};
  const auto f = detail::channel_affine_of(s, x.size(1));
  Tensor<T> y = empty<T>(x.shape(), x.device(), x.memory_format());
  channel_affine(layout, x, f.mean, f.scale, f.shift,
                 residual.defined() ? residual.data() : nullptr, relu, y.data());
  return y;
}

/// batch_norm's training backward in two loops over a dense NCHW (a channel per thread) or
/// channels-last CPU tensor: the sums s1, s2, then dx. With `relu_out` (y of relu(bn(x) +
/// residual)) g is first masked by the ReLU, in the same loops: with a residual (`residual`
/// true) the mask is read from y and the masked g returned too (the residual's gradient);
/// without, the mask is recomputed from x (the forward's affine, so the same branch) and y is
/// not read. {gx, gw, gb, g masked}; gx undefined where the loops do not serve these tensors.
template <FloatingElement T>
std::tuple<Tensor<T>, Tensor<T>, Tensor<T>, Tensor<T>> channel_batch_norm_backward(
    const Tensor<T>& x, const BatchNormSetup<T>& s, const Tensor<T>& g, const Tensor<T>& relu_out,
    bool residual) {
  using A = acc_t<T>;
  const ChannelLayout layout = detail::shared_channel_layout(x, {g, relu_out});
  if (layout == ChannelLayout::none ||
      (layout == ChannelLayout::nchw && !channel_loop_applies(x))) {
    return {};
  }
  ReluMask<T> mask;
  detail::ChannelAffine<A> forward;
  if (relu_out.defined() && residual) {
    mask.source = MaskSource::output;
    mask.y = relu_out.data();
  } else if (relu_out.defined()) {
    forward = detail::channel_affine_of(s, x.size(1));
    mask = {MaskSource::input, nullptr, forward.mean.data(), forward.scale.data(),
            forward.shift.data()};
  }
  const auto [s1, s2] = layout == ChannelLayout::nchw
                            ? channel_grad_sums(x, g, s.st.mean, s.st.rstd, mask)
                            : channels_last_grad_sums(x, g, s.st.mean, s.st.rstd, mask);
  // dx = rstd w (g' - (s1 + xh s2) / n), xh = (x - mean) rstd
  //    = a g' + k1 (x - mean) + k0,  a = rstd w, k1 = -a rstd s2 / n, k0 = -a s1 / n
  const std::int64_t C = x.size(1);
  const A inv_n = A(1) / static_cast<A>(s.count);
  const std::vector<A> mean = detail::channel_values(s.st.mean, C, A(0));
  const std::vector<A> rstd = detail::channel_values(s.st.rstd, C, A(1));
  const auto [group_s1, group_s2] = sum_over_group<A>(s.group.get(), s1, s2);
  const std::vector<A> sum1 = detail::channel_values(group_s1, C, A(0));
  const std::vector<A> sum2 = detail::channel_values(group_s2, C, A(0));
  std::vector<A> a = detail::channel_values(s.w, C, A(1)), k1(a.size()), k0(a.size());
  for (std::int64_t c = 0; c < C; ++c) {
    a[c] *= rstd[c];
    k1[c] = -a[c] * rstd[c] * sum2[c] * inv_n;
    k0[c] = -a[c] * sum1[c] * inv_n;
  }
  Tensor<T> gx = empty<T>(x.shape(), x.device(), x.memory_format()), gw, gb, gm;
  if (relu_out.defined() && residual) gm = empty<T>(x.shape(), x.device(), x.memory_format());
  channel_grad_apply(layout, x, g.data(), mask, mean, a, k1, k0, gx.data(),
                     gm.defined() ? gm.data() : nullptr);
  if (s.w.defined()) gw = Tensor<T>(cast<T>(s2));
  if (s.b.defined()) gb = Tensor<T>(cast<T>(s1));
  return {gx, gw, gb, gm};
}

/// The gradients of x, w and b (those defined) of batch_norm, given the output's gradient g;
/// s from batch_norm_setup (w, b as views against x). In evaluation the statistics are
/// constants (normalize_backward); in training see the top of this header.
template <FloatingElement T>
std::tuple<Tensor<T>, Tensor<T>, Tensor<T>> batch_norm_backward(const Tensor<T>& x,
                                                                const BatchNormSetup<T>& s,
                                                                const Tensor<T>& g, bool training) {
  if (!training) return normalize_backward<T>(x, s.st, s.w, s.b, g, s.axes, false);
  if (auto [gx, gw, gb, gm] = channel_batch_norm_backward<T>(x, s, g, Tensor<T>(), false);
      gx.defined()) {
    return {gx, gw, gb};
  }
  using A = acc_t<T>;
  const auto xh = (x - s.st.mean) * s.st.rstd;
  Tensor<A> s1, s2;  // sum(g), sum(g xh) per channel: [1, C, 1, ...]
  if (channel_loop_applies(x) && g.is_contiguous() && g.shape() == x.shape()) {
    std::tie(s1, s2) = channel_grad_sums(x, g, s.st.mean, s.st.rstd);
  } else {
    s1 = exec::reduce_expression<A>(expr::Leaf<T>(g), reduce::Bound<reduce::Sum<A>>{}, "batch_norm",
                                    s.axes, true, true);
    s2 = exec::reduce_expression<A>(g * xh, reduce::Bound<reduce::Sum<A>>{}, "batch_norm", s.axes,
                                    true, true);
  }
  const double inv_n = s.count > 0 ? 1.0 / s.count : 0.0;
  const auto [group_s1, group_s2] = sum_over_group<A>(s.group.get(), s1, s2);
  const auto centred = g - (group_s1 + xh * group_s2) * inv_n;
  Tensor<T> gx = empty<T>(x.shape(), x.device(), x.memory_format()), gw, gb;
  if (s.w.defined()) {
    gx = cast<T>(s.st.rstd * s.w * centred);
    gw = Tensor<T>(cast<T>(s2));
  } else {
    gx = cast<T>(s.st.rstd * centred);
  }
  if (s.b.defined()) gb = Tensor<T>(cast<T>(s1));
  return {gx, gw, gb};
}

/// normalize(x) with batch_norm's setup: the channel loop where it serves x, else one
/// elementwise pass.
template <FloatingElement T>
Tensor<T> batch_norm_output(const Tensor<T>& x, const BatchNormSetup<T>& s) {
  if (Tensor<T> y = channel_normalize(x, s, Tensor<T>(), false); y.defined()) return y;
  return normalize<T>(x, s.st, s.w, s.b);
}

/// relu(normalize(x) + residual) (residual optional) in one pass, in x's memory format; weight
/// and bias are required.
template <FloatingElement T>
Tensor<T> normalize_add_relu(const Tensor<T>& x, const BatchNormSetup<T>& s,
                             const Tensor<T>& residual) {
  EMBER_CHECK(s.w.defined() && s.b.defined(),
              "ember: batch_norm_add_relu: weight and bias are required");
  EMBER_CHECK(
      !residual.defined() || residual.shape() == x.shape(), "ember: batch_norm_add_relu: residual ",
      residual.defined() ? residual.shape().str() : "", " for an input of shape ", x.shape().str());
  if (Tensor<T> y = channel_normalize(x, s, residual, true); y.defined()) return y;
  const auto pre = (x - s.st.mean) * s.st.rstd * s.w + s.b;
  Tensor<T> y = empty<T>(x.shape(), x.device(), x.memory_format());
  if (residual.defined()) {
    y = cast<T>(relu(pre + residual));
  } else {
    y = cast<T>(relu(pre));
  }
  return y;
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// Batch normalisation of x [N, C, ...] (see the top of this header). In training, running_mean
/// and running_var (when defined) are updated in place with `momentum`.
template <FloatingElement T>
Tensor<T> batch_norm(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias,
                     const Tensor<T>& running_mean, const Tensor<T>& running_var, bool training,
                     double momentum = 0.1, double eps = 1e-5) {
  const auto s =
      ops::batch_norm_setup<T>(x, weight, bias, running_mean, running_var, training, momentum, eps);
  return ops::batch_norm_output<T>(x, s);
}

/// relu(batch_norm(x) + residual) in one pass after the statistics: ResNet's block ending
/// (residual undefined: batch norm then ReLU). Weight and bias are required here.
template <FloatingElement T>
Tensor<T> batch_norm_add_relu(const Tensor<T>& x, const Tensor<T>& residual,
                              const Tensor<T>& weight, const Tensor<T>& bias,
                              const Tensor<T>& running_mean, const Tensor<T>& running_var,
                              bool training, double momentum = 0.1, double eps = 1e-5) {
  const auto s =
      ops::batch_norm_setup<T>(x, weight, bias, running_mean, running_var, training, momentum, eps);
  return ops::normalize_add_relu<T>(x, s, residual);
}
}  // namespace ember::inline EMBER_UNIT_KIND
