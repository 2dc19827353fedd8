// optim::LARS: layer-wise adaptive rate scaling (You, Gitman & Ginsburg 2017), as MLPerf's
// ResNet-50 reference trains with it. Per tensor, from its norms ||w|| and ||g||:
//
//   trust = trust_coefficient * ||w|| / (||g|| + weight_decay * ||w|| + eps)
//           (1 when ||w|| or ||g|| is 0)
//   v = momentum * v + lr * trust * (g + weight_decay * w)
//   w = w - v
//
// Tensors in a group with exclude_from_adaptation (biases and batch-norm parameters:
// optim::decay_groups puts every tensor of rank <= 1 there) take plain momentum SGD,
// v = momentum * v + lr * g, without weight decay or trust ratio. Two passes per device and
// element type: the per-tensor norms (one reduction launch and its fold), then the update.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "optimizer.hpp"

namespace ember::optim {

struct LARSOptions {
  double lr = 0.1;
  double momentum = 0.9;
  double weight_decay = 0;
  double trust_coefficient = 0.001;
  double eps = 0;
  bool exclude_from_adaptation = false;
};

namespace detail {
struct LarsHyper {
  double lr, momentum, weight_decay, trust_coefficient, eps;
  bool excluded;
};
/// (||w||^2, ||g||^2) of one element.
struct WeightAndGradSquares {
  template <class S>
  EMBER_HD std::array<double, 2> operator()(const S& s, std::int64_t j) const {
    const auto w = static_cast<double>(s.weight(j));
    const auto g = static_cast<double>(s.gradient(j));
    return {w * w, g * g};
  }
};
struct LarsUpdate {
  const double* norms;  // [slots, 2]: squared norms of w and g
  template <class S>
  EMBER_HD void operator()(const S& s, std::int64_t j) const {
    using acc = typename S::acc;
    const acc w = s.weight(j), g = s.gradient(j);
    const acc m = static_cast<acc>(s.h.momentum);
    acc v;
    if (s.h.excluded) {
      v = m * s.state(0, j) + static_cast<acc>(s.h.lr) * g;
    } else {
      using std::sqrt;
      const double wn = sqrt(norms[2 * s.index]), gn = sqrt(norms[2 * s.index + 1]);
      const double trust = wn > 0 && gn > 0
                               ? s.h.trust_coefficient * wn / (gn + s.h.weight_decay * wn + s.h.eps)
                               : 1.0;
      v = m * s.state(0, j) +
          static_cast<acc>(s.h.lr * trust) * (g + static_cast<acc>(s.h.weight_decay) * w);
    }
    s.state0[j] = v;
    s.store(j, w - v);
  }
};
}  // namespace detail

class LARS : public FusedOptimizer<LARS, LARSOptions> {
 public:
  using FusedOptimizer::FusedOptimizer;
  using Hyper = detail::LarsHyper;
  static constexpr const char* kName = "optim::LARS";
  static constexpr std::array<const char*, 1> kStateNames{"momentum_buffer"};

  static void check(const LARSOptions& o) {
    detail::check_lr(kName, o.lr);
    EMBER_CHECK(o.momentum >= 0 && o.momentum < 1,
                "ember: optim::LARS: momentum must be in [0, 1), got ", o.momentum);
    detail::check_nonnegative(kName, "weight_decay", o.weight_decay);
    EMBER_CHECK(o.trust_coefficient > 0,
                "ember: optim::LARS: trust_coefficient must be positive, got ",
                o.trust_coefficient);
    detail::check_nonnegative(kName, "eps", o.eps);
  }
  static bool uses_state(const LARSOptions&, std::size_t) { return true; }
  Hyper hyper(const LARSOptions& o, std::int64_t) const {
    return {
        o.lr, o.momentum, o.weight_decay, o.trust_coefficient, o.eps, o.exclude_from_adaptation};
  }
  template <class T, class Mode = exec::mode, class Table>
  void update(Table& table) {
    const Tensor<double> norms = table.template sums<2, detail::WeightAndGradSquares>({});
    table.template for_each_element<detail::LarsUpdate>({norms.data()});
  }
};

}  // namespace ember::optim

#if defined(EMBER_KERNELS)
EMBER_OPTIMIZER_INSTANCES(extern template, LARS)
#endif
