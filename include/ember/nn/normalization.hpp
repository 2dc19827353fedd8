// nn::BatchNorm2d and nn::LayerNorm: PyTorch's normalisation layers.
//
// BatchNorm2d(C): weight (ones) and bias (zeros) [C] when affine; buffers running_mean (zeros),
// running_var (ones) [C] and num_batches_tracked (int64, rank 0) when tracking statistics. In
// training, forward normalises with the batch's statistics, updates the running ones with
// `momentum` (the unbiased variance, as PyTorch) and counts the batch; in evaluation it uses the
// running statistics. Without tracking, it always uses the batch's. forward_add_relu(x, residual)
// is relu(bn(x) + residual) in one pass after the statistics: ResNet's block ending. With
// statistics_group set, training uses the statistics of the whole group's batch
// (ops/normalization/statistics_group.hpp, dist::sync_batch_norm).
// The buffers are tensor handles: forward (const, like every layer's) updates their elements in
// place, so a handle taken before sees the new values.
//
// LayerNorm(normalized_shape): weight (ones) and bias (zeros) of that shape when
// elementwise_affine; normalises over the trailing dims that match it.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "../autograd/normalization.hpp"
#include "../core/compiled_once.hpp"
#include "dropout.hpp"
#include "init.hpp"
#include "module.hpp"

namespace ember::nn {

/// BatchNorm2d's settings, PyTorch's defaults: `BatchNorm2d<T>(64, {.momentum = 0.01}, device)`.
struct BatchNorm2dOptions {
  double eps = 1e-5;
  double momentum = 0.1;            // of the running statistics' update
  bool affine = true;               // a learned weight and bias
  bool track_running_stats = true;  // running mean and variance, for evaluation
};

/// LayerNorm's settings, PyTorch's defaults: `LayerNorm<T>(768, {.eps = 1e-12}, device)`.
struct LayerNormOptions {
  double eps = 1e-5;
  bool elementwise_affine = true;  // a learned weight and bias
};

template <FloatingElement T = float>
class BatchNorm2d : public Module, public Callable<BatchNorm2d<T>> {
 public:
  Var<T> weight;  // undefined unless affine
  Var<T> bias;
  Tensor<T> running_mean;  // undefined unless track_running_stats
  Tensor<T> running_var;
  Tensor<std::int64_t> num_batches_tracked;
  std::int64_t num_features;
  double eps, momentum;
  bool affine, track_running_stats;
  /// When set, training normalises with the statistics of every member of the group's part of
  /// the batch (synchronised batch norm; dist::sync_batch_norm sets it on a model's layers).
  ops::StatisticsGroupPtr statistics_group;

  template <class Mode = exec::mode>
  explicit BatchNorm2d(std::int64_t features, const BatchNorm2dOptions& opt = {},
                       Device device = Device::cpu())
      : num_features(features),
        eps(opt.eps),
        momentum(opt.momentum),
        affine(opt.affine),
        track_running_stats(opt.track_running_stats) {
    EMBER_CHECK(features > 0, "ember: nn::BatchNorm2d: num_features must be positive, got ",
                features);
    EMBER_CHECK(eps > 0 && momentum >= 0 && momentum <= 1,
                "ember: nn::BatchNorm2d: needs eps > 0 and momentum in [0, 1], got eps ", eps,
                ", momentum ", momentum);
    if (affine) {
      weight = param(init::ones<T>(Shape{features}, device));
      bias = param(init::zeros<T>(Shape{features}, device));
      register_parameter("weight", weight);
      register_parameter("bias", bias);
    }
    if (track_running_stats) {
      running_mean = init::zeros<T>(Shape{features}, device);
      running_var = init::ones<T>(Shape{features}, device);
      num_batches_tracked = init::zeros<std::int64_t>(Shape{}, device);
      register_buffer("running_mean", running_mean);
      register_buffer("running_var", running_var);
      register_buffer("num_batches_tracked", num_batches_tracked);
    }
  }

  /// x [N, C, H, W] -> the same shape.
  template <class Mode = exec::mode>
  Var<T> forward(const Var<T>& x) const {
    check_input(x, "forward");
    const bool batch_stats = begin_batch();
    using Arg = autograd::ParamArg<T>;  // a Var or none (the Tensor overloads do not match)
    return batch_norm<T>(x, affine ? Arg(weight) : Arg(), affine ? Arg(bias) : Arg(), running_mean,
                         running_var, batch_stats, momentum, eps, group());
  }

  /// relu(forward(x) + residual) in one pass after the statistics; residual (a Var or a Tensor,
  /// x's shape) may be undefined for relu(forward(x)). Needs affine.
  template <class Mode = exec::mode>
  Var<T> forward_add_relu(const Var<T>& x, const autograd::param_arg_t<T>& residual) const {
    check_input(x, "forward_add_relu");
    EMBER_CHECK(affine, "ember: nn::BatchNorm2d: forward_add_relu needs affine = true");
    const bool batch_stats = begin_batch();
    return batch_norm_add_relu<T>(x, residual, weight, bias, running_mean, running_var, batch_stats,
                                  momentum, eps, group());
  }

 private:
  void check_input(const Var<T>& x, const char* what) const {
    EMBER_CHECK(x.shape().rank() == 4 && x.shape()[1] == num_features,
                "ember: nn::BatchNorm2d: ", what, ": input must be [N, ", num_features,
                ", H, W], got ", x.shape().str());
  }
  /// The group whose statistics training normalises with (none in evaluation).
  ops::StatisticsGroupPtr group() const { return is_training() ? statistics_group : nullptr; }
  /// Whether this batch normalises with its own statistics; counts it when it updates the
  /// running ones.
  template <class Mode = exec::mode>
  bool begin_batch() const {
    if (!is_training() && track_running_stats) return false;
    if (track_running_stats) {
      Tensor<std::int64_t> count = num_batches_tracked;  // a handle: updates the buffer
      count += std::int64_t{1};
    }
    return true;
  }
};

template <FloatingElement T = float>
class LayerNorm : public Module, public Callable<LayerNorm<T>> {
 public:
  Var<T> weight;  // undefined unless elementwise_affine
  Var<T> bias;
  Shape normalized_shape;
  double eps;
  bool elementwise_affine;

  template <class Mode = exec::mode>
  explicit LayerNorm(Shape shape, const LayerNormOptions& opt = {}, Device device = Device::cpu())
      : normalized_shape(std::move(shape)),
        eps(opt.eps),
        elementwise_affine(opt.elementwise_affine) {
    EMBER_CHECK(normalized_shape.rank() >= 1 && normalized_shape.numel() > 0,
                "ember: nn::LayerNorm: normalized_shape must be non-empty with positive extents, "
                "got ",
                normalized_shape.str());
    for (int d = 0; d < normalized_shape.rank(); ++d) {
      EMBER_CHECK(normalized_shape[d] > 0, "ember: nn::LayerNorm: normalized_shape ",
                  normalized_shape.str(), " has a non-positive extent");
    }
    EMBER_CHECK(eps > 0, "ember: nn::LayerNorm: eps must be positive, got ", eps);
    if (elementwise_affine) {
      weight = param(init::ones<T>(normalized_shape, device));
      bias = param(init::zeros<T>(normalized_shape, device));
      register_parameter("weight", weight);
      register_parameter("bias", bias);
    }
  }
  /// LayerNorm(768): over the last dim.
  template <class Mode = exec::mode>
  explicit LayerNorm(std::int64_t features, const LayerNormOptions& opt = {},
                     Device device = Device::cpu())
      : LayerNorm(Shape{features}, opt, device) {}

  /// x [..., normalized_shape] -> the same shape.
  template <class Mode = exec::mode>
  Var<T> forward(const Var<T>& x) const {
    const Shape& s = x.shape();
    const int k = normalized_shape.rank();
    bool fits = s.rank() >= k;
    for (int i = 0; fits && i < k; ++i) fits = s[s.rank() - k + i] == normalized_shape[i];
    EMBER_CHECK(fits, "ember: nn::LayerNorm: input ", s.str(), " does not end in the normalized ",
                "shape ", normalized_shape.str());
    if (elementwise_affine) return layer_norm(x, normalized_shape, weight, bias, eps);
    return layer_norm(x, normalized_shape, Tensor<T>(), Tensor<T>(), eps);
  }
};

}  // namespace ember::nn

namespace ember::nn::inline EMBER_UNIT_KIND {
/// ln(dropout(x) + residual), the ending of a post-LN transformer's sublayer, in one pass each
/// way when ln normalises the last dimension (else the three layers one after the other). The
/// dropout draws its stream from reserve_random as nn::Dropout does, in training only.
template <FloatingElement T>
Var<T> dropout_add_layer_norm(const Var<T>& x, const Var<T>& residual, const Dropout<T>& dropout,
                              const LayerNorm<T>& ln) {
  if (ln.normalized_shape.rank() != 1 || !ln.elementwise_affine) {
    return ln.forward(Var<T>(dropout.forward(x) + residual));
  }
  EMBER_CHECK(x.shape().rank() >= 1 && x.shape()[x.shape().rank() - 1] == ln.normalized_shape[0],
              "ember: nn::LayerNorm: input ", x.shape().str(), " does not end in the normalized ",
              "shape ", ln.normalized_shape.str());
  DropoutOptions d;
  if (dropout.is_training() && dropout.p > 0) {
    d.p = dropout.p;
    std::tie(d.seed, d.offset) = reserve_random(x.value().numel());
  }
  return ember::dropout_add_layer_norm<T>(x, residual, ln.weight, ln.bias, ln.eps, d);
}

}  // namespace ember::nn::inline EMBER_UNIT_KIND

/// Compiled once in ember::kernels (core/compiled_once.hpp): nn::dropout_add_layer_norm.
#define EMBER_NN_NORMALIZATION_INSTANCES(EXPLICIT, T)                                        \
  namespace ember::nn {                                                                      \
  EXPLICIT Var<T> dropout_add_layer_norm<T>(const Var<T>&, const Var<T>&, const Dropout<T>&, \
                                            const LayerNorm<T>&);                            \
  }
EMBER_EXTERN_INSTANCES(EMBER_NN_NORMALIZATION_INSTANCES)
