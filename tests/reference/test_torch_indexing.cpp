// Joining, splitting, indexing, rearranging, sorting and einsum against PyTorch's own results
// (tests/reference/make_torch_cases.py -> data/indexing.safetensors): forward and gradients in
// float64, float32 and bf16; negative dimensions, size-0 pieces, ties, NaN and signed zeros.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "torch_oracle.hpp"

namespace {
namespace test_torch_indexing {

using ember::Tensor;
using ember::Var;
using namespace ember::testing::torch_oracle;

template <class T>
std::vector<Var<T>> all_vars(Call<T>& c) {
  std::vector<Var<T>> v;
  for (std::size_t i = 0; i < c.inputs(); ++i) v.push_back(c.var(i));
  return v;
}
template <class T>
Outputs<T> pieces(const std::vector<Var<T>>& parts) {
  Outputs<T> out;
  for (const Var<T>& p : parts) out.add(p);
  return out;
}
ember::PadMode pad_mode(const std::string& name) {
  if (name == "reflect") return ember::PadMode::reflect;
  if (name == "replicate") return ember::PadMode::replicate;
  if (name == "circular") return ember::PadMode::circular;
  return ember::PadMode::constant;
}

template <class T>
Outputs<T> run_indexing(Call<T>& c) {
  const std::string& op = c.op();
  using I = std::int64_t;
  if (op == "cat") return ember::cat(all_vars(c), c.template arg<I>("dim"));
  if (op == "stack") return ember::stack(all_vars(c), c.template arg<I>("dim"));
  if (op == "split") {
    if (c.has("sizes")) {
      return pieces(ember::split(c.var(0), c.template arg<std::vector<I>>("sizes"),
                                 c.template arg<I>("dim")));
    }
    return pieces(ember::split(c.var(0), c.template arg<I>("size"), c.template arg<I>("dim")));
  }
  if (op == "chunk") {
    return pieces(ember::chunk(c.var(0), c.template arg<I>("chunks"), c.template arg<I>("dim")));
  }
  if (op == "index_select")
    return ember::index_select(c.var(0), c.template arg<I>("dim"), c.ids(1));
  if (op == "gather") return ember::gather(c.var(0), c.template arg<I>("dim"), c.ids(1));
  if (op == "scatter_add") {
    return ember::scatter_add(c.var(0), c.template arg<I>("dim"), c.ids(1), c.var(2));
  }
  if (op == "one_hot") return ember::one_hot(c.ids(0), c.template arg<I>("n"));
  if (op == "flip") return ember::flip(c.var(0), c.template arg<std::vector<I>>("dims"));
  if (op == "roll")
    return ember::roll(c.var(0), c.template arg<I>("shift"), c.template arg<I>("dim"));
  if (op == "pad") {
    return ember::pad(c.var(0), c.template arg<std::vector<I>>("pads"),
                      pad_mode(c.template arg<std::string>("mode")),
                      c.template arg<double>("value"));
  }
  if (op == "repeat") return ember::repeat(c.var(0), c.template arg<std::vector<I>>("reps"));
  if (op == "tril") return ember::tril(c.var(0), c.template arg<I>("diagonal"));
  if (op == "triu") return ember::triu(c.var(0), c.template arg<I>("diagonal"));
  if (op == "cumsum") return ember::cumsum(c.var(0), c.template arg<I>("dim"));
  if (op == "sort" || op == "topk") {
    const auto r =
        op == "sort"
            ? ember::sort(c.var(0), c.template arg<I>("dim"), c.template arg<bool>("descending"))
            : ember::topk(c.var(0), c.template arg<I>("k"), c.template arg<I>("dim"),
                          c.template arg<bool>("largest"));
    Outputs<T> out;
    out.add(r.values);
    out.add(r.indices);
    return out;
  }
  if (op == "argsort") {
    return ember::argsort(c.template tensor<T>(0), c.template arg<I>("dim"),
                          c.template arg<bool>("descending"));
  }
  if (op == "einsum") return ember::einsum(c.template arg<std::string>("equation"), all_vars(c));
  ember::fail("no indexing case for ", op);
}

// Where ember differs from PyTorch on purpose (docs/operators.md, "Differences from PyTorch").
const std::vector<KeptDifference> kept_indexing = {
    {R"(topk\..*\.ties)",
     "topk puts the lower index first among equal values; PyTorch leaves their order unspecified "
     "(its CPU kernel's partial sort)"},
};

TEMPLATE_TEST_CASE("joining, indexing, rearranging and sorting equal PyTorch's", "[reference]",
                   double, float, ember::bf16) {
  check_group<TestType>("indexing", run_indexing<TestType>, kept_indexing);
}

}  // namespace test_torch_indexing
}  // namespace
