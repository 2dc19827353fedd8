// nn::ModuleList: modules built in place, registered under their indices with PyTorch's names,
// walked in order by the model's own loop, reached by train/eval and the optimizer.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <ember/ember.hpp>

namespace {
namespace test_nn_module_list {

using ember::Shape;
using ember::Tensor;
using ember::Var;
namespace nn = ember::nn;

/// A block whose forward takes more than a Var (what nn::Sequential cannot hold).
struct Block : nn::Module {
  nn::Linear<float> fc;
  explicit Block(std::int64_t width) : fc(width, width) { register_module("fc", fc); }
  Var<float> forward(const Var<float>& x, float scale) const { return fc(x) * scale; }
};

struct Model : nn::Module {
  nn::ModuleList<Block> h;
  explicit Model(int layers) {
    for (int i = 0; i < layers; ++i) h.emplace_back(4);
    register_module("h", h);
  }
};

TEST_CASE("nn::ModuleList: PyTorch's names, order, indexing, train/eval", "[nn]") {
  nn::manual_seed(0);
  Model model(3);
  REQUIRE(model.h.size() == 3);
  REQUIRE_FALSE(model.h.empty());
  std::vector<std::string> names;
  for (const auto& [name, p] : model.named_parameters()) names.push_back(name);
  REQUIRE(names == std::vector<std::string>{"h.0.fc.weight", "h.0.fc.bias", "h.1.fc.weight",
                                            "h.1.fc.bias", "h.2.fc.weight", "h.2.fc.bias"});
  REQUIRE(&model.h[1].fc == &(*std::next(model.h.begin())).fc);
  REQUIRE_THROWS_WITH(model.h[3], Catch::Contains("module 3 of 3"));
  int visited = 0;
  for (const Block& block : model.h) {
    REQUIRE(&block == &model.h[static_cast<std::size_t>(visited)]);
    ++visited;
  }
  REQUIRE(visited == 3);
  model.eval();
  for (const Block& block : model.h) REQUIRE_FALSE(block.is_training());
  model.train();
  REQUIRE(model.h[2].fc.is_training());
}

TEST_CASE("nn::ModuleList: the model's own loop trains every block", "[nn]") {
  nn::manual_seed(1);
  Model model(2);
  const Var<float> x(ember::randn<float>({5, 4}, 7));
  Var<float> y = x;
  for (const Block& block : model.h) y = block.forward(y, 0.5f);
  ember::sum(y * y).backward();
  const std::vector<Var<float>> params = model.parameters<float>();
  REQUIRE(params.size() == 4);
  for (const Var<float>& p : params) {
    REQUIRE(p.grad().defined());
    REQUIRE(ember::sum(ember::abs(p.grad())).item() > 0.0f);
  }
}

}  // namespace test_nn_module_list
}  // namespace
