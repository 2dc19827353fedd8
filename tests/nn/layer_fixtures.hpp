// PyTorch's results for the nn layer tests: tests/nn/data/layers.safetensors, written by
// tests/nn/make_fixtures.py (float64; `<case>.<what>`: inputs, parameters, outputs, the seed
// gradient gy and the gradients of sum(y * gy)). Helpers to copy parameters into an ember layer
// and to compare results. Needs nlohmann_json (tests/CMakeLists.txt links it for these tests).
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <ember/ember.hpp>
#include <ember/io/safetensors.hpp>

#include "support/random_tensors.hpp"

namespace ember::testing::layers {

/// The fixture file, loaded once.
inline const NamedTensors& fixture() {
  static const NamedTensors tensors = io::load_safetensors(
      std::filesystem::path(__FILE__).parent_path() / "data" / "layers.safetensors");
  return tensors;
}
inline Tensor<double> get(const std::string& name) { return get_tensor<double>(fixture(), name); }

/// Copies the fixture's `name` into the parameter's (or buffer's) existing storage.
template <class T>
void load_into(const Tensor<T>& dst, const std::string& name) {
  const Tensor<double> src = get(name);
  INFO("fixture " << name);
  REQUIRE(dst.shape() == src.shape());
  Tensor<T> handle = dst;  // shares the storage: the layer sees the new values
  handle.copy_(src);
}
template <class T>
void load_into(const Var<T>& p, const std::string& name) {
  load_into(p.value(), name);
}

/// `got` equals the fixture's `name` within float64's tolerance, relative (1e-10 (1 + |want|)).
template <class T>
void require_matches(const Tensor<T>& got, const std::string& name, double tol = 1e-10) {
  INFO("fixture " << name);
  REQUIRE(got.defined());
  require_close(got, get(name), tol);
}

/// A leaf input that requires grad, holding the fixture's `name`.
inline Var<double> input(const std::string& name) { return param(get(name).clone()); }

/// Case `c` of a layer without parameters: y = layer(x) and x's gradient for the seed gy, both
/// against PyTorch's.
template <class Layer>
void check_forward_backward(const std::string& c, const Layer& layer) {
  const Var<double> x = input(c + ".x");
  const Var<double> y = layer(x);
  require_matches(y.value(), c + ".y");
  y.backward(get(c + ".gy"));
  require_matches(x.grad(), c + ".gx");
}

}  // namespace ember::testing::layers
