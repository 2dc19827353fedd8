// optim::LAMB: layer-wise adaptive moments (You et al. 2019), as MLPerf's BERT reference trains
// with it (NVIDIA's fused LAMB). At a tensor's step t (from 1):
//
//   m = beta1 * m + (1 - beta1) * g,   v = beta2 * v + (1 - beta2) * g^2
//   u = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay * w
//   trust = ||w|| / ||u||   (1 when either is 0, or for a tensor excluded from adaptation)
//   w = w - lr * trust * u
//
// Tensors in a group with exclude_from_adaptation (biases and LayerNorm parameters:
// optim::decay_groups) take the Adam step u without the trust ratio; give that group
// weight_decay 0, as MLPerf does. Two passes per device and element type: the moments with the
// per-tensor norms of w and u (one reduction launch and its fold), then the update.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "optimizer.hpp"

namespace ember::optim {

struct LAMBOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-6;
  double weight_decay = 0.01;
  bool exclude_from_adaptation = false;
};

namespace detail {
struct LambHyper {
  double lr, beta1, beta2, eps, weight_decay;
  double bias_correction1, bias_correction2;
  bool excluded;
};
/// u, the Adam direction with weight decay, from the moments m and v.
template <class S>
EMBER_HD typename S::acc lamb_direction(const S& s, typename S::acc m, typename S::acc v,
                                        typename S::acc w) {
  using acc = typename S::acc;
  using std::sqrt;
  const acc mhat = m / static_cast<acc>(s.h.bias_correction1);
  const acc vhat = v / static_cast<acc>(s.h.bias_correction2);
  return mhat / (sqrt(vhat) + static_cast<acc>(s.h.eps)) + static_cast<acc>(s.h.weight_decay) * w;
}
/// Updates the moments; returns (||w||^2, ||u||^2) of the element.
struct LambMoments {
  template <class S>
  EMBER_HD std::array<double, 2> operator()(const S& s, std::int64_t j) const {
    using acc = typename S::acc;
    const acc g = s.gradient(j), w = s.weight(j);
    const acc b1 = static_cast<acc>(s.h.beta1), b2 = static_cast<acc>(s.h.beta2);
    const acc m = b1 * s.state(0, j) + (acc(1) - b1) * g;
    const acc v = b2 * s.state(1, j) + (acc(1) - b2) * g * g;
    s.state0[j] = m;
    s.state1[j] = v;
    const auto u = static_cast<double>(lamb_direction(s, m, v, w));
    const auto wd = static_cast<double>(w);
    return {wd * wd, u * u};
  }
};
struct LambUpdate {
  const double* norms;  // [slots, 2]: squared norms of w and u
  template <class S>
  EMBER_HD void operator()(const S& s, std::int64_t j) const {
    using acc = typename S::acc;
    const acc w = s.weight(j);
    const acc u = lamb_direction(s, s.state0[j], s.state1[j], w);
    double trust = 1.0;
    if (!s.h.excluded) {
      using std::sqrt;
      const double wn = sqrt(norms[2 * s.index]), un = sqrt(norms[2 * s.index + 1]);
      if (wn > 0 && un > 0) trust = wn / un;
    }
    s.store(j, w - static_cast<acc>(s.h.lr * trust) * u);
  }
};
}  // namespace detail

class LAMB : public FusedOptimizer<LAMB, LAMBOptions> {
 public:
  using FusedOptimizer::FusedOptimizer;
  using Hyper = detail::LambHyper;
  static constexpr const char* kName = "optim::LAMB";
  static constexpr std::array<const char*, 2> kStateNames{"exp_avg", "exp_avg_sq"};

  static void check(const LAMBOptions& o) {
    detail::check_lr(kName, o.lr);
    detail::check_betas(kName, o.beta1, o.beta2);
    detail::check_nonnegative(kName, "eps", o.eps);
    detail::check_nonnegative(kName, "weight_decay", o.weight_decay);
  }
  static bool uses_state(const LAMBOptions&, std::size_t) { return true; }
  Hyper hyper(const LAMBOptions& o, std::int64_t step) const {
    const auto t = static_cast<double>(step);
    return {o.lr,
            o.beta1,
            o.beta2,
            o.eps,
            o.weight_decay,
            1 - std::pow(o.beta1, t),
            1 - std::pow(o.beta2, t),
            o.exclude_from_adaptation};
  }
  template <class T, class Mode = exec::mode, class Table>
  void update(Table& table) {
    const Tensor<double> norms = table.template sums<2, detail::LambMoments>({});
    table.template for_each_element<detail::LambUpdate>({norms.data()});
  }
};

}  // namespace ember::optim

#if defined(EMBER_KERNELS)
EMBER_OPTIMIZER_INSTANCES(extern template, LAMB)
#endif
