// The CPU's BLAS, where ember was configured with one (EMBER_WITH_BLAS, cmake/EmberBlas.cmake):
// Intel's oneMKL (EMBER_WITH_MKL), threaded by libgomp like ember's own loops, else a CBLAS such
// as OpenBLAS, with a thread pool of its own. Its header, its name, and SerialBlas.
#pragma once

#if defined(EMBER_WITH_MKL)
#include <mkl_cblas.h>
#include <mkl_service.h>
#elif defined(EMBER_WITH_BLAS)
#include <cblas.h>
#endif

namespace ember::ops::cpu {

/// The BLAS this build calls, as benchmarks and messages name it.
constexpr const char* blas_library() {
#if defined(EMBER_WITH_MKL)
  return "oneMKL";
#elif defined(OPENBLAS_VERSION)
  return "OpenBLAS";
#elif defined(EMBER_WITH_BLAS)
  return "CBLAS";
#else
  return "none";
#endif
}

/// While alive (and engaged), the BLAS runs every product in the calling thread: for code that
/// calls gemm() from inside its own OpenMP loop (one product per image of a batch), where BLAS
/// threads would only compete with OpenMP's for the same cores. Restores the previous setting
/// on destruction. ember's own kernel needs no guard: inside a parallel region its loop runs in
/// that thread.
class SerialBlas {
 public:
#if defined(EMBER_WITH_MKL)
  // MKL's setting for the calling thread only (0: the global one, restored as such).
  explicit SerialBlas(bool engage = true)
      : engaged_(engage), previous_(engage ? mkl_set_num_threads_local(1) : 0) {}
  ~SerialBlas() {
    if (engaged_) mkl_set_num_threads_local(previous_);
  }

 private:
  bool engaged_;
  int previous_;

 public:
#elif defined(EMBER_WITH_BLAS) && defined(OPENBLAS_VERSION)
  explicit SerialBlas(bool engage = true) : previous_(engage ? openblas_get_num_threads() : 1) {
    if (previous_ != 1) openblas_set_num_threads(1);
  }
  ~SerialBlas() {
    if (previous_ != 1) openblas_set_num_threads(previous_);
  }

 private:
  int previous_;

 public:
#else
  explicit SerialBlas(bool = true) {}
#endif
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
};

}  // namespace ember::ops::cpu
