// Mixed precision: how ember trains in bf16 or half.
//
// PyTorch's autocast keeps float parameters and casts them op by op inside a region. ember's
// element types are static, so the same policy is spelled with types, once:
//
//   - The model is built in the compute type: `Model<bf16>` (layers are templates on T).
//     matmul and conv2d on bf16/half run on tensor cores with float accumulation (cuBLASLt,
//     cuDNN); reductions, softmax, layer/batch norm statistics and losses accumulate in float
//     inside their kernels and round once on the way out.
//   - The optimizer keeps float master weights for every bf16/half parameter and updates them
//     in its fused pass, writing the rounded bf16/half copy in the same pass (optimizer.hpp).
//   - half needs loss scaling (optim::LossScaler); bf16, with float's exponent range, does not.
//   - Inputs cross into the compute type with amp::autocast<T>(x), a differentiable cast
//     (gradients flow back in the input's type); a float model converts with nn::copy_state.
//
//   using P = amp::Policy<bf16>;
//   Net<P::compute> net;                          // bf16 parameters
//   optim::AdamW opt(net, {...});                  // float master weights, automatically
//   optim::LossScaler scaler(P::scaler_options()); // disabled for bf16, enabled for half
//   Var<P::compute> loss = cross_entropy(net(amp::autocast<P::compute>(images)), labels);
//   scaler.scale(loss).backward();
//   scaler.step(opt, /*max_norm=*/1.0);
#pragma once

#include <type_traits>

#include "../autograd/var.hpp"
#include "../core/bf16.hpp"
#include "../core/dtype.hpp"
#include "../core/half.hpp"
#include "../expr/operators.hpp"
#include "loss_scaler.hpp"

namespace ember::amp {

/// The types and settings of a run whose parameters and activations are of type T.
template <FloatingElement T>
struct Policy {
  /// Parameters and activations.
  using compute = T;
  /// What the optimizer's master weights and state are kept in (acc_t: float for bf16/half).
  using master = acc_t<T>;
  /// half's narrow exponent range makes small gradients underflow; bf16 and wider do not.
  static constexpr bool needs_loss_scaling = std::is_same_v<T, half>;
  static optim::LossScalerOptions scaler_options() {
    optim::LossScalerOptions o;
    o.enabled = needs_loss_scaling;
    return o;
  }
};

}  // namespace ember::amp

namespace ember::amp::inline EMBER_UNIT_KIND {
/// x in the compute type To, differentiable (the identity when x is already of type To).
template <FloatingElement To, FloatingElement From>
Var<To> autocast(const Var<From>& x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else {
    return Var<To>(cast<To>(x));
  }
}
/// A tensor in the compute type To (a copy unless already of type To).
template <FloatingElement To, Storable From>
Tensor<To> autocast(const Tensor<From>& x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else {
    return Tensor<To>(cast<To>(x));
  }
}

}  // namespace ember::amp::inline EMBER_UNIT_KIND
