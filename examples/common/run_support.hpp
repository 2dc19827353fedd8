// What the three example trainers (examples/resnet50, examples/bert, examples/gpt2) do alike
// around their training loop: main() (trainer::main: OpenBLAS's idle threads put to sleep, a
// file-size limit reported instead of ending the process, the ranks joined, the options read,
// settled and checked with exit status 2 for a bad one, the device from --device), the compute
// type --precision names, the check that the loss is finite, printing on rank 0 only, waiting for
// the device before reading a clock, the rank of a label among scores, durations as h:mm:ss, the
// end of the results report, and the curves drawn from the JSONL metrics by
// scripts/plot_metrics.py.
#pragma once

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <system_error>
#include <utility>

#include <unistd.h>

#include <ember/dist/collectives.hpp>
#include <ember/dist/world.hpp>
#include <ember/ember.hpp>

#include "common/exit_status.hpp"

namespace trainer {

/// OpenBLAS's pthreads spin (sched_yield) for about 2^28 cycles after each product before they
/// sleep, so between products the trainer's own OpenMP passes share the cores with spinning
/// threads: a BERT-tiny step on 2 cores runs at 72 sequences/s so, 92 when they sleep at once
/// (OPENBLAS_THREAD_TIMEOUT=4; a single BLAS thread gives 74). OpenBLAS reads that variable only
/// as it loads, before main, so when it is unset this sets it and runs the program again (the
/// same arguments, through /proc/self/exe). Returns when nothing was to be done (already set,
/// another BLAS, or the exec failed: then the program goes on as it is).
inline void quiet_blas_threads([[maybe_unused]] char** argv) {
#if defined(OPENBLAS_VERSION) && defined(__linux__)
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT") != nullptr) return;
  if (setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0) != 0) return;
  execv("/proc/self/exe", argv);
#endif
}

/// A file may not grow past RLIMIT_FSIZE: the kernel then sends SIGXFSZ, whose default action
/// ends the process without a word, and a half-written checkpoint would be the only trace.
/// Ignored, the write fails with EFBIG instead, which io::TempFile reports as an Error naming
/// the file (the previous checkpoint stays as it was). A full disk (ENOSPC) needs nothing.
inline void report_file_size_limit_as_error() { std::signal(SIGXFSZ, SIG_IGN); }

/// Runs `check` (settling and validating the options); an error there is printed as one line
/// and gives kExitBadOption.
template <class Check>
std::optional<int> check_options(Check&& check) {
  try {
    check();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kExitBadOption;
  }
  return std::nullopt;
}

/// Throws unless `dir` is a directory this process may create files in, or can be created: the
/// nearest existing folder on its path must be a writable directory. Checked with the options,
/// before any data is read; nothing is created here. `option` names it in the error ("--out").
inline void require_writable_directory(const std::filesystem::path& dir, const char* program,
                                       const char* option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path existing = fs::absolute(dir, ec);
  if (ec) existing = dir;
  while (!fs::exists(existing, ec) && existing.has_parent_path() &&
         existing != existing.parent_path()) {
    existing = existing.parent_path();
  }
  EMBER_CHECK(fs::is_directory(existing, ec), program, ": ", option, " '", dir.string(), "': '",
              existing.string(), "' is not a directory");
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    const int err = errno;
    ember::fail(program, ": ", option, " '", dir.string(), "': cannot create files in '",
                existing.string(), "': ", std::system_category().message(err));
  }
}

/// A run must not train on a non-finite loss: throws naming the step (1-based) when `loss` is
/// NaN or infinite. Reading a GPU's loss waits for the device, so the trainers call this every
/// step on the CPU and, on a GPU, where they read the loss anyway (every --log-every steps).
inline void check_finite_loss(double loss, std::int64_t step, const char* program) {
  EMBER_CHECK(std::isfinite(loss), program, ": step ", step, ": the loss is ", loss,
              "; stopping rather than training on it (--detect-anomaly names the first operation "
              "whose output is not finite)");
}

/// --batch-size (`what`: "global batch" or "global micro-batch") must split evenly over `ranks`.
inline void check_batch_splits(std::int64_t batch, int ranks, const char* what,
                               const char* program) {
  EMBER_CHECK(batch % ranks == 0, program, ": --batch-size ", batch, " (the ", what,
              ") does not split over ", ranks, " ranks: choose a multiple of ", ranks);
}

/// The device `choice` names: cpu, cuda, or auto (a GPU when one is usable). With several
/// processes on a host, each takes the GPU of its local rank. `program` names the caller in the
/// error.
inline ember::Device pick_device(const std::string& choice, const char* program,
                                 int local_rank = 0) {
  if (choice == "cpu") return ember::Device::cpu();
  if (choice == "cuda") return ember::Device::cuda(local_rank);
  EMBER_CHECK(choice == "auto", program, ": --device must be cpu, cuda or auto, got '", choice,
              "'");
#if defined(EMBER_CUDA_KERNELS)
  if (ember::cuda::available()) return ember::Device::cuda(local_rank);
#endif
  return ember::Device::cpu();
}

/// printf on rank 0 only (llm.c's printf0): the other ranks of a data-parallel run stay quiet.
[[gnu::format(printf, 1, 2)]] inline void printf0(const char* format, ...) {
  if (ember::dist::rank() != 0) return;
  std::va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::fflush(stdout);
}

/// A stream that discards what is written to it: the progress bar and the MLPerf log of the
/// ranks other than 0.
inline std::ostream& nowhere() {
  static std::ostream discard(nullptr);
  return discard;
}

/// The mean of `x` over the ranks (x itself in a world of one): the loss every rank reports.
inline double mean_over_ranks(double x) {
  if (ember::dist::world_size() == 1) return x;
  const ember::Tensor<double> t = ember::from_vector<double>({x});
  ember::dist::all_reduce(t, ember::dist::ReduceOp::avg);
  return t.item();
}

/// Waits for the device's queued work (a clock read after it measures the work).
inline void wait_for_device(ember::Device device) {
  if (device.is_cuda()) ember::cuda::synchronize(device.index());
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The rank of class `label` among `n` scores: how many classes score strictly higher (0: a top-1
/// hit, below 5: a top-5 hit). Evaluations count hits with it on the host.
inline std::int64_t rank_of(const float* scores, std::int64_t n, std::int64_t label) {
  const float truth = scores[label];
  std::int64_t higher = 0;
  for (std::int64_t k = 0; k < n; ++k) higher += scores[k] > truth;
  return higher;
}

/// Seconds as h:mm:ss.
inline std::string hms(double s) {
  char buf[32];
  const auto t = static_cast<long long>(std::llround(s));
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
  return buf;
}

/// Draws OUT/metrics.jsonl into OUT/curves.png under `title` with scripts/plot_metrics.py when
/// python3 and matplotlib are there (rank 0; EMBER_SOURCE_DIR: the repository, defined by
/// examples/CMakeLists.txt).
inline void plot_curves(const std::filesystem::path& out, const std::string& title) {
  const std::filesystem::path script =
      std::filesystem::path(EMBER_SOURCE_DIR) / "scripts" / "plot_metrics.py";
  if (ember::dist::rank() != 0 || !std::filesystem::exists(script)) return;
  // Debian's python3-matplotlib belongs to Debian's interpreter, which another python3 earlier
  // on the PATH (a pyenv or venv one) would not see.
  const std::string python =
      std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::filesystem::path jsonl = out / "metrics.jsonl", png = out / "curves.png";
  const std::string cmd = python + " '" + script.string() + "' '" + jsonl.string() + "' --out '" +
                          png.string() + "' --title '" + title + "' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) == 0) {
    std::printf("curves: %s\n", png.string().c_str());
  } else {
    std::printf("curves: not drawn (scripts/plot_metrics.py needs python3-matplotlib)\n");
  }
}

/// The compute type --precision names (float or bf16; checked with the options): `f(T{})`.
template <class F>
decltype(auto) with_precision(const std::string& precision, F&& f) {
  if (precision == "bf16") return f(ember::bf16{});
  return f(float{});
}

/// main() of a trainer, the same for the three. In order: OpenBLAS's idle threads put to sleep,
/// the file-size limit reported, the ranks joined (under mpirun; MPI may take its own arguments
/// out of argv), then the trainer's own three functions, found in its namespace beside `Config`:
/// parse_options (options.cpp: --help, or a bad option, ends the program here),
/// settle_defaults(c, device) (the defaults that depend on --device) and validate_options(c)
/// (every option checked: an ember::Error is a bad option, one line on stderr and exit status 2,
/// before any data is read). Then `program(c, device, world)` is the run; an exception from it is
/// printed as one line and gives exit status 1.
template <class Config, class Program>
int main(int argc, char** argv, const char* name, Program&& program) {
  quiet_blas_threads(argv);
  report_file_size_limit_as_error();
  ember::dist::World world = ember::dist::init(argc, argv);
  Config c;
  if (const auto status = parse_options(c, argc, argv)) return *status;
  ember::Device device = ember::Device::cpu();
  if (const auto status = check_options([&] {
        device = pick_device(c.device, name, world.local_rank());
        settle_defaults(c, device);
        validate_options(c);
      })) {
    return *status;
  }
  try {
    return program(std::as_const(c), device, world);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kExitFailure;
  }
}

}  // namespace trainer
