// Every elementwise function and every reduction against PyTorch's own results
// (tests/reference/make_torch_cases.py -> data/elementwise.safetensors,
// data/reductions.safetensors): forward and gradients in float64, float32 and bf16, over rank 0,
// size 1 and 0, broadcasts, strided views, numbers on either side, special values, kinks and ties.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "torch_oracle.hpp"

namespace {
namespace test_torch_elementwise {

using ember::Dims;
using ember::Tensor;
using ember::Var;
using namespace ember::testing::torch_oracle;

template <class T>
Outputs<T> run_elementwise(Call<T>& c) {
  using ember::fail;
  const std::string& op = c.op();
  if (c.has("number")) {  // a binary function with a number on one side
    const double n = c.template arg<double>("number");
    const bool right = c.template arg<std::string>("side") == "right";
    const Var<T> x = c.var(0);
#define EMBER_NUMBER_CASE(name, on_right, on_left) \
  if (op == name) return right ? Var<T>(on_right) : Var<T>(on_left);
    EMBER_NUMBER_CASE("add", x + n, n + x)
    EMBER_NUMBER_CASE("sub", x - n, n - x)
    EMBER_NUMBER_CASE("mul", x * n, n * x)
    EMBER_NUMBER_CASE("div", x / n, n / x)
    EMBER_NUMBER_CASE("pow", ember::pow(x, n), ember::pow(n, x))
    EMBER_NUMBER_CASE("minimum", ember::min(x, n), ember::min(n, x))
    EMBER_NUMBER_CASE("maximum", ember::max(x, n), ember::max(n, x))
#undef EMBER_NUMBER_CASE
    fail("no number case for ", op);
  }
#define EMBER_UNARY_CASE(name, fn) \
  if (op == name) return Var<T>(fn(c.var(0)));
  EMBER_UNARY_CASE("neg", -)
  EMBER_UNARY_CASE("abs", ember::abs)
  EMBER_UNARY_CASE("square", ember::square)
  EMBER_UNARY_CASE("sign", ember::sign)
  EMBER_UNARY_CASE("exp", ember::exp)
  EMBER_UNARY_CASE("exp2", ember::exp2)
  EMBER_UNARY_CASE("log", ember::log)
  EMBER_UNARY_CASE("log2", ember::log2)
  EMBER_UNARY_CASE("log1p", ember::log1p)
  EMBER_UNARY_CASE("expm1", ember::expm1)
  EMBER_UNARY_CASE("sqrt", ember::sqrt)
  EMBER_UNARY_CASE("rsqrt", ember::rsqrt)
  EMBER_UNARY_CASE("sin", ember::sin)
  EMBER_UNARY_CASE("cos", ember::cos)
  EMBER_UNARY_CASE("tan", ember::tan)
  EMBER_UNARY_CASE("tanh", ember::tanh)
  EMBER_UNARY_CASE("erf", ember::erf)
  EMBER_UNARY_CASE("floor", ember::floor)
  EMBER_UNARY_CASE("ceil", ember::ceil)
  EMBER_UNARY_CASE("round", ember::round)
  EMBER_UNARY_CASE("reciprocal", ember::reciprocal)
  EMBER_UNARY_CASE("sigmoid", ember::sigmoid)
  EMBER_UNARY_CASE("relu", ember::relu)
  EMBER_UNARY_CASE("silu", ember::silu)
  EMBER_UNARY_CASE("gelu", ember::gelu)
  EMBER_UNARY_CASE("gelu_tanh", ember::gelu_tanh)
#undef EMBER_UNARY_CASE
#define EMBER_BINARY_CASE(name, expression) \
  if (op == name) return Var<T>(expression);
  EMBER_BINARY_CASE("add", c.var(0) + c.var(1))
  EMBER_BINARY_CASE("sub", c.var(0) - c.var(1))
  EMBER_BINARY_CASE("mul", c.var(0) * c.var(1))
  EMBER_BINARY_CASE("div", c.var(0) / c.var(1))
  EMBER_BINARY_CASE("pow", ember::pow(c.var(0), c.var(1)))
  EMBER_BINARY_CASE("minimum", ember::min(c.var(0), c.var(1)))
  EMBER_BINARY_CASE("maximum", ember::max(c.var(0), c.var(1)))
#undef EMBER_BINARY_CASE
  if (op == "leaky_relu") {
    return Var<T>(ember::leaky_relu(c.var(0), c.template arg<double>("negative_slope")));
  }
  if (op == "softplus") {
    return Var<T>(ember::softplus(c.var(0), c.template arg<double>("beta"),
                                  c.template arg<double>("threshold")));
  }
  if (op == "clamp") {
    if (c.has("lo")) {
      return Var<T>(
          ember::clamp(c.var(0), c.template arg<double>("lo"), c.template arg<double>("hi")));
    }
    return Var<T>(ember::clamp(c.var(0), c.var(1), c.var(2)));
  }
  if (op == "lerp") {
    if (c.has("weight")) {
      return Var<T>(ember::lerp(c.var(0), c.var(1), c.template arg<double>("weight")));
    }
    return Var<T>(ember::lerp(c.var(0), c.var(1), c.var(2)));
  }
  if (op == "where") return Var<T>(ember::where(c.mask(0), c.var(1), c.var(2)));
  if (op == "masked_fill") {
    return Var<T>(ember::masked_fill(c.var(0), c.mask(1), c.template arg<double>("value")));
  }
  if (op == "logical_not") return Tensor<bool>(ember::logical_not(c.mask(0)));
  if (op == "logical_and") return Tensor<bool>(ember::logical_and(c.mask(0), c.mask(1)));
  if (op == "logical_or") return Tensor<bool>(ember::logical_or(c.mask(0), c.mask(1)));
  const Tensor<T> a = c.template tensor<T>(0);
  if (op == "isnan") return Tensor<bool>(ember::isnan(a));
  const Tensor<T> b = c.template tensor<T>(1);
  if (op == "eq") return Tensor<bool>(a == b);
  if (op == "ne") return Tensor<bool>(a != b);
  if (op == "lt") return Tensor<bool>(a < b);
  if (op == "le") return Tensor<bool>(a <= b);
  if (op == "gt") return Tensor<bool>(a > b);
  if (op == "ge") return Tensor<bool>(a >= b);
  fail("no elementwise case for ", op);
}

template <class T>
Outputs<T> run_reduction(Call<T>& c) {
  const std::string& op = c.op();
  if (op == "argmax" || op == "argmin") {
    const Tensor<T> x = c.template tensor<T>(0);
    const int dim = c.template arg<int>("dim");
    const bool keep = c.template arg<bool>("keepdim");
    return op == "argmax" ? ember::argmax(x, dim, keep) : ember::argmin(x, dim, keep);
  }
  const Var<T> x = c.var(0);
  const Dims dims(c.template arg<std::vector<std::int64_t>>("dims"));
  const bool keep = c.template arg<bool>("keepdim");
  if (op == "sum") return Var<T>(ember::sum(x, dims, keep));
  if (op == "mean") return Var<T>(ember::mean(x, dims, keep));
  if (op == "amax") return Var<T>(ember::max(x, dims, keep));
  if (op == "amin") return Var<T>(ember::min(x, dims, keep));
  if (op == "logsumexp") return Var<T>(ember::logsumexp(x, dims, keep));
  if (op == "prod") return Var<T>(ember::prod(x, dims, keep));
  if (op == "var") return Var<T>(ember::var(x, dims, keep, c.template arg<double>("correction")));
  if (op == "norm") return Var<T>(ember::norm(x, dims, keep, c.number("p")));
  ember::fail("no reduction case for ", op);
}

// Where ember differs from PyTorch on purpose (docs/operators.md, "Differences from PyTorch").
const std::vector<KeptDifference> kept_elementwise = {
    {R"(sign\..*\.kept)", "sign(NaN) is NaN: PyTorch's 0 hides the NaN (NumPy and JAX keep it)"},
    {R"(gelu\.(f32|bf16)\.kept)",
     "gelu(+inf) is +inf; PyTorch's vectorised float and bf16 kernel gives NaN (+inf for a "
     "tensor of one element, and in float64)"},
};
const std::vector<KeptDifference> kept_reductions = {
    {R"(logsumexp\..*\.all_neg_inf)",
     "logsumexp's gradient over a slice of -inf is 0 (a masked row gets none); PyTorch's is NaN"},
};

TEMPLATE_TEST_CASE("elementwise functions equal PyTorch's, forward and gradients", "[reference]",
                   double, float, ember::bf16) {
  check_group<TestType>("elementwise", run_elementwise<TestType>, kept_elementwise);
}

TEMPLATE_TEST_CASE("reductions equal PyTorch's, forward and gradients", "[reference]", double,
                   float, ember::bf16) {
  check_group<TestType>("reductions", run_reduction<TestType>, kept_reductions);
}

}  // namespace test_torch_elementwise
}  // namespace
