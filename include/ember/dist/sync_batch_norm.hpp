// dist::SyncBatchNorm2d: batch norm whose training statistics are those of the whole global batch,
// every rank's part of it, instead of this rank's part alone (PyTorch's nn.SyncBatchNorm).
//
//   dist::SyncBatchNorm2d<float> bn(64);        // the names and buffers of nn::BatchNorm2d
//   Var<float> y = bn.forward(x);               // x: this rank's [N, C, H, W]
//
// The statistics are sums over the ranks (dist::sum_over_ranks, a differentiable all-reduce
// whose backward all-reduces the gradients: the sum is its own adjoint), so autograd derives the
// backward, with its two all-reduces per layer, from the forward: mean = sum(x) / n,
// var = sum((x - mean)^2) / n over the n elements per channel on all ranks (two passes, for
// float's sake), y = (x - mean) rsqrt(var + eps) weight + bias. Running statistics as
// BatchNorm2d's (unbiased variance); in eval mode it is BatchNorm2d. Every rank must call
// forward and backward for every layer in the same order (as it does when they run the same
// model). In a world of one it equals BatchNorm2d.
#pragma once

#include <cstdint>

#include "../autograd/function.hpp"
#include "../autograd/normalization.hpp"
#include "../autograd/reductions.hpp"
#include "../autograd/var.hpp"
#include "../nn/init.hpp"
#include "../nn/module.hpp"
#include "collectives.hpp"

namespace ember::dist {

// In the translation unit's executor namespace: their bodies evaluate expressions.
inline namespace EMBER_EXEC_NS {

/// The all-reduce (sum) of a Var as an autograd function.
template <FloatingElement T>
struct SumOverRanks {
  static constexpr const char* name = "dist::sum_over_ranks";
  static Tensor<T> forward(FunctionContext&, const Tensor<T>& x) {
    const Tensor<T> y = x.clone();
    all_reduce(y);
    return y;
  }
  static Tensor<T> backward(FunctionContext&, const Tensor<T>& grad) {
    const Tensor<T> g = grad.clone();  // the upstream gradient may be shared: not in place
    all_reduce(g);
    return g;
  }
};

/// The sum over the ranks of `x` (every rank gets it); its gradient is the sum over the ranks
/// of the result's gradients.
template <FloatingElement T>
Var<T> sum_over_ranks(const Var<T>& x) {
  return apply<SumOverRanks<T>>(x);
}

template <FloatingElement T>
class SyncBatchNorm2d : public nn::Module {
 public:
  Var<T> weight;
  Var<T> bias;
  Tensor<T> running_mean;
  Tensor<T> running_var;
  Tensor<std::int64_t> num_batches_tracked;
  std::int64_t num_features;
  double eps, momentum;

  explicit SyncBatchNorm2d(std::int64_t features, double epsilon = 1e-5, double momentum_ = 0.1,
                           Device device = Device::cpu())
      : num_features(features), eps(epsilon), momentum(momentum_) {
    EMBER_CHECK(features > 0, "ember: dist::SyncBatchNorm2d: num_features must be positive, got ",
                features);
    EMBER_CHECK(epsilon > 0 && momentum_ >= 0 && momentum_ <= 1,
                "ember: dist::SyncBatchNorm2d: needs eps > 0 and momentum in [0, 1], got eps ",
                epsilon, ", momentum ", momentum_);
    weight = param(nn::init::ones<T>(Shape{features}, device));
    bias = param(nn::init::zeros<T>(Shape{features}, device));
    register_parameter("weight", weight);
    register_parameter("bias", bias);
    running_mean = nn::init::zeros<T>(Shape{features}, device);
    running_var = nn::init::ones<T>(Shape{features}, device);
    num_batches_tracked = nn::init::zeros<std::int64_t>(Shape{}, device);
    register_buffer("running_mean", running_mean);
    register_buffer("running_var", running_var);
    register_buffer("num_batches_tracked", num_batches_tracked);
  }

  /// x [N, C, H, W] (this rank's part of the batch) -> the same shape.
  Var<T> forward(const Var<T>& x) const {
    EMBER_CHECK(x.shape().rank() == 4 && x.shape()[1] == num_features,
                "ember: dist::SyncBatchNorm2d(", num_features, "): input must be [N, ",
                num_features, ", H, W], got ", x.shape().str());
    if (!is_training()) {
      return batch_norm<T>(x, weight, bias, running_mean, running_var, false, momentum, eps);
    }
    // Elements per channel in the global batch (the ranks' parts may differ in size).
    const Tensor<double> count =
        from_vector<double>({static_cast<double>(x.shape().numel() / num_features)});
    all_reduce(count);
    const double n = count.item();
    EMBER_CHECK(n > 1,
                "ember: dist::SyncBatchNorm2d: training needs more than one value per "
                "channel over all ranks, got ",
                n);
    const Dims axes{0, 2, 3};
    const Shape per_channel{1, num_features, 1, 1};
    const Var<T> mean = Var<T>(sum_over_ranks(sum(x, axes, true)) / n);
    const Var<T> centred = x - mean;
    const Var<T> var = Var<T>(sum_over_ranks(sum(centred * centred, axes, true)) / n);
    Var<T> y = centred * rsqrt(var + eps) * weight.reshape(per_channel) + bias.reshape(per_channel);
    // The running statistics, as BatchNorm2d keeps them (the unbiased variance).
    Tensor<T> rm = running_mean, rv = running_var;  // handles: the updates reach the buffers
    Tensor<std::int64_t> tracked = num_batches_tracked;
    rm = expr::Leaf<T>(rm) * (1 - momentum) +
         expr::Leaf<T>(mean.value().reshape(rm.shape())) * momentum;
    rv = expr::Leaf<T>(rv) * (1 - momentum) +
         expr::Leaf<T>(var.value().reshape(rv.shape())) * (momentum * n / (n - 1));
    tracked += std::int64_t{1};
    return y;
  }
  Var<T> operator()(const Var<T>& x) const { return forward(x); }
};

}  // namespace EMBER_EXEC_NS
}  // namespace ember::dist
