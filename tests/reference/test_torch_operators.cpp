// The operators of docs/operators.md against PyTorch's own results
// (tests/reference/make_torch_cases.py -> data/operators.safetensors): matmul, linear,
// feed_forward, conv2d, pooling, softmax, the losses, the normalisations, attention (both
// kernels), embedding and dropout; forward, every input's gradient and the running statistics, in
// float64, float32 and bf16, with the options users set.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "torch_oracle.hpp"

namespace {
namespace test_torch_operators {

using ember::Tensor;
using ember::Var;
using namespace ember::testing::torch_oracle;

ember::Activation activation(const std::string& name) {
  if (name == "relu") return ember::Activation::relu;
  if (name == "gelu") return ember::Activation::gelu;
  if (name == "gelu_tanh") return ember::Activation::gelu_tanh;
  return ember::Activation::none;
}
ember::Reduction reduction(const std::string& name) {
  if (name == "sum") return ember::Reduction::sum;
  if (name == "none") return ember::Reduction::none;
  return ember::Reduction::mean;
}
template <class T>
std::array<std::int64_t, 2> pair(const Call<T>& c, const char* name, std::int64_t otherwise) {
  if (!c.has(name)) return {otherwise, otherwise};
  const auto v = c.template arg<std::vector<std::int64_t>>(name);
  return {v.at(0), v.at(1)};
}
template <class T>
ember::Pool2dOptions pool_options(const Call<T>& c) {
  ember::Pool2dOptions o;
  o.kernel = pair(c, "kernel", 1);
  o.stride = pair(c, "stride", 0);
  o.padding = pair(c, "padding", 0);
  o.dilation = pair(c, "dilation", 1);
  o.ceil_mode = c.arg("ceil_mode", false);
  o.count_include_pad = c.arg("count_include_pad", true);
  o.divisor_override = c.template arg<std::int64_t>("divisor_override", 0);
  return o;
}
template <class T>
Tensor<T> values(std::vector<double> v) {
  std::vector<T> t;
  for (const double x : v) t.push_back(static_cast<T>(x));
  return ember::from_vector<T>(t, ember::Shape{static_cast<std::int64_t>(t.size())});
}

template <class T>
Outputs<T> run_operator(Call<T>& c) {
  const std::string& op = c.op();
  if (op == "matmul") return ember::matmul(c.var(0), c.var(1));
  if (op == "linear") {
    const Tensor<T> none;
    if (c.inputs() == 2) {
      return ember::linear(c.var(0), c.var(1), none,
                           activation(c.template arg<std::string>("act")));
    }
    return ember::linear(c.var(0), c.var(1), c.var(2),
                         activation(c.template arg<std::string>("act")));
  }
  if (op == "feed_forward") {
    return ember::feed_forward(c.var(0), c.var(1), c.var(2), c.var(3), c.var(4),
                               activation(c.template arg<std::string>("act")));
  }
  if (op == "conv2d") {
    ember::Conv2dOptions o;
    o.stride = pair(c, "stride", 1);
    o.padding = pair(c, "padding", 0);
    o.dilation = pair(c, "dilation", 1);
    o.groups = c.template arg<std::int64_t>("groups");
    if (c.inputs() == 2) return ember::conv2d(c.var(0), c.var(1), o);
    return ember::conv2d(c.var(0), c.var(1), c.var(2), o);
  }
  if (op == "max_pool2d") return ember::max_pool2d(c.var(0), pool_options(c));
  if (op == "avg_pool2d") return ember::avg_pool2d(c.var(0), pool_options(c));
  if (op == "adaptive_avg_pool2d") {
    return ember::adaptive_avg_pool2d(c.var(0), pair(c, "out", 1));
  }
  if (op == "softmax") return ember::softmax(c.var(0), c.template arg<int>("axis"));
  if (op == "log_softmax") return ember::log_softmax(c.var(0), c.template arg<int>("axis"));
  if (op == "cross_entropy") {
    ember::CrossEntropyOptions o;
    o.label_smoothing = c.template arg<double>("label_smoothing");
    o.ignore_index = c.template arg<std::int64_t>("ignore_index");
    o.reduction = reduction(c.template arg<std::string>("reduction"));
    return ember::cross_entropy(c.var(0), c.ids(1), o);
  }
  if (op == "nll_loss") {
    return ember::nll_loss(c.var(0), c.ids(1), reduction(c.template arg<std::string>("reduction")),
                           c.template arg<std::int64_t>("ignore_index"));
  }
  if (op == "mse_loss") {
    return ember::mse_loss(c.var(0), c.var(1), reduction(c.template arg<std::string>("reduction")));
  }
  if (op == "layer_norm") {
    const double eps = c.template arg<double>("eps");
    if (c.has("normalized")) {
      const ember::Shape normalized(c.template arg<std::vector<std::int64_t>>("normalized"));
      return ember::layer_norm(c.var(0), normalized, Tensor<T>(), Tensor<T>(), eps);
    }
    return ember::layer_norm(c.var(0), c.var(1), c.var(2), eps);
  }
  if (op == "dropout_add_layer_norm") {
    return ember::dropout_add_layer_norm(c.var(0), c.var(1), c.var(2), c.var(3),
                                         c.template arg<double>("eps"));
  }
  if (op == "batch_norm" || op == "batch_norm_add_relu") {
    const Tensor<T> mean = values<T>({-1, 0, 1}), var = values<T>({0.5, 1.25, 2});
    const bool training = c.template arg<bool>("training");
    const double momentum = c.template arg<double>("momentum"), eps = c.template arg<double>("eps");
    Outputs<T> out;
    if (op == "batch_norm") {
      out.add(ember::batch_norm(c.var(0), c.var(1), c.var(2), mean, var, training, momentum, eps));
    } else {
      out.add(ember::batch_norm_add_relu(c.var(0), c.var(3), c.var(1), c.var(2), mean, var,
                                         training, momentum, eps));
    }
    out.add(mean);
    out.add(var);
    return out;
  }
  if (op == "scaled_dot_product_attention") {
    ember::AttentionOptions o;
    o.causal = c.arg("causal", false);
    if (c.has("scale")) o.scale = c.template arg<double>("scale");
    if (c.template arg<std::string>("causal_align", "upper_left") == "lower_right") {
      o.causal_align = ember::CausalAlign::lower_right;
    }
    o.kernel = c.template arg<std::string>("kernel") == "flash" ? ember::AttentionKernel::flash
                                                                : ember::AttentionKernel::scores;
    const Tensor<bool> mask = c.inputs() == 4 ? c.mask(3) : Tensor<bool>();
    return ember::scaled_dot_product_attention(c.var(0), c.var(1), c.var(2), mask, o);
  }
  if (op == "embedding") {
    std::optional<std::int64_t> padding;
    std::optional<double> max_norm;
    if (c.has("padding_idx")) padding = c.template arg<std::int64_t>("padding_idx");
    if (c.has("max_norm")) max_norm = c.template arg<double>("max_norm");
    Outputs<T> out;
    out.add(ember::embedding(c.var(0), c.ids(1), padding, max_norm, c.arg("norm_type", 2.0)));
    out.add(c.var(0).value());  // the table after max_norm's renormalisation in place
    return out;
  }
  if (op == "dropout") {
    return ember::dropout(c.var(0), c.template arg<double>("p"), c.template arg<bool>("training"),
                          /*seed=*/1);
  }
  ember::fail("no operator case for ", op);
}

TEMPLATE_TEST_CASE("operators equal PyTorch's, forward and gradients", "[reference]", double, float,
                   ember::bf16) {
  check_group<TestType>("operators", run_operator<TestType>);
}

}  // namespace test_torch_operators
}  // namespace
