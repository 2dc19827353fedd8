// DistributedDataParallel against one process: the same model trained on the same global
// batches ends with the same parameters (1e-12 in double, 1e-5 relative in float) from different
// initial weights per rank; buckets start during backward; no_sync communicates nothing; a
// parameter without a gradient on some rank does not hang the others; the sampler's shards are
// disjoint and cover each batch. Run on 1 rank without MPI and on 2 and 3 under mpirun.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include <ember/data/batches.hpp>
#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>
#include <ember/nn/linear.hpp>

#include "support/differences.hpp"

namespace {

namespace dist = ember::dist;
namespace nn = ember::nn;
using ember::Shape;
using ember::Tensor;
using ember::Var;

template <class T>
struct Mlp : nn::Module {
  nn::Linear<T> l1{4, 16}, l2{16, 16}, l3{16, 8}, l4{8, 2};
  Mlp() {
    register_module("l1", l1);
    register_module("l2", l2);
    register_module("l3", l3);
    register_module("l4", l4);
  }
  Var<T> forward(const Var<T>& x) const {
    Var<T> h = tanh(l1.forward(x));
    h = tanh(l2.forward(h));
    h = tanh(l3.forward(h));
    return l4.forward(h);
  }
};

template <class T>
std::unique_ptr<Mlp<T>> make_mlp(std::uint64_t seed) {
  nn::manual_seed(seed);
  return std::make_unique<Mlp<T>>();
}

// A regression data set: 48 samples, x in [-1, 1]^4, y a smooth function of x.
template <class T>
struct Data {
  Tensor<T> x, y;
  Data() {
    std::vector<T> xs, ys;
    for (int i = 0; i < 48; ++i) {
      double v[4];
      for (int j = 0; j < 4; ++j) v[j] = std::sin(0.37 * i + 1.1 * j);
      for (double e : v) xs.push_back(T(e));
      ys.push_back(T(v[0] * v[1] - v[2]));
      ys.push_back(T(std::cos(v[3]) + 0.5 * v[0]));
    }
    x = ember::from_vector<T>(xs, Shape{48, 4});
    y = ember::from_vector<T>(ys, Shape{48, 2});
  }
};

// Ten SGD steps with momentum on batches of 12 (this rank's part of them when sharded).
template <class T>
void train(Mlp<T>& model, bool sharded, dist::DistributedDataParallel* ddp) {
  const Data<T> data;
  ember::data::Batches batches(48, 12, {.seed = 5, .drop_last = true});
  if (sharded) batches.shard(dist::rank(), dist::world_size());
  ember::optim::SGD opt(model, ember::optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
  for (int step = 0; step < 10; ++step) {
    if (!batches.has_next()) batches.next_epoch();
    const std::vector<std::int64_t> idx = batches.next();
    const Var<T> x(ember::data::gather_rows(data.x, idx));
    const Tensor<T> y = ember::data::gather_rows(data.y, idx);
    opt.zero_grad();
    Var<T> loss = ember::mse_loss(model.forward(x), y);
    loss.backward();
    if (ddp != nullptr) REQUIRE(ddp->last_backward().buckets == ddp->bucket_count());
    opt.step();
  }
}

template <class T>
double max_relative_difference(const nn::Module& a, const nn::Module& b) {
  const auto pa = a.parameters<T>(), pb = b.parameters<T>();
  REQUIRE(pa.size() == pb.size());
  double worst = 0;
  for (std::size_t i = 0; i < pa.size(); ++i) {
    worst = std::max(worst, ember::testing::max_relative_difference(pa[i].value(), pb[i].value()));
  }
  return worst;
}

// The largest difference of a tensor between the ranks (0 when they all hold the same values).
template <class T>
double spread_across_ranks(const Tensor<T>& t) {
  Tensor<T> lo = t.clone(), hi = t.clone();
  dist::all_reduce(lo, dist::ReduceOp::min);
  dist::all_reduce(hi, dist::ReduceOp::max);
  double worst = 0;
  const auto a = lo.to_vector(), b = hi.to_vector();
  for (std::size_t j = 0; j < a.size(); ++j) {
    worst = std::max(worst, static_cast<double>(b[j]) - static_cast<double>(a[j]));
  }
  return worst;
}

}  // namespace

TEMPLATE_TEST_CASE("DistributedDataParallel trains as one process on the global batch", "[dist]",
                   double, float) {
  using T = TestType;
  // Every rank starts from its own weights; the broadcast must make them rank 0's.
  auto model = make_mlp<T>(100 + static_cast<std::uint64_t>(dist::rank()));
  dist::DistributedDataParallel ddp(*model, dist::DDPOptions{.bucket_bytes = 1024});
  // Alone, DDP has nothing to do and hooks nothing.
  REQUIRE((dist::world_size() == 1 ? ddp.bucket_count() == 0 : ddp.bucket_count() > 2));
  for (const auto& p : model->template parameters<T>())
    REQUIRE(spread_across_ranks(p.value()) == 0);
  train(*model, /*sharded=*/true, &ddp);

  auto reference = make_mlp<T>(100);  // rank 0's initial weights, one process, whole batches
  train<T>(*reference, /*sharded=*/false, nullptr);
  const double tolerance = std::is_same_v<T, double> ? 1e-12 : 1e-5;
  REQUIRE(max_relative_difference<T>(*model, *reference) <= tolerance);
}

TEST_CASE("DistributedDataParallel: buckets start while backward still runs", "[dist]") {
  if (dist::world_size() == 1) return;  // no buckets in a world of one
  auto model = make_mlp<double>(3);
  // One bucket per parameter: eight, started in reverse registration order.
  dist::DistributedDataParallel ddp(*model, dist::DDPOptions{.bucket_bytes = 1});
  REQUIRE(ddp.bucket_count() == 8);
  // l2.weight's gradient is complete after l2's node and before l1's, the backward's last.
  int started_before_last_node = -1;
  auto hook = model->l2.weight.register_post_accumulate_grad_hook(
      [&](const Tensor<double>&) { started_before_last_node = ddp.buckets_started(); });
  const Data<double> data;
  Var<double> loss = ember::mse_loss(model->forward(Var<double>(data.x)), data.y);
  loss.backward();
  // l4's and l3's buckets, and l2's bias (made by the same node as its weight) or not yet.
  REQUIRE(started_before_last_node >= 4);
  REQUIRE(ddp.last_backward().started_during_backward == 8);
  REQUIRE(ddp.buckets_started() == 0);  // the backward is over
  hook.remove();
}

TEST_CASE("DistributedDataParallel: no_sync accumulates locally and the next backward averages",
          "[dist]") {
  auto model = make_mlp<double>(11);
  dist::DistributedDataParallel ddp(*model, dist::DDPOptions{.bucket_bytes = 4096});
  auto reference = make_mlp<double>(11);
  const Data<double> data;
  // Rank r's two micro-batches: rows [r*8, r*8 + 4) and [r*8 + 4, r*8 + 8) of 8 * size() rows.
  const auto rows = [&](std::int64_t start) {
    return Var<double>(data.x.narrow(0, start, 4).contiguous());
  };
  const auto targets = [&](std::int64_t start) { return data.y.narrow(0, start, 4).contiguous(); };
  const std::int64_t mine = 8 * dist::rank();
  {
    auto scope = ddp.no_sync();
    ember::mse_loss(model->forward(rows(mine)), targets(mine)).backward();
    REQUIRE(ddp.buckets_started() == 0);
    REQUIRE(ddp.last_backward().buckets == 0);  // nothing was communicated
  }
  // Locally accumulated: this rank's own gradient, different on every rank.
  ember::mse_loss(reference->forward(rows(mine)), targets(mine)).backward();
  REQUIRE(max_relative_difference<double>(*model, *reference) == 0);
  for (std::size_t i = 0; i < model->parameters<double>().size(); ++i) {
    const auto a = model->parameters<double>()[i].grad().to_vector();
    const auto b = reference->parameters<double>()[i].grad().to_vector();
    REQUIRE(a == b);
  }
  ember::mse_loss(model->forward(rows(mine + 4)), targets(mine + 4)).backward();
  REQUIRE(ddp.last_backward().buckets == ddp.bucket_count());
  // Now the mean over the ranks of each rank's two micro-batches, which one process gets from
  // all 2 * size() micro-batches divided by size().
  auto whole = make_mlp<double>(11);
  for (int r = 0; r < dist::world_size(); ++r) {
    for (std::int64_t start : {8 * r, 8 * r + 4}) {
      ember::mse_loss(whole->forward(rows(start)), targets(start)).backward();
    }
  }
  for (std::size_t i = 0; i < model->parameters<double>().size(); ++i) {
    const auto a = model->parameters<double>()[i].grad().to_vector();
    const auto b = whole->parameters<double>()[i].grad().to_vector();
    for (std::size_t j = 0; j < a.size(); ++j) {
      REQUIRE(std::abs(a[j] - b[j] / dist::world_size()) <= 1e-12 * std::max(1.0, std::abs(a[j])));
    }
  }
}

namespace {
struct Branches : nn::Module {
  nn::Linear<double> used{4, 2}, rank0_only{4, 2}, never{4, 2};
  Branches() {
    register_module("used", used);
    register_module("rank0_only", rank0_only);
    register_module("never", never);
  }
};
}  // namespace

TEST_CASE("DistributedDataParallel: parameters without a gradient do not hang the others",
          "[dist]") {
  nn::manual_seed(4);
  Branches model;
  dist::DistributedDataParallel ddp(model, dist::DDPOptions{.bucket_bytes = 1});
  const Data<double> data;
  const Var<double> x(data.x);
  Var<double> out = model.used.forward(x);
  if (dist::rank() == 0) out = out + model.rank0_only.forward(x);
  ember::mse_loss(out, data.y).backward();
  // rank0_only: rank 0's gradient over size() on every rank; never: no gradient anywhere.
  REQUIRE(model.rank0_only.weight.grad().defined());
  REQUIRE(spread_across_ranks(model.rank0_only.weight.grad()) == 0);
  REQUIRE(spread_across_ranks(model.used.weight.grad()) == 0);
  REQUIRE_FALSE(model.never.weight.grad().defined());
  REQUIRE_FALSE(model.never.bias.grad().defined());
}

TEST_CASE("DistributedDataParallel: ranks with different models are told so", "[dist]") {
  if (dist::world_size() < 2) return;
  nn::manual_seed(1);
  nn::Linear<float> a(3, dist::rank() == 1 ? 5 : 4);
  REQUIRE_THROWS_WITH(dist::DistributedDataParallel(a),
                      Catch::Contains("the ranks' models differ"));
}

TEST_CASE("data::Batches::shard: the ranks' parts are disjoint and make up each batch", "[dist]") {
  ember::data::Batches whole(50, 12, {.seed = 9});
  ember::data::Batches mine = whole;
  mine.shard(dist::rank(), dist::world_size());
  for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
    for (std::int64_t b = 0; b < whole.batches_per_epoch(); ++b) {
      std::vector<std::int64_t> part = mine.batch(epoch, b);
      // Gather every rank's part (padded to the longest with -1) and compare with the batch.
      const std::int64_t width = 12 / dist::world_size();
      part.resize(static_cast<std::size_t>(width), -1);
      Tensor<std::int64_t> all = ember::empty<std::int64_t>(Shape{dist::world_size() * width});
      dist::all_gather(all, ember::from_vector<std::int64_t>(part));
      std::vector<std::int64_t> got = all.to_vector();
      std::erase(got, -1);
      REQUIRE(got == whole.batch(epoch, b));  // in order: rank 0's part first
    }
  }
  REQUIRE_THROWS_WITH(ember::data::Batches(48, 10).shard(0, 4), Catch::Contains("divisible by 4"));
}
