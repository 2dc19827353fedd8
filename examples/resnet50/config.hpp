// The optimizer recipe the ResNet trainer's options give (options.hpp). A header of its own so
// that tests/examples/test_trainer.cu can check nvcc's reading of the recipe without compiling the
// whole trainer a third time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <ember/optim/lars.hpp>
#include <ember/optim/schedule.hpp>
#include <ember/optim/sgd.hpp>

#include "options.hpp"

namespace resnet {

/// The optimizer's options for the weights (`main`) and for biases and batch-norm parameters
/// (`excluded`: no weight decay, and no LARS trust ratio, as MLPerf's reference), and the
/// learning-rate schedule.
template <class Opt>
struct Recipe {
  typename Opt::options_type main, excluded;
  ember::optim::Schedule schedule;
};

// The options are built by naming their type: nvcc 13 drops the designators of a braced list
// assigned to an object of dependent type (`opts = {.weight_decay = w, .nesterov = true}` filled
// the members in declaration order), which once gave the CUDA build a weight decay of 1.
template <class Opt>
Recipe<Opt> make_recipe(const Config& c, std::int64_t steps_per_epoch) {
  using Options = typename Opt::options_type;
  const std::int64_t total_steps = c.epochs * steps_per_epoch;
  const auto warmup_steps = std::min<std::int64_t>(
      total_steps - 1, static_cast<std::int64_t>(c.warmup_epochs * steps_per_epoch));
  if constexpr (std::is_same_v<Opt, ember::optim::LARS>) {
    const Options main{.lr = c.lr, .momentum = c.momentum, .weight_decay = c.weight_decay};
    Options excluded = main;
    excluded.weight_decay = 0;
    excluded.exclude_from_adaptation = true;
    return {main, excluded,
            ember::optim::warmup(
                warmup_steps,
                ember::optim::PolynomialDecay(c.lr, 1e-4 * c.lr, total_steps - warmup_steps, 2.0))};
  } else {
    const Options main{
        .lr = c.lr, .momentum = c.momentum, .weight_decay = c.weight_decay, .nesterov = true};
    Options excluded = main;
    excluded.weight_decay = 0;
    return {main, excluded,
            ember::optim::warmup(warmup_steps,
                                 ember::optim::CosineDecay(c.lr, total_steps - warmup_steps, 0.0))};
  }
}

}  // namespace resnet
