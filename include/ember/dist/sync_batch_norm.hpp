// Synchronised batch norm: training statistics of the whole global batch, every rank's part of
// it, instead of this rank's part alone (PyTorch's nn.SyncBatchNorm).
//
//   dist::sync_batch_norm(model);               // every nn::BatchNorm2d of a model, in place
//   dist::SyncBatchNorm2d<float> bn(64);        // or one layer: an nn::BatchNorm2d, synchronised
//
// Both set the layers' statistics_group to the world (ops/normalization/statistics_group.hpp): the
// forward combines the ranks' per-channel means and variances (two all-reduces of C + 1 and C
// values), and the backward sums the ranks' per-channel gradient sums before forming the input's
// gradient (one all-reduce of 2C values), inside batch norm's own passes, fused ones included
// (forward_add_relu, ResNet's block ending). The parameters' gradients stay each rank's own, for
// DistributedDataParallel to average. Running statistics as BatchNorm2d's (the unbiased variance
// of the global batch), so every rank keeps the same ones. Every rank must run the same layers in
// the same order (as it does when they run the same model). In evaluation, and in a world of one,
// it is BatchNorm2d. dist::sum_over_ranks is the all-reduce as an autograd function, for
// statistics of one's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "../autograd/function.hpp"
#include "../autograd/var.hpp"
#include "../core/bf16.hpp"
#include "../core/half.hpp"
#include "../nn/module.hpp"
#include "../nn/normalization.hpp"
#include "../ops/normalization/statistics_group.hpp"
#include "collectives.hpp"

namespace ember::dist {

// In the translation unit's executor namespace: their bodies evaluate expressions.
inline namespace EMBER_UNIT_KIND {

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

/// The world as a statistics group: sums over every rank (MPI on CPU tensors, NCCL on CUDA ones).
class WorldStatistics final : public ops::StatisticsGroup {
 public:
  void sum(const Tensor<double>& t) const override {
    if (world_size() > 1) all_reduce(t);
  }
};

/// The world's statistics group, shared by every synchronised layer.
inline ops::StatisticsGroupPtr world_statistics() {
  static const ops::StatisticsGroupPtr group = std::make_shared<const WorldStatistics>();
  return group;
}

/// nn::BatchNorm2d synchronised over the world (the same parameters, buffers and checkpoints).
template <FloatingElement T>
class SyncBatchNorm2d : public nn::BatchNorm2d<T> {
 public:
  explicit SyncBatchNorm2d(std::int64_t features, const nn::BatchNorm2dOptions& opt = {},
                           Device device = Device::cpu())
      : nn::BatchNorm2d<T>(features, opt, device) {
    this->statistics_group = world_statistics();
  }
};

/// Synchronises every nn::BatchNorm2d of `model` (and `model` itself, if it is one) over the
/// world; returns how many layers it set.
inline std::size_t sync_batch_norm(nn::Module& model) {
  std::vector<nn::Module*> modules{&model};
  for (const auto& [name, m] : model.named_modules()) modules.push_back(m);
  std::size_t count = 0;
  const auto set = [&]<class T>(nn::Module* m, std::type_identity<T>) {
    if (auto* bn = dynamic_cast<nn::BatchNorm2d<T>*>(m)) {
      bn->statistics_group = world_statistics();
      ++count;
    }
  };
  for (nn::Module* m : modules) {
    set(m, std::type_identity<float>{});
    set(m, std::type_identity<double>{});
    set(m, std::type_identity<bf16>{});
    set(m, std::type_identity<half>{});
  }
  return count;
}

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::dist
