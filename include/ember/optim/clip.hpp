// optim::clip_grad_norm: torch.nn.utils.clip_grad_norm_ for parameters outside an optimizer:
// scales every gradient in place by min(1, max_norm / (norm + 1e-6)), where norm is the global
// L2 norm of all gradients together. One reduction pass and one scaling pass per device and
// element type. (With an optimizer, prefer opt.clip_grad_norm(max_norm): its scaling rides in
// the update's own pass.)
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <variant>
#include <vector>

#include "optimizer.hpp"

namespace ember::optim::detail::inline EMBER_UNIT_KIND {

template <class T>
struct GradSlot {
  T* grad;
  double scale;
};
struct SquaredOf {
  template <class S>
  EMBER_HD std::array<double, 1> operator()(const S& s, std::int64_t j) const {
    const auto g = static_cast<double>(s.grad[j]);
    return {g * g};
  }
};
struct ScaleBy {
  template <class S>
  EMBER_HD void operator()(const S& s, std::int64_t j) const {
    using acc = acc_t<std::remove_cvref_t<decltype(s.grad[0])>>;
    s.grad[j] = static_cast<std::remove_cvref_t<decltype(s.grad[0])>>(static_cast<acc>(s.grad[j]) *
                                                                      static_cast<acc>(s.scale));
  }
};

/// Calls f(table) with one table of gradients per device and element type, each slot carrying
/// `scale` (writable: a shared gradient is copied first).
template <class F>
void for_each_grad_table(const ParamList& params, double scale, F&& f) {
  auto one_type = [&]<class T>(std::type_identity<T>) {
    std::vector<Device> devices;
    std::vector<autograd::VarNode<T>*> nodes;
    for (const AnyVar& v : params.vars) {
      if (const auto* var = std::get_if<Var<T>>(&v)) {
        autograd::VarNode<T>* n = var->node().get();
        if (!n->grad.defined()) continue;  // none, or the implicit 1 of loss.backward()
        n->own_grad();
        EMBER_CHECK(n->grad.is_contiguous() || n->grad.is_contiguous(MemoryFormat::channels_last),
                    "ember: clip_grad_norm: a gradient of shape ", n->grad.shape().str(),
                    " is a strided view");
        nodes.push_back(n);
        if (std::ranges::find(devices, n->grad.device()) == devices.end()) {
          devices.push_back(n->grad.device());
        }
      }
    }
    for (const Device d : devices) {
      MultiTensor<GradSlot<T>> table(d);
      for (autograd::VarNode<T>* n : nodes) {
        if (n->grad.device() == d) table.add({n->grad.data(), scale}, n->grad.numel());
      }
      f(table);
    }
  };
  one_type(std::type_identity<float>{});
  one_type(std::type_identity<double>{});
  one_type(std::type_identity<bf16>{});
  one_type(std::type_identity<half>{});
}
}  // namespace ember::optim::detail::inline EMBER_UNIT_KIND

namespace ember::optim::inline EMBER_UNIT_KIND {

/// Clips the gradients of `params` to a global L2 norm of at most max_norm; returns the norm
/// before clipping. A non-finite norm is an ember::Error, nothing scaled.
template <class = void>  // compiled only where called (docs/design.md)
double clip_grad_norm(const ParamList& params, double max_norm) {
  EMBER_CHECK(max_norm > 0, "ember: clip_grad_norm: max_norm must be positive, got ", max_norm);
  double sq = 0;
  detail::for_each_grad_table(params, 1.0, [&](auto& table) {
    const Tensor<double> host = table.template sums<1, detail::SquaredOf>({}).to(Device::cpu());
    for (std::int64_t i = 0; i < host.numel(); ++i) sq += host.data()[i];
  });
  const double norm = std::sqrt(sq);
  EMBER_CHECK(std::isfinite(norm), "ember: clip_grad_norm: the gradients' norm is ", norm,
              " (an inf or NaN gradient)");
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1) {
    detail::for_each_grad_table(
        params, coef, [&](auto& table) { table.template for_each_element<detail::ScaleBy>({}); });
  }
  return norm;
}

}  // namespace ember::optim::inline EMBER_UNIT_KIND
