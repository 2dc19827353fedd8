// The consumer's program, compiled from app.cpp (host compiler) and app.cu (nvcc): a fused
// expression over broadcast operands, checked element by element against plain C++.
#pragma once

#include <cmath>
#include <cstdio>
#include <vector>

#include <ember/ember.hpp>

inline int consumer_main(const char* name) {
  using namespace ember;
  // Evaluate on the GPU only where this translation unit can launch kernels and a GPU exists.
#if defined(EMBER_CUDA_KERNELS)
  const Device device = ember::cuda::available() ? Device::cuda(0) : Device::cpu();
#else
  const Device device = Device::cpu();
#endif
  const std::vector<float> av = {1, 2, 3, 4, 5, 6};
  const std::vector<float> bv = {0.5f, -1.0f, 2.0f};
  const Tensor<float> a = from_vector<float>(av, {2, 3}, device);
  const Tensor<float> b = from_vector<float>(bv, {3}, device);

  const auto before = launch_count();
  const Tensor<float> y = exp(a * b) * 0.25f + sqrt(a) - b;  // one fused launch
  const auto launches = launch_count() - before;
  const std::vector<float> got = y.to_vector();

  int bad = 0;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      const double x = av[i * 3 + j], w = bv[j];
      const double want = std::exp(x * w) * 0.25 + std::sqrt(x) - w;
      const double g = got[static_cast<std::size_t>(i * 3 + j)];
      if (std::fabs(g - want) > 1e-5 * (1.0 + std::fabs(want))) {
        std::printf("%s: y[%d][%d] = %.7g, want %.7g\n", name, i, j, g, want);
        ++bad;
      }
    }
  }
  std::printf("%s: ember on %s, %d mismatches, %llu launch(es)\n", name, device.str().c_str(), bad,
              static_cast<unsigned long long>(launches));
  return bad == 0 && launches == 1 ? 0 : 1;
}
