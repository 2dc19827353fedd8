// ZeroRedundancyOptimizer (ZeRO stage 1) against the unsharded optimizer on every rank: the same
// averaged gradients give the same global norm and, after ten clipped steps, the same parameters
// (1e-12, float64), while each rank keeps the state of its share of the parameters only; the
// gathered state_dict is the unsharded optimizer's, and loads back. Run on 1 rank without MPI and
// on 2 and 3 under mpirun.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <ember/dist/dist.hpp>
#include <ember/dist/zero.hpp>
#include <ember/ember.hpp>
#include <ember/nn/linear.hpp>

#include "support/differences.hpp"

namespace {

namespace dist = ember::dist;
using ember::testing::max_relative_difference;
namespace nn = ember::nn;
namespace optim = ember::optim;
using ember::Shape;
using ember::Tensor;
using ember::Var;

struct Net : nn::Module {
  nn::Linear<double> l1{6, 9}, l2{9, 5}, l3{5, 1};
  Net() {
    register_module("l1", l1);
    register_module("l2", l2);
    register_module("l3", l3);
  }
  Var<double> forward(const Var<double>& x) const {
    return l3.forward(tanh(l2.forward(tanh(l1.forward(x)))));
  }
};

// This rank's batch of step `step`, its loss's gradients averaged over the ranks (what DDP
// leaves in grad()).
void backward(const Net& net, int step) {
  const std::uint64_t seed = 1000 + 10 * static_cast<std::uint64_t>(step) + dist::rank();
  const Var<double> x(ember::randn<double>(Shape{4, 6}, seed));
  ember::sum(ember::square(net.forward(x))).backward();
  for (const Var<double>& p : net.parameters<double>()) {
    dist::all_reduce(p.grad(), dist::ReduceOp::avg);
  }
}

void require_same_parameters(const Net& a, const Net& b) {
  const auto pa = a.parameters<double>(), pb = b.parameters<double>();
  for (std::size_t i = 0; i < pa.size(); ++i)
    REQUIRE(max_relative_difference(pa[i].value(), pb[i].value()) <= 1e-12);
}

void require_same_state(const optim::OptimizerState& a, const optim::OptimizerState& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].first == b[i].first);
    if (a[i].second.holds<double>()) {
      REQUIRE(max_relative_difference(a[i].second.as<double>(), b[i].second.as<double>()) <= 1e-12);
    } else {
      REQUIRE(a[i].second.as<std::int64_t>().item() == b[i].second.as<std::int64_t>().item());
    }
  }
}

template <class Opt>
void check_against_unsharded(const typename Opt::options_type& options) {
  nn::manual_seed(5);
  Net plain_net, zero_net;
  nn::copy_state(plain_net, zero_net);
  Opt plain(optim::decay_groups(plain_net, options, options));
  dist::ZeroRedundancyOptimizer<Opt> zero(optim::decay_groups(zero_net, options, options));

  // Six parameters dealt to the ranks: each keeps the state of its own only.
  REQUIRE(zero.parameter_count() == 6);
  const Tensor<double> owned = ember::from_vector<double>({double(zero.local_parameter_count())});
  dist::all_reduce(owned);
  REQUIRE(owned.item() == 6);
  if (dist::world_size() > 1) REQUIRE(zero.local_parameter_count() < 6);

  for (int step = 0; step < 10; ++step) {
    backward(plain_net, step);
    backward(zero_net, step);
    const double n_plain = plain.clip_grad_norm(0.5), n_zero = zero.clip_grad_norm(0.5);
    REQUIRE(std::abs(n_plain - n_zero) <= 1e-12 * n_plain);
    plain.step();
    zero.step();
    plain.zero_grad();
    zero.zero_grad();
    for (const Var<double>& p : zero_net.parameters<double>()) REQUIRE(!p.grad().defined());
  }
  require_same_parameters(zero_net, plain_net);
  require_same_state(zero.state_dict(), plain.state_dict());

  // The unsharded state, loaded into a fresh sharded optimizer, continues as the unsharded one.
  Net loaded_net;
  nn::copy_state(plain_net, loaded_net);
  dist::ZeroRedundancyOptimizer<Opt> loaded(optim::decay_groups(loaded_net, options, options));
  loaded.load_state_dict(plain.state_dict());
  backward(plain_net, 10);
  backward(loaded_net, 10);
  plain.step();
  loaded.step();
  require_same_parameters(loaded_net, plain_net);

  REQUIRE_THROWS_WITH(
      loaded.load_state_dict({{"state.6.step", ember::zeros<std::int64_t>(Shape{})}}),
      Catch::Contains("'state.6.step' names no parameter"));
}

}  // namespace

TEST_CASE("ZeroRedundancyOptimizer<AdamW> equals AdamW with a sixth of the state per rank",
          "[dist]") {
  check_against_unsharded<optim::AdamW>({.lr = 0.01, .weight_decay = 0.1});
}

TEST_CASE("ZeroRedundancyOptimizer<SGD> with Nesterov momentum equals SGD", "[dist]") {
  check_against_unsharded<optim::SGD>({.lr = 0.05, .momentum = 0.9, .nesterov = true});
}
