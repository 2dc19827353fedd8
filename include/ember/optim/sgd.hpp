// optim::SGD: stochastic gradient descent with momentum, dampening, Nesterov and L2 weight
// decay, exactly torch.optim.SGD's update, as one multi-tensor pass (optimizer.hpp):
//
//   d = g + weight_decay * w
//   b = d                                   at a parameter's first step (momentum != 0)
//   b = momentum * b + (1 - dampening) * d  afterwards
//   d = d + momentum * b  (nesterov)  or  d = b
//   w = w - lr * d
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "optimizer.hpp"

namespace ember::optim {

struct SGDOptions {
  double lr = 0.1;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

namespace detail {
struct SgdHyper {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
};
struct SgdUpdate {
  template <class S>
  EMBER_HD void operator()(const S& s, std::int64_t j) const {
    using acc = typename S::acc;
    const acc w = s.weight(j);
    acc d = s.gradient(j) + static_cast<acc>(s.h.weight_decay) * w;
    if (s.h.momentum != 0) {
      const acc m = static_cast<acc>(s.h.momentum);
      const acc b = s.fresh ? d : m * s.state0[j] + static_cast<acc>(1 - s.h.dampening) * d;
      s.state0[j] = b;
      d = s.h.nesterov ? d + m * b : b;
    }
    s.store(j, w - static_cast<acc>(s.h.lr) * d);
  }
};
}  // namespace detail

class SGD : public FusedOptimizer<SGD, SGDOptions> {
 public:
  using FusedOptimizer::FusedOptimizer;
  using Hyper = detail::SgdHyper;
  static constexpr const char* kName = "optim::SGD";
  static constexpr std::array<const char*, 1> kStateNames{"momentum_buffer"};

  static void check(const SGDOptions& o) {
    detail::check_lr(kName, o.lr);
    detail::check_nonnegative(kName, "momentum", o.momentum);
    detail::check_nonnegative(kName, "weight_decay", o.weight_decay);
    EMBER_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
                "ember: optim::SGD: Nesterov momentum needs momentum > 0 and no dampening");
  }
  static bool uses_state(const SGDOptions& o, std::size_t) { return o.momentum != 0; }
  Hyper hyper(const SGDOptions& o, std::int64_t) const {
    return {o.lr, o.momentum, o.dampening, o.weight_decay, o.nesterov};
  }
  template <class T, class Mode = exec::mode, class Table>
  void update(Table& table) {
    table.template for_each_element<detail::SgdUpdate>({});
  }
};

}  // namespace ember::optim

#if defined(EMBER_KERNELS)
EMBER_OPTIMIZER_INSTANCES(extern template, SGD)
#endif
