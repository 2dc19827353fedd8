// All-reduce on CPU ranks: ember's dist::all_reduce against MPI_Allreduce called directly on
// the same buffer, float sums from 1 KiB to 256 MiB, as bus bandwidth in nccl-tests' sense
// (algbw = bytes / time, busbw = algbw * 2 (n - 1) / n: what each rank's link carries in a ring).
// Run under mpirun (bench/dist_cpu.sh); every rank runs the same fixed iteration counts (Google
// Benchmark's adaptive counts would differ between ranks and deadlock), rank 0 reports.
//
//   mpirun -np 2 build-bench/bench/bench_dist_cpu --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>

#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>

#if !defined(EMBER_WITH_MPI)
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
