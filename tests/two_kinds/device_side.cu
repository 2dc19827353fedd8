// The nvcc-compiled translation unit of the two-kinds program: the model runs here, on either
// device, on data the host-compiled file prepared.
#include "user_model.hpp"

namespace two_kinds {

Addresses device_side_addresses() {
  return {reinterpret_cast<const void*>(
              &ember::exec::evaluate_into<ember::exec::StoreOp::set, float, ShiftExpr>),
          reinterpret_cast<const void*>(&shifted<float>)};
}

ModelRun device_side_run(const ember::Tensor<float>& x, ember::Device device, std::uint64_t seed) {
  ember::nn::manual_seed(seed);
  TwoLayerNet<float> net(4, 5, 2, device);
  const ember::Var<float> out = net(ember::Var<float>(x.to(device)));
  ember::sum(out).backward();
  const ember::Device cpu = ember::Device::cpu();
  return {out.value().to(cpu),          net.fc1.weight.value().to(cpu),
          net.fc1.bias.value().to(cpu), net.fc2.weight.value().to(cpu),
          net.fc2.bias.value().to(cpu), net.fc1.weight.grad().to(cpu)};
}

ember::Tensor<float> device_side_master(ember::Device device) {
  const ember::Var<ember::bf16> w =
      ember::param(ember::full<ember::bf16>(ember::Shape{3}, 1.0, device));
  const ember::optim::SGD opt(std::vector{w}, {.lr = 0.1});
  return ember::get_tensor<float>(opt.state_dict(), "state.0.master");
}

}  // namespace two_kinds
