// CPU benchmark of a ResNet training step (examples/resnet50/resnet.hpp): forward, cross-entropy
// with label smoothing, backward and an SGD step (Nesterov momentum), in float (or bf16, the
// model's parameters and activations, as the trainer's --precision bf16) on random images,
// reported as images/s (items_per_second). bench/resnet_cpu_peer.py times the same steps with
// PyTorch on the CPU, for the ratio.
//
//   resnet_step/resnet18w16_28px[_nhwc]/<batch>     the CPU main job's model (Fashion-MNIST sized)
//   resnet_step/resnet18_28px[_nhwc]/<batch>        the same at torchvision's full width, 64
//   resnet_step/resnet18_48px[_nhwc][_bf16]/<batch> width 64, 3 channels at 48 px (small stem)
//   resnet_step/resnet50_64px[_nhwc]/<batch>        ResNet-50 at a small image size
//   resnet_step/resnet50_<side>px[_nhwc][_bf16]/<batch>  ResNet-50 at 128 and 224 px
// NCHW, and channels-last (_nhwc: the network's activations NHWC, as ResNetOptions::format).
// bf16 cases run where the CPU has AVX512-BF16 (else they skip with a message).
//
// Run with OMP_WAIT_POLICY=passive when the BLAS is a pthread OpenBLAS (as bench/run_cpu.sh
// does for the operator benchmarks).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <type_traits>

#include <ember/ember.hpp>
#include <ember/optim/sgd.hpp>

#include "resnet50/resnet.hpp"

namespace {

using namespace ember;

template <class T = float>
void run_steps(benchmark::State& state, resnet::ResNetOptions options, std::int64_t side) {
  if (std::is_same_v<T, bf16> && !cpu_has_avx512_bf16()) {
    state.SkipWithError("bf16 needs AVX512-BF16, which this CPU lacks");
    return;
  }
  const std::int64_t batch = state.range(0);
  nn::manual_seed(1);
  resnet::ResNet<T> model(options);
  optim::SGD opt(optim::decay_groups(
      model, optim::SGDOptions{.lr = 0.01, .momentum = 0.9, .weight_decay = 5e-5, .nesterov = true},
      optim::SGDOptions{.lr = 0.01, .momentum = 0.9, .weight_decay = 0, .nesterov = true}));
  const Var<T> x(cast<T>(randn<float>(Shape{batch, options.in_channels, side, side}, 2)));
  const Tensor<std::int64_t> y = Tensor<std::int64_t>(cast<std::int64_t>(
      rand<float>(Shape{batch}, 3, Device::cpu(), 0.0, options.num_classes - 1e-3)));
  const CrossEntropyOptions ce{
      .label_smoothing = 0.1, .ignore_index = -100, .reduction = Reduction::mean};
  for (auto _ : state) {
    Var<T> loss = cross_entropy(model.forward(x), y, ce);
    loss.backward();
    opt.step();
    opt.zero_grad();
    benchmark::DoNotOptimize(loss.value().data());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

template <std::int64_t Width, MemoryFormat Format>
void resnet18_28px(benchmark::State& state) {
  resnet::ResNetOptions o;
  o.arch = resnet::Arch::resnet18;
  o.num_classes = 10;
  o.in_channels = 1;
  o.small_stem = true;
  o.width = Width;
  o.format = Format;
  run_steps(state, o, 28);
}
template <class T, MemoryFormat Format>
void resnet18_48px(benchmark::State& state) {
  resnet::ResNetOptions o;
  o.arch = resnet::Arch::resnet18;
  o.num_classes = 10;
  o.small_stem = true;
  o.format = Format;
  run_steps<T>(state, o, 48);
}
template <MemoryFormat Format, std::int64_t Side = 64, class T = float>
void resnet50(benchmark::State& state) {
  resnet::ResNetOptions o;
  o.arch = resnet::Arch::resnet50;
  o.num_classes = 1000;
  o.format = Format;
  run_steps<T>(state, o, Side);
}

constexpr MemoryFormat nchw = MemoryFormat::contiguous, nhwc = MemoryFormat::channels_last;

}  // namespace

#define EMBER_RESNET_BENCH(fn, name, ...) \
  BENCHMARK(fn)->Name(name)->Unit(benchmark::kMillisecond)->UseRealTime()->Args({__VA_ARGS__})
EMBER_RESNET_BENCH((resnet18_28px<16, nchw>), "resnet_step/resnet18w16_28px", 32)->Arg(128);
EMBER_RESNET_BENCH((resnet18_28px<16, nhwc>), "resnet_step/resnet18w16_28px_nhwc", 32)->Arg(128);
EMBER_RESNET_BENCH((resnet18_28px<64, nchw>), "resnet_step/resnet18_28px", 32);
EMBER_RESNET_BENCH((resnet18_28px<64, nhwc>), "resnet_step/resnet18_28px_nhwc", 32);
EMBER_RESNET_BENCH((resnet50<nchw>), "resnet_step/resnet50_64px", 8)->Arg(32);
EMBER_RESNET_BENCH((resnet50<nhwc>), "resnet_step/resnet50_64px_nhwc", 8)->Arg(32);
// The sizes of issue 49's targets, float and bf16.
EMBER_RESNET_BENCH((resnet18_48px<float, nchw>), "resnet_step/resnet18_48px", 32);
EMBER_RESNET_BENCH((resnet18_48px<float, nhwc>), "resnet_step/resnet18_48px_nhwc", 32);
EMBER_RESNET_BENCH((resnet18_48px<bf16, nchw>), "resnet_step/resnet18_48px_bf16", 32);
EMBER_RESNET_BENCH((resnet18_48px<bf16, nhwc>), "resnet_step/resnet18_48px_nhwc_bf16", 32);
EMBER_RESNET_BENCH((resnet50<nchw, 128>), "resnet_step/resnet50_128px", 8);
EMBER_RESNET_BENCH((resnet50<nhwc, 128>), "resnet_step/resnet50_128px_nhwc", 8);
EMBER_RESNET_BENCH((resnet50<nchw, 128, bf16>), "resnet_step/resnet50_128px_bf16", 8);
EMBER_RESNET_BENCH((resnet50<nhwc, 128, bf16>), "resnet_step/resnet50_128px_nhwc_bf16", 8);
EMBER_RESNET_BENCH((resnet50<nchw, 224>), "resnet_step/resnet50_224px", 4);
EMBER_RESNET_BENCH((resnet50<nhwc, 224>), "resnet_step/resnet50_224px_nhwc", 4);
EMBER_RESNET_BENCH((resnet50<nchw, 224, bf16>), "resnet_step/resnet50_224px_bf16", 4);
EMBER_RESNET_BENCH((resnet50<nhwc, 224, bf16>), "resnet_step/resnet50_224px_nhwc_bf16", 4);
BENCHMARK_MAIN();
