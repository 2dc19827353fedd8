// nn::Dropout: PyTorch's layer. In training each forward zeroes an element with probability p
// and scales the rest by 1 / (1 - p); its Philox (seed, offset) comes from nn::reserve_random
// (x.numel() values of the stream nn::manual_seed restarts and nn::rng_state saves), so a run
// after the same seed draws the same masks, on either device. The identity in evaluation.
#pragma once

#include "../autograd/normalization.hpp"
#include "init.hpp"
#include "module.hpp"

namespace ember::nn {

template <FloatingElement T = float>
class Dropout : public Module, public Callable<Dropout<T>> {
 public:
  double p;

  explicit Dropout(double probability = 0.5) : p(probability) {
    EMBER_CHECK(probability >= 0 && probability <= 1,
                "ember: nn::Dropout: p must be in [0, 1], got ", probability);
  }

  template <class Mode = exec::mode>
  Var<T> forward(const Var<T>& x) const {
    if (!is_training() || p == 0) return x;
    const auto [seed, offset] = reserve_random(x.value().numel());
    return dropout<T>(x, p, true, seed, offset);
  }
};

}  // namespace ember::nn
