// examples/gpt2/gpt2.hpp against transformers' GPT2LMHeadModel (llm.c's recipe): the same weights
// and tokens (tests/examples/data/gpt2_tiny.safetensors, written by make_gpt2_fixtures.py in
// float64) give the same logits, loss and every parameter's gradient, in double and float, and 10
// AdamW steps on the batch give PyTorch's losses; Hugging Face's names and parameter counts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>
#include <ember/optim/adamw.hpp>

#include "gpt2/gpt2.hpp"

namespace {
namespace test_examples_gpt2 {

using ember::Shape;
using ember::Tensor;
using ember::Var;
namespace fs = std::filesystem;

const ember::NamedTensors& fixture() {
  static const ember::NamedTensors fx = ember::io::load_safetensors(
      fs::path(__FILE__).parent_path() / "data" / "gpt2_tiny.safetensors");
  return fx;
}

// make_gpt2_fixtures.py's CONFIG, dropout off.
gpt2::GPT2Config fixture_config() {
  return {
      .vocab_size = 97, .n_positions = 32, .n_embd = 32, .n_layer = 2, .n_head = 4, .dropout = 0.0};
}

/// GPT-2's parameter count from its configuration (the LM head is the token embedding).
std::int64_t expected_parameters(const gpt2::GPT2Config& c) {
  const std::int64_t C = c.n_embd;
  const std::int64_t block = 2 * 2 * C            // ln_1, ln_2
                             + C * 3 * C + 3 * C  // attn.c_attn
                             + C * C + C          // attn.c_proj
                             + C * 4 * C + 4 * C  // mlp.c_fc
                             + 4 * C * C + C;     // mlp.c_proj
  return c.vocab_size * C + c.n_positions * C + c.n_layer * block + 2 * C;
}

/// The largest difference between a and b, relative to b's largest magnitude.
template <class T>
double relative_difference(const Tensor<T>& a, const Tensor<double>& b) {
  const std::vector<T> x = a.contiguous().to_vector();
  const std::vector<double> y = b.contiguous().to_vector();
  REQUIRE(x.size() == y.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(x[i]) - y[i]));
    scale = std::max(scale, std::fabs(y[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

/// Hugging Face's weights, under "param/" in the fixture (float32 values, converted to T).
template <class T>
void load_fixture(gpt2::GPT2LMHeadModel<T>& model) {
  ember::io::load_state_dict(model, fixture(), {.prefix = "param/", .convert_floating = true});
}

TEST_CASE("gpt2: configurations and parameter counts", "[examples][gpt2]") {
  CHECK(expected_parameters(gpt2::config_by_name("124M")) == 124'439'808);  // Hugging Face's gpt2
  CHECK(expected_parameters(gpt2::config_by_name("350M")) == 354'823'168);  // gpt2-medium
  for (const char* name : {"tiny", "mini"}) {
    const gpt2::GPT2Config c = gpt2::config_by_name(name);
    const gpt2::GPT2LMHeadModel<float> model(c);
    INFO(name);
    CHECK(model.parameter_count() == expected_parameters(c));
  }
  REQUIRE_THROWS_WITH(gpt2::config_by_name("huge"),
                      Catch::Contains("unknown configuration 'huge'") && Catch::Contains("124M"));
  gpt2::GPT2Config odd = gpt2::GPT2Config::tiny();
  odd.n_head = 5;
  REQUIRE_THROWS_WITH(gpt2::GPT2LMHeadModel<float>(odd), Catch::Contains("multiple of n_head"));
}

TEST_CASE("gpt2: Hugging Face's names and shapes; the head is the token embedding",
          "[examples][gpt2]") {
  const gpt2::GPT2LMHeadModel<float> model(fixture_config());
  std::map<std::string, Shape> ours, theirs;
  for (const auto& [name, p] : model.named_parameters()) {
    std::visit([&, &n = name](auto* v) { ours[n] = v->shape(); }, p);
  }
  for (const auto& [name, t] : fixture()) {
    if (name.rfind("param/", 0) == 0) theirs[name.substr(6)] = t.shape();
  }
  CHECK(ours == theirs);
  // Hugging Face's init: the residual projections at 0.02 / sqrt(2 n_layer).
  const gpt2::GPT2LMHeadModel<double> big(gpt2::GPT2Config::mini());
  const auto spread = [](const Var<double>& w) {
    return std::sqrt(Tensor<double>(ember::var(w.value())).item());
  };
  CHECK(spread(big.transformer.h[0].attn.c_attn.weight) == Approx(0.02).epsilon(0.02));
  CHECK(spread(big.transformer.h[1].mlp.c_proj.weight) ==
        Approx(0.02 / std::sqrt(8.0)).epsilon(0.02));
}

TEMPLATE_TEST_CASE("gpt2: logits, loss and every gradient match transformers", "[examples][gpt2]",
                   double, float, ember::bf16) {
  gpt2::GPT2LMHeadModel<TestType> model(fixture_config());
  load_fixture(model);
  const auto ids = [](const char* n) { return ember::get_tensor<std::int64_t>(fixture(), n); };
  const auto ref = [](const std::string& n) { return ember::get_tensor<double>(fixture(), n); };
  // Tolerances from the type: eps times a constant for the depth of the chain (the logits are
  // about 30 operations deep, the gradients twice that). Measured in float: the gradients within
  // 3.4 eps of transformers' float64 values, the logits and loss closer; in bf16 (weights rounded
  // to bf16, every product and row pass in float, each result rounded once) within 1.13 eps.
  const double eps = static_cast<double>(std::numeric_limits<TestType>::epsilon());
  const Var<TestType> logits = model(ids("idx"));
  CHECK(relative_difference(logits.value(), ref("logits")) < 16 * eps);
  const Var<TestType> loss = model.loss(ids("idx"), ids("targets"));
  CHECK(static_cast<double>(loss.item()) == Approx(ref("loss").item()).epsilon(8 * eps));
  loss.backward();
  int checked = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    std::visit(
        [&, &n = name](auto* v) {
          INFO("gradient of " << n);
          CHECK(relative_difference(v->grad(), ref("grad/" + n)) < 32 * eps);
          ++checked;
        },
        p);
  }
  CHECK(checked == 28);  // 2 embeddings, 12 per block, ln_f's 2
}

TEMPLATE_TEST_CASE("gpt2: with the KV cache, token by token, the logits of the full forward",
                   "[examples][gpt2]", double, float) {
  gpt2::GPT2LMHeadModel<TestType> model(fixture_config());
  load_fixture(model);
  const Tensor<std::int64_t> idx = ember::get_tensor<std::int64_t>(fixture(), "idx");
  const ember::no_grad guard;
  const Tensor<TestType> full = model(idx).value();  // [2, 16, 97]
  // The 16 tokens fed as 5, then one at a time, then the last 3: each piece's logits are the
  // full forward's at its positions.
  gpt2::KVCache<TestType> cache;
  const double eps = std::numeric_limits<TestType>::epsilon();
  for (const auto& [start, length] : {std::pair{0, 5}, {5, 1}, {6, 1}, {7, 1}, {8, 5}, {13, 3}}) {
    INFO("tokens " << start << " to " << start + length);
    const Tensor<TestType> piece = model.forward(idx.narrow(1, start, length), &cache).value();
    CHECK(cache.length == start + length);
    Tensor<double> want = Tensor<double>(ember::cast<double>(full.narrow(1, start, length)));
    CHECK(relative_difference(piece, want) < 16 * eps);
  }
  CHECK(cache.keys.size() == 2);
  CHECK(cache.keys[0].shape() == Shape{2, 4, 16, 8});
}

TEMPLATE_TEST_CASE("gpt2: 10 AdamW steps give PyTorch's losses", "[examples][gpt2]", double,
                   float) {
  gpt2::GPT2LMHeadModel<TestType> model(fixture_config());
  load_fixture(model);
  const auto ids = [](const char* n) { return ember::get_tensor<std::int64_t>(fixture(), n); };
  // make_gpt2_fixtures.py's ADAMW; decay on tensors of rank >= 2 only.
  const ember::optim::AdamWOptions decay{
      .lr = 1e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
  ember::optim::AdamWOptions none = decay;
  none.weight_decay = 0;
  ember::optim::AdamW opt(ember::optim::decay_groups(model, decay, none));
  const std::vector<double> want = ember::get_tensor<double>(fixture(), "adamw_losses").to_vector();
  const double eps = std::numeric_limits<TestType>::epsilon();
  for (std::size_t step = 0; step < want.size(); ++step) {
    opt.zero_grad();
    const Var<TestType> loss = model.loss(ids("idx"), ids("targets"));
    INFO("step " << step);
    // Each step's error feeds the next: the bound grows with the step.
    CHECK(loss.item() == Approx(want[step]).epsilon(32 * eps * static_cast<double>(step + 1)));
    loss.backward();
    opt.step();
  }
}

}  // namespace test_examples_gpt2
}  // namespace
