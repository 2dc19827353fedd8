// The host-compiled translation unit of the two-kinds program: it prepares the data and
// evaluates ember expressions of its own on the CPU.
#include "user_model.hpp"

namespace two_kinds {

Addresses host_side_addresses() {
  return {reinterpret_cast<const void*>(
              &ember::exec::evaluate_into<ember::exec::StoreOp::set, float, ShiftExpr>),
          reinterpret_cast<const void*>(&shifted<float>)};
}

ember::Tensor<float> host_side_inputs() {
  const ember::Tensor<float> steps = ember::cast<float>(ember::arange<std::int64_t>(12));
  return ember::Tensor<float>(steps * 0.25 - 1.0).reshape(ember::Shape{3, 4});
}

ember::Tensor<float> host_side_shift(const ember::Tensor<float>& x) {
  return ember::Tensor<float>(x * 2.0 + 1.0);
}

ember::Tensor<float> host_side_master(ember::Device device) {
  const ember::Var<ember::bf16> w =
      ember::param(ember::full<ember::bf16>(ember::Shape{3}, 1.0, device));
  const ember::optim::SGD opt(std::vector{w}, {.lr = 0.1});
  return ember::get_tensor<float>(opt.state_dict(), "state.0.master");
}

}  // namespace two_kinds
