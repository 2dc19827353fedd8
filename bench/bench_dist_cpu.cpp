// Data parallelism on CPU ranks, under mpirun (bench/dist_cpu.sh runs it on 1 and 2 ranks):
//
//   allreduce_f32/{ember,mpi}/<bytes>   ember's dist::all_reduce against MPI_Allreduce called
//       directly on the same buffer, float sums from 1 KiB to 256 MiB, as bus bandwidth in
//       nccl-tests' sense (algbw = bytes / time, busbw = algbw * 2 (n - 1) / n: what each rank's
//       link carries in a ring);
//   ddp_step/resnet18w16/<batch per rank>   a ResNet-18 (width 16, 28 px, channels-last) SGD
//       step with DistributedDataParallel, images/s over all ranks: on 2 ranks against 1 rank at
//       the same per-rank batch, the weak-scaling efficiency; `exposed_ms` is the time the
//       backward's end waited for all-reduces still running, `grad_allreduce_ms` the time the
//       same bytes take to all-reduce alone (hidden share = 1 - exposed / alone).
//
// Every rank runs the same fixed iteration counts (Google Benchmark's adaptive counts would
// differ between ranks and deadlock); rank 0 reports.
//
//   mpirun -np 2 build/test/bench/bench_dist_cpu --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>
#include <ember/optim/sgd.hpp>

#include "resnet50/resnet.hpp"

#if !EMBER_WITH_MPI
#error "bench_dist_cpu needs MPI (Debian: libopenmpi-dev)"
#endif

namespace {

namespace dist = ember::dist;

void all_reduce(benchmark::State& state, bool through_ember) {
  const std::int64_t bytes = state.range(0);
  // Zeros stay zeros however often they are summed: the same work every iteration.
  ember::Tensor<float> t = ember::zeros<float>(ember::Shape{bytes / 4});
  const int n = dist::world_size();
  for (auto _ : state) {
    if (through_ember) {
      dist::all_reduce(t);
    } else {
      MPI_Allreduce(MPI_IN_PLACE, t.data(), static_cast<int>(t.numel()), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    }
  }
  const double moved = static_cast<double>(bytes) * static_cast<double>(state.iterations());
  state.counters["algbw_GBps"] = benchmark::Counter(moved / 1e9, benchmark::Counter::kIsRate);
  state.counters["busbw_GBps"] =
      benchmark::Counter(moved / 1e9 * 2.0 * (n - 1) / std::max(n, 1), benchmark::Counter::kIsRate);
  state.counters["ranks"] = n;
}

void register_sizes(const char* name, bool through_ember) {
  for (std::int64_t bytes = 1024; bytes <= (std::int64_t{256} << 20); bytes *= 4) {
    // About 2^28 bytes per repetition, at least 5 and at most 2000 calls: fixed, so that every
    // rank makes the same calls.
    const auto iterations = std::clamp<std::int64_t>((std::int64_t{1} << 28) / bytes, 5, 2000);
    benchmark::RegisterBenchmark(name, all_reduce, through_ember)
        ->Arg(bytes)
        ->Iterations(iterations)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

void ddp_step(benchmark::State& state) {
  using namespace ember;
  const std::int64_t batch = state.range(0);
  resnet::ResNetOptions o;
  o.arch = resnet::Arch::resnet18;
  o.num_classes = 10;
  o.in_channels = 1;
  o.small_stem = true;
  o.width = 16;
  o.format = MemoryFormat::channels_last;
  nn::manual_seed(1);
  resnet::ResNet<float> model(o);
  dist::DistributedDataParallel ddp(model);
  optim::SGD opt(model, optim::SGDOptions{.lr = 0.01, .momentum = 0.9, .nesterov = true});
  const Var<float> x(
      randn<float>(Shape{batch, 1, 28, 28}, 2 + static_cast<std::uint64_t>(dist::rank())));
  const Tensor<std::int64_t> y = Tensor<std::int64_t>(
      cast<std::int64_t>(rand<float>(Shape{batch}, 3, Device::cpu(), 0.0, 10 - 1e-3)));
  const auto step = [&] {
    Var<float> loss = cross_entropy(model.forward(x), y);
    loss.backward();
    opt.step();
    opt.zero_grad();
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: allocations, oneDNN's primitives
  double exposed = 0;
  for (auto _ : state) {
    step();
    exposed += ddp.last_backward().exposed_seconds;
  }
  const double n = static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations() * batch * dist::world_size());
  state.counters["exposed_ms"] = 1e3 * exposed / n;
  // The same bytes all-reduced alone, blocking.
  const Tensor<float> grads = zeros<float>(Shape{model.parameter_count(true)});
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) dist::all_reduce(grads);
  state.counters["grad_allreduce_ms"] =
      dist::world_size() > 1
          ? 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 5
          : 0.0;
  state.counters["ranks"] = dist::world_size();
}

// Prints nothing: the reporter of ranks other than 0.
class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  dist::World world = dist::init(argc, argv);
  register_sizes("allreduce_f32/ember", true);
  register_sizes("allreduce_f32/mpi", false);
  for (const std::int64_t batch : {32, 64}) {
    benchmark::RegisterBenchmark("ddp_step/resnet18w16", ddp_step)
        ->Arg(batch)
        ->Iterations(20)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  if (world.rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    Silent silent;
    benchmark::RunSpecifiedBenchmarks(&silent, &silent);
  }
  benchmark::Shutdown();
  return 0;
}
