// Model code as a user writes it, shared by the two kinds of translation unit of one program
// (docs/design.md, "One source, two kinds of translation unit"): no translation-unit tag
// anywhere. The model is meant to run from the program's .cu file; shifted() is the user's own
// helper that both files call.
#pragma once

#include <cstdint>

#include <ember/ember.hpp>

namespace two_kinds {

template <ember::FloatingElement T>
struct TwoLayerNet : ember::nn::Module {
  ember::nn::Linear<T> fc1, fc2;

  TwoLayerNet(std::int64_t in, std::int64_t hidden, std::int64_t out, ember::Device device)
      : fc1(in, hidden, {}, device), fc2(hidden, out, {}, device) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  ember::Var<T> forward(const ember::Var<T>& x) const { return fc2(ember::relu(fc1(x))); }
  ember::Var<T> operator()(const ember::Var<T>& x) const { return forward(x); }
};

/// x * scale + shift, evaluated where it is called.
template <ember::FloatingElement T>
ember::Tensor<T> shifted(const ember::Tensor<T>& x, double scale, double shift) {
  return ember::Tensor<T>(x * scale + shift);
}

/// The expression type that both translation units evaluate, for the symbol check.
using ShiftExpr = decltype(std::declval<const ember::Tensor<float>&>() * 2.0 + 1.0);

// What each translation unit reports (host_side.cpp and device_side.cu).
struct Addresses {
  const void*
      library_evaluate;       // ember's evaluate_into<set, float, ShiftExpr> as this file sees it
  const void* user_template;  // &shifted<float>
};
Addresses host_side_addresses();
Addresses device_side_addresses();

/// Inputs made by the host-compiled file: 3 x 4 values from -1 to 1.75 in steps of 0.25.
ember::Tensor<float> host_side_inputs();
/// The host-compiled file evaluating x * 2 + 1 on x's device.
ember::Tensor<float> host_side_shift(const ember::Tensor<float>& x);

/// SGD's float master copy of a bf16 parameter of ones on `device`, made by the optimizer's
/// constructor, back on the CPU. Both files construct the same optimizer type, so each must keep
/// its own copy of the constructor: the host-compiled one cannot convert on a GPU.
ember::Tensor<float> host_side_master(ember::Device device);
ember::Tensor<float> device_side_master(ember::Device device);

struct ModelRun {
  ember::Tensor<float> output, w1, b1, w2, b2, w1_grad;
};
/// The model built (nn::manual_seed(seed)) and run forward and backward on `device` by the
/// nvcc-compiled file; the loss is the sum of the outputs. Tensors come back on the CPU.
ModelRun device_side_run(const ember::Tensor<float>& x, ember::Device device, std::uint64_t seed);

}  // namespace two_kinds
