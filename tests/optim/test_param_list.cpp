// What an optimizer takes as its parameters (optim::ParamList): a braced list of Vars (element
// types may differ), a std::vector<Var<T>>, a module's parameters() or the module itself; and
// that <ember/ember.hpp> alone brings optim/ (this file includes nothing else of ember).
#include <catch2/catch.hpp>

#include <vector>

#include <ember/ember.hpp>

using ember::bf16;
using ember::Shape;
using ember::Var;
namespace optim = ember::optim;

TEST_CASE("optimizers take a braced list, a vector, parameters() or a module", "[optim]") {
  ember::nn::Linear<float> lin(3, 2);
  auto extra = ember::param(ember::full<bf16>(Shape{4}, 1.0));
  optim::AdamW braced({lin.weight, lin.bias}, optim::AdamWOptions{.lr = 0.1});
  REQUIRE(braced.parameter_count() == 2);
  optim::SGD mixed({lin.weight, extra}, {.lr = 0.5});
  REQUIRE(mixed.parameter_count() == 2);
  optim::SGD from_parameters(lin.parameters<float>(), {.lr = 0.1});
  REQUIRE(from_parameters.parameter_count() == 2);
  optim::SGD from_module(lin, {.lr = 0.1});
  REQUIRE(from_module.parameter_count() == 2);
  optim::LAMB from_vector(std::vector<Var<float>>{lin.weight}, {});
  REQUIRE(from_vector.parameter_count() == 1);

  // A step of the mixed list: the weight has no gradient and stays; the bf16 parameter moves.
  const std::vector<float> weight = lin.weight.value().to_vector();
  ember::sum(extra).backward();  // a gradient of ones
  mixed.step();
  REQUIRE(lin.weight.value().to_vector() == weight);
  for (bf16 v : extra.value().to_vector()) REQUIRE(float(v) == 0.5f);
}
