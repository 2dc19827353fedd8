// Batch norm's training statistics over a group of processes (synchronised batch norm).
//
// Each process of a data-parallel run holds its own part of the global batch. With a group set,
// batch norm normalises with the statistics of every member's part, as one process holding the
// whole batch would: the forward combines the members' per-channel means and variances, and the
// backward sums the members' per-channel gradient sums s1, s2 before forming dx (the parameter
// gradients stay this member's own sums: data parallelism averages them afterwards).
//
// ops/ sits below dist/, so the group is an interface here: one collective, a sum in place over
// the members of a small float64 tensor. dist::sync_batch_norm implements it on MPI or NCCL.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "../../core/shape.hpp"
#include "../../expr/operators.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "../indexing/concat.hpp"

namespace ember::ops {

/// Sums small tensors over a group of processes: every member calls sum() with the same shape,
/// in the same order, and every member gets the sum.
class StatisticsGroup {
 public:
  virtual ~StatisticsGroup() = default;
  /// Replaces `t` (dense, on any device) by its sum over the members.
  virtual void sum(const Tensor<double>& t) const = 0;
};

using StatisticsGroupPtr = std::shared_ptr<const StatisticsGroup>;

/// Turns this member's per-channel `mean` and biased `var` of `count` values each into the
}  // namespace ember::ops

namespace ember::ops::inline EMBER_UNIT_KIND {
/// group's, in place (same shapes), and returns the group's count. Two sums: the counts and the
/// count-weighted means, then each member's squared deviations from the group's mean,
/// n_r (var_r + (mean_r - mean)^2) (Chan, Golub and LeVeque's pairwise combination: no
/// cancellation where the mean is large against the spread). In float64 whatever the compute
/// type, so a float statistic is rounded once, at the end.
template <class A>
double combine_statistics(const StatisticsGroup& group, Tensor<A>& mean, Tensor<A>& var,
                          std::int64_t count) {
  const Shape shape = mean.shape();
  const std::int64_t C = mean.numel();
  const Tensor<double> m = cast<double>(mean.reshape(Shape{C}));
  const Tensor<double> n = from_vector<double>({static_cast<double>(count)}, mean.device());
  const Tensor<double> weighted = cat<double>({Tensor<double>(m * n), n});
  group.sum(weighted);
  const double total = weighted.narrow(0, C, 1).item();
  const Tensor<double> group_mean = weighted.narrow(0, 0, C) / total;
  const Tensor<double> spread =
      (cast<double>(var.reshape(Shape{C})) + square(m - group_mean)) * static_cast<double>(count);
  group.sum(spread);
  mean = Tensor<A>(cast<A>(group_mean)).reshape(shape);
  var = Tensor<A>(cast<A>(spread / total)).reshape(shape);
  return total;
}

/// s1 and s2 (same shape) summed over the group, as new tensors (the caller's stay this
/// member's own): one sum of both, in float64. Without a group, s1 and s2 themselves.
template <class A>
std::pair<Tensor<A>, Tensor<A>> sum_over_group(const StatisticsGroup* group, const Tensor<A>& s1,
                                               const Tensor<A>& s2) {
  if (!group) return {s1, s2};
  const std::int64_t C = s1.numel();
  const Tensor<double> both = cat<double>({Tensor<double>(cast<double>(s1.reshape(Shape{C}))),
                                           Tensor<double>(cast<double>(s2.reshape(Shape{C})))});
  group->sum(both);
  return {Tensor<A>(cast<A>(both.narrow(0, 0, C))).reshape(s1.shape()),
          Tensor<A>(cast<A>(both.narrow(0, C, C))).reshape(s2.shape())};
}

}  // namespace ember::ops::inline EMBER_UNIT_KIND
