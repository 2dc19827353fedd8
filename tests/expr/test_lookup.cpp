// User code that does not write `using namespace ember` still finds the functions and
// reductions unqualified, through argument-dependent lookup on tensors and expressions.
#include <catch2/catch.hpp>

#include <ember/ember.hpp>

TEST_CASE("functions and reductions are found without using-directives", "[expr][lookup]") {
  auto x = ember::from_vector<float>({-1, 0, 1, 2}, {2, 2});
  auto b = ember::from_vector<float>({0.5f, -0.5f}, {2});
  ember::Tensor<float> y = tanh(x * 2 + b);           // ADL on an expression
  ember::Tensor<float> z = max(relu(x), exp(x) - 1);  // ADL on a tensor, then on an expression
  CHECK(y.to_vector()[0] == Approx(std::tanh(-1.5f)));
  CHECK(z.to_vector()[3] == Approx(std::exp(2.0f) - 1));
  CHECK(sum(y * 0 + 1).item() == 4.0f);
  CHECK(max(x * 1, {1}).to_vector() == std::vector<float>{0, 2});
  CHECK(argmax(x * -1).item() == 0);
}
