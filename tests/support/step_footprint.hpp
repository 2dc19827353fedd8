// What a training step takes from the system and makes: once a step has run, a step whose
// shapes equal the last one's must take no new memory from the system (ember's host allocator
// serves it from its cache) and make no new oneDNN primitive (issue 17's per-step overhead).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>

#include <ember/ember.hpp>

namespace ember::testing {

struct StepFootprint {
  std::int64_t reserved_bytes = 0;  ///< host bytes held from the system: in use or cached
  std::int64_t bytes_in_use = 0;    ///< host bytes held by live tensors
  std::int64_t primitives = 0;      ///< oneDNN primitives made so far (0 without oneDNN)

  static StepFootprint now() {
    const MemoryStats m = memory_stats(Device::cpu());
    StepFootprint f;
    f.reserved_bytes = m.reserved_bytes;
    f.bytes_in_use = m.bytes_in_use;
#if defined(EMBER_WITH_DNNL)
    f.primitives = ops::onednn::primitives_created();
#endif
    return f;
  }
};

/// Runs `step` (a callable taking the step's index) twice to warm up, then `steps` more, and
/// requires that those took nothing more from the system and made no primitive.
template <class Step>
void require_steady_steps(Step&& step, int steps = 2) {
  step(0);
  step(1);
  const StepFootprint before = StepFootprint::now();
  for (int i = 0; i < steps; ++i) step(2 + i);
  const StepFootprint after = StepFootprint::now();
  INFO("host memory reserved " << before.reserved_bytes << " -> " << after.reserved_bytes
                               << " B, in use " << before.bytes_in_use << " -> "
                               << after.bytes_in_use << " B; oneDNN primitives "
                               << before.primitives << " -> " << after.primitives);
  CHECK(after.bytes_in_use == before.bytes_in_use);
  CHECK(after.reserved_bytes == before.reserved_bytes);
  CHECK(after.primitives == before.primitives);
}

}  // namespace ember::testing
