// The ResNet trainer's options (what its command line sets: train_main.hpp parses them, settles
// the defaults and checks them) and the optimizer recipe they give. A header of its own so that
// tests/examples/test_trainer.cu can check nvcc's reading of the recipe without compiling the
// whole trainer a third time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <ember/optim/lars.hpp>
#include <ember/optim/schedule.hpp>
#include <ember/optim/sgd.hpp>

namespace resnet {

struct Config {
  std::string arch = "auto";
  std::string data = "fashion-mnist";
  std::int64_t epochs = 0;           // 0: the data's default
  std::int64_t batch = 0;            // 0: the data's default
  std::int64_t image_size = 224;     // synthetic and imagefolder
  std::int64_t steps_per_epoch = 0;  // 0: the whole epoch (synthetic: 50)
  std::int64_t width = 0;            // 0: 64, torchvision's (CPU Fashion-MNIST default: 16)
  std::string optimizer = "sgd";
  double lr = 0;  // 0: the optimizer's default for the batch size
  double momentum = 0.9;
  double weight_decay = 5e-5;
  double label_smoothing = 0.1;
  double warmup_epochs = 0.5;
  std::string precision = "auto";  // float | bf16 | auto (bf16 on a GPU)
  std::string device = "auto";     // cpu | cuda | auto
  bool zero_init_residual = false;
  bool sync_bn = false;        // batch norm on the global batch's statistics (under mpirun)
  double target_accuracy = 0;  // top-1, 0 < t <= 1; 0: none
  bool stop_at_target = false;
  std::int64_t stop_after = 0;  // end the run after this epoch (as if interrupted); 0: never
  double cost_per_hour = 0;     // in your currency, for the cost to accuracy
  std::vector<std::int64_t> sweep_batch;
  std::string out = "runs/resnet";
  std::string resume;           // a checkpoint path, or "auto" for --out/ckpt-last.safetensors
  std::string init_checkpoint;  // model weights to start from (a torchvision state dict)
  bool eval_only = false;       // evaluate the loaded weights and exit
  bool detect_anomaly = false;  // stop at the first operation whose output is not finite
  bool summary = false;
  std::uint64_t seed = 1;
  int workers = 0;
  std::int64_t log_every = 20;
};

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
