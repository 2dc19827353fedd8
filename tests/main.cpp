// The one Catch2 main shared by every test executable (compiled once, as an object library).
// It prints one line saying what this build of ember can use before the tests run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include <ember/core/cuda.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;

  // Stay quiet for --list-tests and friends, whose output tools parse.
  const auto& cfg = session.configData();
  if (!cfg.listTests && !cfg.listTestNamesOnly && !cfg.listTags && !cfg.listReporters) {
#if defined(_OPENMP)
    const int threads = omp_get_max_threads();
#else
    const int threads = 1;
#endif
    std::string cuda;
#if defined(EMBER_WITH_CUDA)
    const int gpus = ember::cuda::device_count();
    cuda = gpus > 0 ? std::to_string(gpus) + " CUDA device(s)"
                    : "CUDA build, no device (" + ember::cuda::unavailable_reason() + ")";
#else
    cuda = "CPU-only build";
#endif
    std::printf("ember tests: %d OpenMP thread(s), %s\n", threads, cuda.c_str());
    std::fflush(stdout);
  }
  return session.run();
}
