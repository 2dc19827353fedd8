// CPU benchmark of a ResNet training step (examples/resnet50/resnet.hpp): forward, cross-entropy
// with label smoothing, backward and an SGD step (Nesterov momentum), in float on random images,
// reported as images/s (items_per_second). bench/resnet_cpu_peer.py times the same steps with
// PyTorch on the CPU, for the ratio.
//
//   resnet_step/resnet18w16_28px/<batch>   the CPU main job's model (Fashion-MNIST sized)
//   resnet_step/resnet50_64px/<batch>      ResNet-50 at a small image size
//
// Run with OMP_WAIT_POLICY=passive when the BLAS is a pthread OpenBLAS (as bench/run_cpu.sh
// does for the operator benchmarks).
#include <benchmark/benchmark.h>

#include <cstdint>

#include <ember/ember.hpp>
#include <ember/optim/sgd.hpp>

#include "resnet50/resnet.hpp"

namespace {

using namespace ember;

void run_steps(benchmark::State& state, resnet::ResNetOptions options, std::int64_t side) {
  const std::int64_t batch = state.range(0);
  nn::manual_seed(1);
  resnet::ResNet<float> model(options);
  optim::SGD opt(optim::decay_groups(model, optim::SGDOptions{.lr = 0.01, .momentum = 0.9,
                                                              .weight_decay = 5e-5,
                                                              .nesterov = true},
                                     optim::SGDOptions{.lr = 0.01, .momentum = 0.9,
                                                       .weight_decay = 0, .nesterov = true}));
  const Var<float> x(randn<float>(Shape{batch, options.in_channels, side, side}, 2));
  const Tensor<std::int64_t> y = Tensor<std::int64_t>(cast<std::int64_t>(
      rand<float>(Shape{batch}, 3, Device::cpu(), 0.0, options.num_classes - 1e-3)));
  const CrossEntropyOptions ce{.label_smoothing = 0.1, .ignore_index = -100,
                               .reduction = Reduction::mean};
  for (auto _ : state) {
    Var<float> loss = cross_entropy(model.forward(x), y, ce);
    loss.backward();
    opt.step();
    opt.zero_grad();
    benchmark::DoNotOptimize(loss.value().data());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void resnet18w16_28px(benchmark::State& state) {
  resnet::ResNetOptions o;
  o.arch = resnet::Arch::resnet18;
  o.num_classes = 10;
  o.in_channels = 1;
  o.small_stem = true;
  o.width = 16;
  run_steps(state, o, 28);
}
void resnet50_64px(benchmark::State& state) {
  resnet::ResNetOptions o;
  o.arch = resnet::Arch::resnet50;
  o.num_classes = 1000;
  run_steps(state, o, 64);
}

}  // namespace

BENCHMARK(resnet18w16_28px)
    ->Name("resnet_step/resnet18w16_28px")
    ->Arg(32)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(resnet50_64px)
    ->Name("resnet_step/resnet50_64px")
    ->Arg(8)
    ->Arg(32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_MAIN();
