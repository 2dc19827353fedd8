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

namespace {

namespace dist = ember::dist;
using ember::Shape;
using ember::Tensor;
using ember::Var;

double worst(const Tensor<double>& a, const Tensor<double>& b) {
  REQUIRE(a.shape() == b.shape());
  const auto x = a.contiguous().to_vector(), y = b.contiguous().to_vector();
  double w = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    w = std::max(w, std::abs(x[i] - y[i]) / std::max(1.0, std::abs(y[i])));
  }
  return w;
}

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

    REQUIRE(worst(y_mine.value(), part(y_all.value())) <= 1e-12);
    REQUIRE(worst(x_mine.grad(), part(x_all.grad())) <= 1e-12);
    // Each rank holds the gradient of its own part's loss: summed, the whole batch's.
    Tensor<double> gw = synced.weight.grad().clone(), gb = synced.bias.grad().clone();
    dist::all_reduce(gw);
    dist::all_reduce(gb);
    REQUIRE(worst(gw, reference.weight.grad()) <= 1e-12);
    REQUIRE(worst(gb, reference.bias.grad()) <= 1e-12);
    REQUIRE(worst(synced.running_mean, reference.running_mean) <= 1e-12);
    REQUIRE(worst(synced.running_var, reference.running_var) <= 1e-12);
    REQUIRE(synced.num_batches_tracked.item() == reference.num_batches_tracked.item());
    reference.zero_grad();
    synced.zero_grad();
  }
  synced.eval();
  reference.eval();
  const Var<double> x_eval(part(whole));
  REQUIRE(worst(synced.forward(x_eval).value(), reference.forward(x_eval).value()) <= 1e-12);
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

template <class T>
Tensor<double> as_double(const Tensor<T>& t) {
  return Tensor<double>(ember::cast<double>(t));
}

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
    REQUIRE(worst(as_double(y_mine.value()), as_double(part(y_all.value()))) <= tol);
    REQUIRE(worst(as_double(x_mine.grad()), as_double(part(x_all.grad()))) <= tol);
    for (auto [mine, all] :
         {std::pair{&synced.bn1, &reference.bn1}, {&synced.bn2, &reference.bn2}}) {
      Tensor<T> gw = mine->weight.grad().clone(), gb = mine->bias.grad().clone();
      dist::all_reduce(gw);
      dist::all_reduce(gb);
      REQUIRE(worst(as_double(gw), as_double(all->weight.grad())) <= tol);
      REQUIRE(worst(as_double(gb), as_double(all->bias.grad())) <= tol);
      REQUIRE(worst(as_double(mine->running_mean), as_double(all->running_mean)) <= tol);
      REQUIRE(worst(as_double(mine->running_var), as_double(all->running_var)) <= tol);
    }
    reference.zero_grad();
    synced.zero_grad();
  }
}
