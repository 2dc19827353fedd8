// optim::SGD, LARS, AdamW, LAMB: each against its update rule written out here (scalar loops in
// float64), and against the trajectories PyTorch produced (tests/optim/make_optimizer_fixtures.py
// -> data/optimizers.safetensors); parameter groups, parameters without gradients, master
// weights for bf16/half, channels-last parameters, the state round trip, clipping, one pass per
// step.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ember/ember.hpp>
#include <ember/io/safetensors.hpp>
#include <ember/optim/adamw.hpp>
#include <ember/optim/clip.hpp>
#include <ember/optim/lamb.hpp>
#include <ember/optim/lars.hpp>
#include <ember/optim/sgd.hpp>

#include "support/launches.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_optim_optimizers {

using ember::Shape;
using ember::Tensor;
using ember::Var;
namespace optim = ember::optim;
using Vec = std::vector<double>;

/// Gives `w` the gradient `g` (exactly, in w's element type) through a backward pass.
template <class T>
void set_grad(const Var<T>& w, const Tensor<double>& g) {
  const Var<T> gv(Tensor<T>(ember::cast<T>(g)));
  Var<T> loss = ember::sum(w * gv);
  loss.backward();
}

std::vector<Tensor<double>> random_grads(const Shape& s, int steps, std::uint32_t seed) {
  std::vector<Tensor<double>> out;
  for (int k = 0; k < steps; ++k) {
    out.push_back(ember::testing::normal_tensor(s, 0, 1, seed + static_cast<std::uint32_t>(k)));
  }
  return out;
}

double norm(const Vec& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// ---- The published rules, one tensor at a time, in float64 ----------------------------------

struct SgdRef {
  optim::SGDOptions o;
  Vec buf{};
  void step(Vec& w, const Vec& g) {
    const bool first = buf.empty();
    if (first) buf.assign(w.size(), 0);
    for (std::size_t i = 0; i < w.size(); ++i) {
      double d = g[i] + o.weight_decay * w[i];
      if (o.momentum != 0) {
        buf[i] = first ? d : o.momentum * buf[i] + (1 - o.dampening) * d;
        d = o.nesterov ? d + o.momentum * buf[i] : buf[i];
      }
      w[i] -= o.lr * d;
    }
  }
};

struct AdamWRef {
  optim::AdamWOptions o;
  Vec m{}, v{};
  int t = 0;
  void step(Vec& w, const Vec& g) {
    if (m.empty()) m.assign(w.size(), 0), v.assign(w.size(), 0);
    ++t;
    const double bc1 = 1 - std::pow(o.beta1, t), bc2 = 1 - std::pow(o.beta2, t);
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] *= 1 - o.lr * o.weight_decay;
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g[i] * g[i];
      w[i] -= o.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + o.eps);
    }
  }
};

struct LarsRef {
  optim::LARSOptions o;
  Vec buf{};
  void step(Vec& w, const Vec& g) {
    if (buf.empty()) buf.assign(w.size(), 0);
    const double wn = norm(w), gn = norm(g);
    const double trust =
        wn > 0 && gn > 0 ? o.trust_coefficient * wn / (gn + o.weight_decay * wn + o.eps) : 1.0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      buf[i] = o.exclude_from_adaptation
                   ? o.momentum * buf[i] + o.lr * g[i]
                   : o.momentum * buf[i] + o.lr * trust * (g[i] + o.weight_decay * w[i]);
      w[i] -= buf[i];
    }
  }
};

struct LambRef {
  optim::LAMBOptions o;
  Vec m{}, v{};
  int t = 0;
  void step(Vec& w, const Vec& g) {
    if (m.empty()) m.assign(w.size(), 0), v.assign(w.size(), 0);
    ++t;
    const double bc1 = 1 - std::pow(o.beta1, t), bc2 = 1 - std::pow(o.beta2, t);
    Vec u(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g[i] * g[i];
      u[i] = m[i] / bc1 / (std::sqrt(v[i] / bc2) + o.eps) + o.weight_decay * w[i];
    }
    const double wn = norm(w), un = norm(u);
    const double trust = !o.exclude_from_adaptation && wn > 0 && un > 0 ? wn / un : 1.0;
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= o.lr * trust * u[i];
  }
};

/// Runs `steps` steps of optimizer Opt on three parameters of element type T against the
/// reference Ref, and compares every parameter after every step.
template <class T, class Opt, class Ref>
void check_against_reference(const typename Opt::options_type& options, double tol) {
  const std::vector<Shape> shapes{Shape{4, 3}, Shape{3}, Shape{2, 2, 3}};
  const int steps = 5;
  std::vector<Var<T>> params;
  std::vector<Vec> ref_w;
  std::vector<Ref> refs;
  std::vector<std::vector<Tensor<double>>> grads;
  for (std::size_t p = 0; p < shapes.size(); ++p) {
    const Tensor<double> init =
        ember::testing::normal_tensor(shapes[p], 0, 1, 100 + static_cast<std::uint32_t>(p));
    params.push_back(ember::param(Tensor<T>(ember::cast<T>(init))));
    // The reference starts from the rounded values the parameter holds.
    ref_w.push_back(Tensor<double>(ember::cast<double>(params.back().value())).to_vector());
    refs.push_back(Ref{options});
    grads.push_back(random_grads(shapes[p], steps, 200 + 10 * static_cast<std::uint32_t>(p)));
  }
  Opt opt(params, options);
  for (int k = 0; k < steps; ++k) {
    for (std::size_t p = 0; p < shapes.size(); ++p) {
      set_grad(params[p], grads[p][static_cast<std::size_t>(k)]);
      const Vec g =
          Tensor<double>(
              ember::cast<double>(Tensor<T>(ember::cast<T>(grads[p][static_cast<std::size_t>(k)]))))
              .to_vector();
      refs[p].step(ref_w[p], g);
    }
    opt.step();
    opt.zero_grad();
    for (std::size_t p = 0; p < shapes.size(); ++p) {
      INFO("step " << k << ", parameter " << p);
      ember::testing::require_close(params[p].value(),
                                    ember::from_vector<double>(ref_w[p], shapes[p]), tol);
    }
  }
}

TEMPLATE_TEST_CASE("optimizers follow their update rules", "[optim]", double, float) {
  const double tol = std::is_same_v<TestType, double> ? 1e-12 : 2e-5;
  SECTION("SGD") { check_against_reference<TestType, optim::SGD, SgdRef>({.lr = 0.1}, tol); }
  SECTION("SGD momentum, dampening, weight decay") {
    check_against_reference<TestType, optim::SGD, SgdRef>(
        {.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 1e-2}, tol);
  }
  SECTION("SGD Nesterov") {
    check_against_reference<TestType, optim::SGD, SgdRef>(
        {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4, .nesterov = true}, tol);
  }
  SECTION("AdamW") {
    check_against_reference<TestType, optim::AdamW, AdamWRef>({.lr = 1e-2, .weight_decay = 0.1},
                                                              tol);
  }
  SECTION("LARS") {
    check_against_reference<TestType, optim::LARS, LarsRef>(
        {.lr = 2.0, .momentum = 0.9, .weight_decay = 5e-5, .trust_coefficient = 0.001}, tol);
  }
  SECTION("LARS excluded") {
    check_against_reference<TestType, optim::LARS, LarsRef>(
        {.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-5, .exclude_from_adaptation = true}, tol);
  }
  SECTION("LAMB") {
    check_against_reference<TestType, optim::LAMB, LambRef>({.lr = 1e-2, .weight_decay = 0.01},
                                                            tol);
  }
  SECTION("LAMB excluded") {
    check_against_reference<TestType, optim::LAMB, LambRef>(
        {.lr = 1e-2, .weight_decay = 0, .exclude_from_adaptation = true}, tol);
  }
}

TEST_CASE("optimizers match PyTorch's trajectories", "[optim]") {
  const std::filesystem::path file =
      std::filesystem::path(__FILE__).parent_path() / "data" / "optimizers.safetensors";
  const ember::io::NamedTensors data = ember::io::load_safetensors(file);
  const auto meta = ember::io::read_safetensors_metadata(file);
  auto get = [&](const std::string& name) { return ember::io::get_tensor<double>(data, name); };
  int cases = 0;
  for (const auto& [name, text] : meta) {
    const nlohmann::json o = nlohmann::json::parse(text, nullptr, false);
    if (o.is_discarded() || !o.is_object() || !o.contains("optimizer")) continue;
    ++cases;
    INFO("case " << name);
    const std::string kind = o["optimizer"];
    const int nparams = o.value("params", 3), steps = o.value("steps", 5);
    const std::vector<int> excluded = o.value("excluded", std::vector<int>{});
    auto is_excluded = [&](int p) { return std::ranges::find(excluded, p) != excluded.end(); };
    std::vector<Var<double>> params;
    for (int p = 0; p < nparams; ++p) {
      params.push_back(ember::param(get(name + "/p" + std::to_string(p) + "/init").clone()));
    }
    auto run = [&](auto& opt) {
      for (int k = 0; k < steps; ++k) {
        for (int p = 0; p < nparams; ++p) {
          set_grad(params[static_cast<std::size_t>(p)],
                   get(name + "/p" + std::to_string(p) + "/grad/" + std::to_string(k)));
        }
        opt.step();
        opt.zero_grad();
        for (int p = 0; p < nparams; ++p) {
          INFO("step " << k << ", parameter " << p);
          ember::testing::require_close(
              params[static_cast<std::size_t>(p)].value(),
              get(name + "/p" + std::to_string(p) + "/after/" + std::to_string(k)), 1e-12);
        }
      }
    };
    // Excluded parameters in a second group, as optim::decay_groups builds them.
    auto groups = [&]<class O>(const O& main, const O& other) {
      std::vector<optim::ParamGroup<O>> g{{{}, main}, {{}, other}};
      for (int p = 0; p < nparams; ++p) {
        g[is_excluded(p) ? 1 : 0].params.add(params[static_cast<std::size_t>(p)]);
      }
      return g;
    };
    if (kind == "sgd") {
      optim::SGD opt(params, {.lr = o["lr"],
                              .momentum = o.value("momentum", 0.0),
                              .dampening = o.value("dampening", 0.0),
                              .weight_decay = o.value("weight_decay", 0.0),
                              .nesterov = o.value("nesterov", false)});
      run(opt);
    } else if (kind == "adamw") {
      optim::AdamW opt(params, {.lr = o["lr"],
                                .beta1 = o["beta1"],
                                .beta2 = o["beta2"],
                                .eps = o["eps"],
                                .weight_decay = o["weight_decay"]});
      run(opt);
    } else if (kind == "lars") {
      const optim::LARSOptions main{.lr = o["lr"],
                                    .momentum = o["momentum"],
                                    .weight_decay = o["weight_decay"],
                                    .trust_coefficient = o["trust_coefficient"],
                                    .eps = o.value("eps", 0.0)};
      optim::LARSOptions other = main;
      other.exclude_from_adaptation = true;
      optim::LARS opt(groups(main, other));
      run(opt);
    } else if (kind == "lamb") {
      const optim::LAMBOptions main{.lr = o["lr"],
                                    .beta1 = o["beta1"],
                                    .beta2 = o["beta2"],
                                    .eps = o["eps"],
                                    .weight_decay = o["weight_decay"]};
      optim::LAMBOptions other = main;
      other.weight_decay = 0;
      other.exclude_from_adaptation = true;
      optim::LAMB opt(groups(main, other));
      run(opt);
    } else {
      FAIL("unknown optimizer " << kind);
    }
  }
  REQUIRE(cases >= 8);
  // Clipping: torch.nn.utils.clip_grad_norm_'s total norm and clipped gradients.
  for (const char* name : {"global_norm_clip", "global_norm_clip_below"}) {
    INFO("case " << name);
    const nlohmann::json o = nlohmann::json::parse(meta.at(name));
    std::vector<Var<double>> params;
    for (int p = 0; p < 3; ++p) {
      const std::string at = std::string(name) + "/p" + std::to_string(p);
      params.push_back(ember::param(ember::zeros<double>(get(at + "/grad").shape())));
      set_grad(params.back(), get(at + "/grad"));
    }
    const double total = optim::clip_grad_norm(params, o["max_norm"]);
    REQUIRE(total == Approx(o["total_norm"].get<double>()).epsilon(1e-14));
    for (int p = 0; p < 3; ++p) {
      ember::testing::require_close(params[static_cast<std::size_t>(p)].grad(),
                                    get(std::string(name) + "/p" + std::to_string(p) + "/clipped"),
                                    1e-14);
    }
  }
}

TEST_CASE("optimizers: groups, missing gradients, one pass per step", "[optim]") {
  auto a = ember::param(ember::full<float>(Shape{3}, 1.0));
  auto b = ember::param(ember::full<float>(Shape{5}, 1.0));
  auto c = ember::param(ember::full<float>(Shape{2}, 1.0));
  optim::SGD opt(std::vector<optim::ParamGroup<optim::SGDOptions>>{{std::vector{a, c}, {.lr = 0.1}},
                                                                   {std::vector{b}, {.lr = 0.5}}});
  set_grad(a, ember::full<double>(Shape{3}, 1.0));
  set_grad(b, ember::full<double>(Shape{5}, 1.0));
  // c has no gradient: it is left alone, as PyTorch does.
  REQUIRE(ember::testing::launches([&] { opt.step(); }) == 1);
  REQUIRE(a.value().to_vector() == std::vector<float>(3, 0.9f));
  REQUIRE(b.value().to_vector() == std::vector<float>(5, 0.5f));
  REQUIRE(c.value().to_vector() == std::vector<float>(2, 1.0f));
  opt.groups()[1].lr = 0.25;
  opt.step();  // gradients still there: a second step
  REQUIRE(b.value().to_vector() == std::vector<float>(5, 0.25f));
  opt.set_lr(0.0);
  opt.step();
  REQUIRE(b.value().to_vector() == std::vector<float>(5, 0.25f));

  SECTION("a thousand parameters of all sizes are still one pass") {
    std::vector<Var<float>> many;
    for (int i = 0; i < 1000; ++i) {
      many.push_back(ember::param(ember::zeros<float>(Shape{1 + (i * 37) % 50000})));
      set_grad(many.back(), ember::full<double>(many.back().shape(), 1.0));
    }
    optim::AdamW adam(many, {});
    REQUIRE(ember::testing::launches([&] { adam.step(); }) == 1);  // fresh state: no fill pass
    REQUIRE(ember::testing::launches([&] { adam.step(); }) == 1);
    // LAMB: the norms (partials and fold), then the update.
    optim::LAMB lamb(many, {});
    REQUIRE(ember::testing::launches([&] { lamb.step(); }) == 3);
    for (const auto& p : many) REQUIRE(p.value().to_vector()[0] != 0.0f);
  }
}

TEMPLATE_TEST_CASE("optimizers: float master weights for 16-bit parameters", "[optim]", ember::bf16,
                   ember::half) {
  // lr * g = 1e-4 per step: below half an ulp of 1 in bf16 and half, so without a master copy
  // the parameter would never move.
  auto w = ember::param(ember::full<TestType>(Shape{8}, 1.0));
  optim::SGD opt(std::vector{w}, {.lr = 1e-4});
  for (int k = 0; k < 100; ++k) {
    set_grad(w, ember::full<double>(Shape{8}, 1.0));
    opt.step();
    opt.zero_grad();
  }
  const auto state = opt.state_dict();
  const Tensor<float> master = ember::io::get_tensor<float>(state, "state.0.master");
  for (float x : master.to_vector()) REQUIRE(x == Approx(0.99).epsilon(1e-5));
  for (TestType x : w.value().to_vector()) {
    REQUIRE(static_cast<float>(x) == static_cast<float>(TestType(0.99f)));
  }
  SECTION("a parameter written from outside is re-read into the master copy") {
    Tensor<TestType> value = w.value();
    value = 2.0;
    set_grad(w, ember::full<double>(Shape{8}, 1.0));
    opt.step();
    for (TestType x : w.value().to_vector()) {
      REQUIRE(static_cast<float>(x) == static_cast<float>(TestType(2.0f - 1e-4f)));
    }
  }
}

TEST_CASE("optimizers: a channels-last parameter with a contiguous gradient", "[optim]") {
  const Tensor<double> init = ember::testing::normal_tensor(Shape{2, 3, 2, 2}, 0, 1, 5);
  Tensor<float> w_cl =
      ember::empty<float>(init.shape(), ember::Device::cpu(), ember::MemoryFormat::channels_last);
  w_cl.copy_(init);
  auto w = ember::param(w_cl);
  const Tensor<double> g = ember::testing::normal_tensor(init.shape(), 0, 1, 6);
  optim::SGD opt(std::vector{w}, {.lr = 0.5});
  set_grad(w, g);
  opt.step();
  REQUIRE(w.value().is_contiguous(ember::MemoryFormat::channels_last));
  ember::testing::require_close(w.value(), Tensor<double>(init - 0.5 * g), 1e-6);
}

TEST_CASE("optimizers: state_dict round trip resumes exactly", "[optim]") {
  auto make = [] {
    return std::vector{ember::param(ember::full<float>(Shape{6}, 0.5)),
                       ember::param(ember::full<float>(Shape{2, 3}, -0.25))};
  };
  const auto grads = random_grads(Shape{6}, 6, 77);
  auto feed = [&](std::vector<Var<float>>& ps, int k) {
    set_grad(ps[0], grads[static_cast<std::size_t>(k)]);
    set_grad(ps[1], grads[static_cast<std::size_t>(5 - k)].reshape(Shape{2, 3}));
  };
  auto straight = make();
  optim::AdamW a(straight, {.lr = 0.01});
  for (int k = 0; k < 6; ++k) {
    feed(straight, k);
    a.step();
    a.zero_grad();
  }
  auto first = make();
  optim::AdamW b(first, {.lr = 0.01});
  for (int k = 0; k < 3; ++k) {
    feed(first, k);
    b.step();
    b.zero_grad();
  }
  const auto saved = b.state_dict();
  REQUIRE(saved.size() == 6);  // exp_avg, exp_avg_sq, step for each parameter
  // A new run: the parameters as saved, a fresh optimizer given the state.
  auto resumed = make();
  for (std::size_t p = 0; p < 2; ++p) {
    Tensor<float> value = resumed[p].value();
    value.copy_(first[p].value());
  }
  optim::AdamW c(resumed, {.lr = 0.01});
  c.load_state_dict(saved);
  REQUIRE(c.steps() == 3);
  for (int k = 3; k < 6; ++k) {
    feed(resumed, k);
    c.step();
    c.zero_grad();
  }
  for (std::size_t p = 0; p < 2; ++p) {
    REQUIRE(resumed[p].value().to_vector() == straight[p].value().to_vector());
  }

  SECTION("mismatched state is refused and changes nothing") {
    optim::AdamW d(make(), {});
    auto wrong_shape = saved;
    wrong_shape[0].second = ember::AnyTensor(ember::zeros<float>(Shape{7}));
    REQUIRE_THROWS_WITH(d.load_state_dict(wrong_shape),
                        Catch::Contains("state.0.exp_avg") && Catch::Contains("[7]"));
    auto wrong_type = saved;
    wrong_type[0].second = ember::AnyTensor(ember::zeros<double>(Shape{6}));
    REQUIRE_THROWS_WITH(d.load_state_dict(wrong_type), Catch::Contains("float64"));
    auto missing = saved;
    missing.erase(missing.begin() + 2);  // state.0.step
    REQUIRE_THROWS_WITH(d.load_state_dict(missing), Catch::Contains("state.0.step"));
    optim::AdamW one(std::vector{ember::param(ember::zeros<float>(Shape{6}))}, {});
    REQUIRE_THROWS_WITH(one.load_state_dict(saved), Catch::Contains("another model"));
    REQUIRE(d.steps() == 0);
  }
}

TEST_CASE("clip_grad_norm: the global norm, folded into the step or in place", "[optim]") {
  const Tensor<double> g0 = ember::full<double>(Shape{4}, 3.0);     // |g0| = 6
  const Tensor<double> g1 = ember::full<double>(Shape{2, 2}, 4.0);  // |g1| = 8
  auto w0 = ember::param(ember::zeros<double>(Shape{4}));
  auto w1 = ember::param(ember::zeros<double>(Shape{2, 2}));
  set_grad(w0, g0);
  set_grad(w1, g1);
  SECTION("in an optimizer") {
    optim::SGD opt(std::vector{w0, w1}, {.lr = 1.0});
    REQUIRE(opt.grad_norm().norm == Approx(10.0).epsilon(1e-14));
    REQUIRE(opt.clip_grad_norm(5.0) == Approx(10.0).epsilon(1e-14));
    opt.step();
    const double coef = 5.0 / (10.0 + 1e-6);
    for (double x : w0.value().to_vector()) REQUIRE(x == Approx(-3.0 * coef).epsilon(1e-14));
    for (double x : w1.value().to_vector()) REQUIRE(x == Approx(-4.0 * coef).epsilon(1e-14));
    // The gradients themselves are not rewritten, and the scale does not outlive the step.
    REQUIRE(w0.grad().to_vector() == std::vector<double>(4, 3.0));
    REQUIRE(opt.grad_norm().norm == Approx(10.0).epsilon(1e-14));
    REQUIRE_THROWS_AS(opt.clip_grad_norm(0.0), ember::Error);
  }
  SECTION("in place, as torch.nn.utils.clip_grad_norm_") {
    REQUIRE(optim::clip_grad_norm(std::vector{w0, w1}, 20.0) == Approx(10.0).epsilon(1e-14));
    REQUIRE(w0.grad().to_vector() == std::vector<double>(4, 3.0));  // under max_norm: unchanged
    REQUIRE(optim::clip_grad_norm(std::vector{w0, w1}, 1.0) == Approx(10.0).epsilon(1e-14));
    const double coef = 1.0 / (10.0 + 1e-6);
    for (double x : w1.grad().to_vector()) REQUIRE(x == Approx(4.0 * coef).epsilon(1e-14));
  }
  SECTION("an inf gradient is an error") {
    set_grad(w0, ember::full<double>(Shape{4}, INFINITY));
    REQUIRE_THROWS_WITH(optim::clip_grad_norm(std::vector{w0, w1}, 1.0),
                        Catch::Contains("inf or NaN"));
  }
}

TEST_CASE("optimizers: bad options and parameters are errors", "[optim]") {
  auto w = ember::param(ember::zeros<float>(Shape{3}));
  REQUIRE_THROWS_WITH(optim::SGD(std::vector{w}, {.lr = -1}), Catch::Contains("lr"));
  REQUIRE_THROWS_WITH(optim::SGD(std::vector{w}, {.lr = 0.1, .nesterov = true}),
                      Catch::Contains("Nesterov"));
  REQUIRE_THROWS_WITH(optim::AdamW(std::vector{w}, {.beta1 = 1.0}), Catch::Contains("betas"));
  REQUIRE_THROWS_WITH(optim::LARS(std::vector{w}, {.trust_coefficient = 0}),
                      Catch::Contains("trust_coefficient"));
  REQUIRE_THROWS_WITH(optim::SGD(std::vector{w, w}, {}), Catch::Contains("twice"));
  const Var<float> constant(ember::zeros<float>(Shape{3}));
  REQUIRE_THROWS_WITH(optim::SGD(std::vector{constant}, {}),
                      Catch::Contains("does not require grad"));
  auto base = ember::zeros<float>(Shape{4, 4});
  REQUIRE_THROWS_WITH(optim::SGD(std::vector{ember::param(base.t())}, {}),
                      Catch::Contains("strided view"));
}

TEST_CASE("gradient accumulation over micro-batches equals the full batch", "[optim]") {
  // The loss of a batch of 8 rows is the mean over rows; two micro-batches of 4 each give half
  // of it, their gradients add up until zero_grad, and scale_grads(1/2) makes the mean.
  const Tensor<double> x = ember::testing::normal_tensor(Shape{8, 3}, 0, 1, 41);
  auto run = [&](bool accumulate) {
    auto w = ember::param(ember::full<double>(Shape{3}, 0.5));
    optim::SGD opt(std::vector{w}, {.lr = 0.1, .momentum = 0.9});
    for (int step = 0; step < 3; ++step) {
      if (accumulate) {
        for (int half = 0; half < 2; ++half) {
          const Var<double> xs(x.slice(0, 4 * half, 4 * half + 4).contiguous());
          Var<double> loss = ember::mean(ember::square(ember::sum(xs * w, ember::Dims{1}) - 1.0));
          loss.backward();
        }
        opt.scale_grads(0.5);
      } else {
        Var<double> loss =
            ember::mean(ember::square(ember::sum(Var<double>(x) * w, ember::Dims{1}) - 1.0));
        loss.backward();
      }
      opt.step();
      opt.zero_grad();
    }
    return w.value().to_vector();
  };
  const std::vector<double> full = run(false), micro = run(true);
  for (std::size_t i = 0; i < full.size(); ++i) REQUIRE(micro[i] == Approx(full[i]).epsilon(1e-13));
}

}  // namespace test_optim_optimizers
}  // namespace
