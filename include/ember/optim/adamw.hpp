// optim::AdamW: Adam with decoupled weight decay (Loshchilov & Hutter), exactly
// torch.optim.AdamW's update (amsgrad off), as one multi-tensor pass (optimizer.hpp). At a
// parameter's step t (from 1):
//
//   w = w * (1 - lr * weight_decay)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g^2
//   w = w - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "optimizer.hpp"

namespace ember::optim {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
};

namespace detail {
struct AdamWHyper {
  double lr, beta1, beta2, eps, decay;  // decay = 1 - lr * weight_decay
  double step_size, bias_correction2_sqrt;
};
struct AdamWUpdate {
  template <class S>
  EMBER_HD void operator()(const S& s, std::int64_t j) const {
    using acc = typename S::acc;
    const acc g = s.gradient(j);
    const acc w = s.weight(j) * static_cast<acc>(s.h.decay);
    const acc b1 = static_cast<acc>(s.h.beta1), b2 = static_cast<acc>(s.h.beta2);
    const acc m = b1 * s.state(0, j) + (acc(1) - b1) * g;
    const acc v = b2 * s.state(1, j) + (acc(1) - b2) * g * g;
    s.state0[j] = m;
    s.state1[j] = v;
    using std::sqrt;
    const acc denom =
        sqrt(v) / static_cast<acc>(s.h.bias_correction2_sqrt) + static_cast<acc>(s.h.eps);
    s.store(j, w - static_cast<acc>(s.h.step_size) * (m / denom));
  }
};
}  // namespace detail

class AdamW : public FusedOptimizer<AdamW, AdamWOptions> {
 public:
  using FusedOptimizer::FusedOptimizer;
  using Hyper = detail::AdamWHyper;
  static constexpr const char* kName = "optim::AdamW";
  static constexpr std::array<const char*, 2> kStateNames{"exp_avg", "exp_avg_sq"};

  static void check(const AdamWOptions& o) {
    detail::check_lr(kName, o.lr);
    detail::check_betas(kName, o.beta1, o.beta2);
    detail::check_nonnegative(kName, "eps", o.eps);
    detail::check_nonnegative(kName, "weight_decay", o.weight_decay);
  }
  static bool uses_state(const AdamWOptions&, std::size_t) { return true; }
  Hyper hyper(const AdamWOptions& o, std::int64_t step) const {
    const auto t = static_cast<double>(step);
    return {o.lr,
            o.beta1,
            o.beta2,
            o.eps,
            1 - o.lr * o.weight_decay,
            o.lr / (1 - std::pow(o.beta1, t)),
            std::sqrt(1 - std::pow(o.beta2, t))};
  }
  template <class T, class Mode = exec::mode, class Table>
  void update(Table& table) {
    table.template for_each_element<detail::AdamWUpdate>({});
  }
};

}  // namespace ember::optim

#if defined(EMBER_KERNELS)
EMBER_OPTIMIZER_INSTANCES(extern template, AdamW)
#endif
