// The loop the CPU convolutions (NCHW in conv.hpp, channels-last in conv_channels_last.hpp) run
// over a batch, forward and backward: images split over the OpenMP threads, each with its own
// scratch buffer and, for a backward, its own weight-gradient buffer, the buffers added in thread
// order after the loop, so the weight gradient does not depend on timing.
#pragma once

#include <omp.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "../matmul/gemm_cpu.hpp"
#include "conv_geometry.hpp"

namespace ember::ops::cpu {

/// body(n, gr, scratch, dw_part, first) for every image n and group gr: scratch holds
/// `scratch_size` elements; dw_part (null when wsize is 0) is the thread's [wsize] weight
/// gradient, which the body's first product on that thread (first == true) overwrites and
/// later ones accumulate into (a forward passes wsize 0 and ignores both). A batch runs an image
/// per thread with single-threaded products (many small GEMMs parallelise better that way than
/// inside the BLAS); one image leaves the threads to the BLAS. Returns the threads' weight
/// gradients summed in thread order (empty when wsize is 0).
template <class T, class Body>
std::vector<T> for_each_conv_image(const ConvGeometry& g, std::int64_t scratch_size,
                                   std::int64_t wsize, const Body& body) {
  const bool by_image = g.N > 1;
  const SerialBlas serial_blas(by_image);
  std::vector<std::vector<T>> parts;
#pragma omp parallel if (by_image)
  {
    std::vector<T> scratch(static_cast<std::size_t>(scratch_size));
    std::vector<T> part;
#pragma omp single
    parts.resize(static_cast<std::size_t>(omp_get_num_threads()));
    bool first = true;
#pragma omp for schedule(static)
    for (std::int64_t n = 0; n < g.N; ++n) {
      if (wsize > 0 && part.empty()) part.assign(static_cast<std::size_t>(wsize), T(0));
      for (std::int64_t gr = 0; gr < g.groups; ++gr) {
        body(n, gr, scratch.data(), wsize > 0 ? part.data() : nullptr, first);
      }
      first = false;
    }
    parts[static_cast<std::size_t>(omp_get_thread_num())] = std::move(part);
  }
  std::vector<T> sum(static_cast<std::size_t>(wsize), T(0));
  for (const std::vector<T>& part : parts) {
    if (part.empty()) continue;
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
  }
  return sum;
}

}  // namespace ember::ops::cpu
