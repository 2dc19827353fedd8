// SyncBatchNorm2d on R ranks, each with its part of a batch, against nn::BatchNorm2d on the whole
// batch in one process (float64): the outputs of each part, the input's gradient, the parameter
// gradients summed over the ranks and the running statistics. In a world of one it is
// BatchNorm2d.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>
#include <ember/nn/normalization.hpp>

#include "support/differences.hpp"

namespace {

namespace dist = ember::dist;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using ember::testing::max_relative_difference;

}  // namespace

TEST_CASE("SyncBatchNorm2d on the ranks' parts equals BatchNorm2d on the whole batch", "[dist]") {
  const int ranks = dist::world_size(), rank = dist::rank();
  const std::int64_t per_rank = 3, channels = 4;
  // The whole batch and the weighting of the loss, the same on every rank.
  const Tensor<double> whole =
      ember::randn<double>(Shape{per_rank * ranks, channels, 5, 6}, 7) * 3.0 + 1.5;
  const Tensor<double> weights = ember::randn<double>(Shape{per_rank * ranks, channels, 5, 6}, 8);
  const auto part = [&](const Tensor<double>& t) {
    return t.narrow(0, rank * per_rank, per_rank).contiguous();
  };

  ember::nn::BatchNorm2d<double> reference(channels);
  dist::SyncBatchNorm2d<double> synced(channels);
  // Parameters away from their ones and zeros, the same in both.
  Tensor<double> w = ember::randn<double>(Shape{channels}, 9),
                 b = ember::randn<double>(Shape{channels}, 10);
  for (Tensor<double> t : {reference.weight.value(), synced.weight.value()}) t.copy_(w);
  for (Tensor<double> t : {reference.bias.value(), synced.bias.value()}) t.copy_(b);

  for (int step = 0; step < 2; ++step) {  // twice: the running statistics accumulate
    const Var<double> x_all = ember::param(whole.clone());
    const Var<double> y_all = reference.forward(x_all);
    ember::sum(y_all * weights).backward();

    const Var<double> x_mine = ember::param(part(whole));
    const Var<double> y_mine = synced.forward(x_mine);
    ember::sum(y_mine * part(weights)).backward();

    REQUIRE(max_relative_difference(y_mine.value(), part(y_all.value())) <= 1e-12);
    REQUIRE(max_relative_difference(x_mine.grad(), part(x_all.grad())) <= 1e-12);
    // Each rank holds the gradient of its own part's loss: summed, the whole batch's.
    Tensor<double> gw = synced.weight.grad().clone(), gb = synced.bias.grad().clone();
    dist::all_reduce(gw);
    dist::all_reduce(gb);
    REQUIRE(max_relative_difference(gw, reference.weight.grad()) <= 1e-12);
    REQUIRE(max_relative_difference(gb, reference.bias.grad()) <= 1e-12);
    REQUIRE(max_relative_difference(synced.running_mean, reference.running_mean) <= 1e-12);
    REQUIRE(max_relative_difference(synced.running_var, reference.running_var) <= 1e-12);
    REQUIRE(synced.num_batches_tracked.item() == reference.num_batches_tracked.item());
    reference.zero_grad();
    synced.zero_grad();
  }
  synced.eval();
  reference.eval();
  const Var<double> x_eval(part(whole));
  REQUIRE(max_relative_difference(synced.forward(x_eval).value(),
                                  reference.forward(x_eval).value()) <= 1e-12);
  REQUIRE_THROWS_WITH(synced.forward(Var<double>(ember::zeros<double>(Shape{2, 3, 4, 4}))),
                      Catch::Contains("input must be [N, 4, H, W]"));
}

namespace {

// ResNet's two block endings, relu(bn(x)) and relu(bn(x) + residual): the fused passes
// (nn::BatchNorm2d::forward_add_relu) that dist::sync_batch_norm synchronises in place.
template <class T>
struct BlockEndings : ember::nn::Module {
  ember::nn::BatchNorm2d<T> bn1, bn2;
  explicit BlockEndings(std::int64_t channels) : bn1(channels), bn2(channels) {
    register_module("bn1", bn1);
    register_module("bn2", bn2);
  }
  Var<T> forward(const Var<T>& x) const {
    const Var<T> h = bn1.forward_add_relu(x, {});  // relu(bn1(x))
    return bn2.forward_add_relu(h, x);             // relu(bn2(h) + x)
  }
};

}  // namespace

TEMPLATE_TEST_CASE(
    "sync_batch_norm(model): the fused block endings on the ranks' parts equal "
    "one process on the whole batch",
    "[dist]", float, double) {
  using T = TestType;
  // The ranks sum their parts, then each other's sums: another order than one process's, so
  // the two differ by the rounding of sums of n = 90 x ranks values (n eps: ~3e-5 in float).
  const double tol = std::is_same_v<T, double> ? 1e-12 : 1e-4;
  const int ranks = dist::world_size(), rank = dist::rank();
  const std::int64_t per_rank = 3, channels = 4;
  const auto format = GENERATE(ember::MemoryFormat::contiguous, ember::MemoryFormat::channels_last);
  const Tensor<T> whole =
      Tensor<T>(ember::cast<T>(
                    ember::randn<double>(Shape{per_rank * ranks, channels, 5, 6}, 17) * 3.0 + 1.5))
          .contiguous(format);
  const Tensor<T> weights =
      Tensor<T>(ember::cast<T>(ember::randn<double>(Shape{per_rank * ranks, channels, 5, 6}, 18)));
  const auto part = [&](const Tensor<T>& t) {
    return t.narrow(0, rank * per_rank, per_rank).contiguous(format);
  };

  BlockEndings<T> reference(channels), synced(channels);
  REQUIRE(dist::sync_batch_norm(synced) == 2);
  REQUIRE(synced.bn1.statistics_group != nullptr);
  REQUIRE(reference.bn1.statistics_group == nullptr);
  for (const auto* bn : {&reference.bn1, &reference.bn2, &synced.bn1, &synced.bn2}) {
    Tensor<T> w = bn->weight.value(), b = bn->bias.value();
    w.copy_(Tensor<T>(ember::cast<T>(ember::randn<double>(Shape{channels}, 19))));
    b.copy_(Tensor<T>(ember::cast<T>(ember::randn<double>(Shape{channels}, 20))));
  }

  for (int step = 0; step < 2; ++step) {
    const Var<T> x_all = ember::param(whole.clone());
    const Var<T> y_all = reference.forward(x_all);
    ember::sum(y_all * weights).backward();
    const Var<T> x_mine = ember::param(part(whole));
    const Var<T> y_mine = synced.forward(x_mine);
    ember::sum(y_mine * part(weights)).backward();

    REQUIRE(y_mine.value().is_contiguous(format));
    REQUIRE(max_relative_difference(y_mine.value(), part(y_all.value())) <= tol);
    REQUIRE(max_relative_difference(x_mine.grad(), part(x_all.grad())) <= tol);
    for (auto [mine, all] :
         {std::pair{&synced.bn1, &reference.bn1}, {&synced.bn2, &reference.bn2}}) {
      Tensor<T> gw = mine->weight.grad().clone(), gb = mine->bias.grad().clone();
      dist::all_reduce(gw);
      dist::all_reduce(gb);
      REQUIRE(max_relative_difference(gw, all->weight.grad()) <= tol);
      REQUIRE(max_relative_difference(gb, all->bias.grad()) <= tol);
      REQUIRE(max_relative_difference(mine->running_mean, all->running_mean) <= tol);
      REQUIRE(max_relative_difference(mine->running_var, all->running_var) <= tol);
    }
    reference.zero_grad();
    synced.zero_grad();
  }
}
