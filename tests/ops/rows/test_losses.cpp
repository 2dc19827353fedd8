// cross_entropy, nll_loss, mse_loss: against the definitions in float64 (label smoothing,
// ignore_index, every reduction, K-dimensional targets, dtypes); ONNX's SoftmaxCrossEntropyLoss
// reference data; gradcheck; bad targets.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "support/onnx.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_ops_losses {

using ember::bf16;
using ember::CrossEntropyOptions;
using ember::Reduction;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;
using ember::testing::require_close;

Tensor<double> rand_tensor(const Shape& s, std::uint32_t seed) {
  return ember::testing::normal_tensor(s, 0, 2, seed);
}

Tensor<std::int64_t> rand_targets(const Shape& s, std::int64_t C, std::int64_t ignore,
                                  std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int64_t> d(0, C);  // C stands for "ignored"
  std::vector<std::int64_t> v(static_cast<std::size_t>(s.numel()));
  for (auto& t : v) {
    t = d(rng);
    if (t == C) t = ignore;
  }
  return ember::from_vector<std::int64_t>(v, s);
}

// The definition: per element -sum_c q_c log p_c with q the smoothed one-hot target.
double naive_cross_entropy(const Tensor<double>& x, const Tensor<std::int64_t>& t,
                           const CrossEntropyOptions& opt, std::vector<double>* per_element) {
  const std::int64_t N = x.size(0), C = x.size(1),
                     inner = x.numel() / std::max<std::int64_t>(N * C, 1);
  const auto xv = x.contiguous().to_vector();
  const auto tv = t.contiguous().to_vector();
  double total = 0;
  std::int64_t count = 0;
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const std::int64_t target = tv[static_cast<std::size_t>(n * inner + i)];
      double loss = 0;
      if (target != opt.ignore_index) {
        auto at = [&](std::int64_t c) {
          return xv[static_cast<std::size_t>((n * C + c) * inner + i)];
        };
        double m = -INFINITY, s = 0;
        for (std::int64_t c = 0; c < C; ++c) m = std::max(m, at(c));
        for (std::int64_t c = 0; c < C; ++c) s += std::exp(at(c) - m);
        const double lse = m + std::log(s);
        for (std::int64_t c = 0; c < C; ++c) {
          const double q = (c == target ? 1.0 - opt.label_smoothing : 0.0) +
                           opt.label_smoothing / static_cast<double>(C);
          loss -= q * (at(c) - lse);
        }
        ++count;
      }
      if (per_element) per_element->push_back(loss);
      total += loss;
    }
  }
  if (opt.reduction == Reduction::mean) return total / static_cast<double>(count);
  return total;
}

TEST_CASE("cross_entropy against the definition", "[ops][losses]") {
  for (const Shape& s : {Shape{6, 5}, Shape{3, 4, 2, 3}, Shape{1, 1}}) {
    const std::int64_t C = s[1];
    Shape ts = s;
    ts.erase(1);
    const Tensor<double> x = rand_tensor(s, 11);
    for (double smoothing : {0.0, 0.1}) {
      for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
        INFO("shape " << s.str() << " smoothing " << smoothing << " reduction "
                      << static_cast<int>(r));
        CrossEntropyOptions opt{smoothing, -1, r};
        const Tensor<std::int64_t> t = rand_targets(ts, C, s.numel() > 1 ? -1 : 0, 12);
        std::vector<double> per;
        const double want = naive_cross_entropy(x, t, opt, &per);
        const Tensor<double> got = ember::cross_entropy(x, t, opt);
        if (r == Reduction::none) {
          REQUIRE(got.shape() == ts);
          const auto g = got.to_vector();
          for (std::size_t i = 0; i < g.size(); ++i) REQUIRE(g[i] == Approx(per[i]).margin(1e-12));
        } else {
          REQUIRE(got.shape() == Shape{});
          REQUIRE(got.item() == Approx(want).epsilon(1e-12));
        }
        // float and bf16 logits: computed in float, rounded once.
        const Tensor<float> gf = ember::cross_entropy(Tensor<float>(ember::cast<float>(x)), t, opt);
        const Tensor<bf16> gb = ember::cross_entropy(Tensor<bf16>(ember::cast<bf16>(x)), t, opt);
        if (r != Reduction::none) {
          REQUIRE(gf.item() == Approx(want).epsilon(1e-5));
          REQUIRE(static_cast<double>(static_cast<float>(gb.item())) ==
                  Approx(want).epsilon(1.0 / 32));  // the logits rounded to bf16 first
        }
      }
    }
  }
}

TEST_CASE("nll_loss and mse_loss against the definition", "[ops][losses]") {
  const Tensor<double> x = rand_tensor(Shape{5, 4}, 21);
  const Tensor<double> logp = ember::log_softmax(x, 1);
  const Tensor<std::int64_t> t = ember::from_vector<std::int64_t>({0, 3, -100, 1, 2}, Shape{5});
  const auto lp = logp.to_vector();
  const double want = -(lp[0] + lp[7] + lp[13] + lp[18]) / 4;
  REQUIRE(ember::nll_loss(logp, t).item() == Approx(want).epsilon(1e-13));
  REQUIRE(ember::nll_loss(logp, t, Reduction::sum).item() == Approx(want * 4).epsilon(1e-13));
  REQUIRE(ember::cross_entropy(x, t).item() == Approx(want).epsilon(1e-12));
  // An ignore_index that is a real class: its targets add nothing (PyTorch: the kept terms over
  // the kept count, 0 for the ignored in Reduction::none).
  const Tensor<std::int64_t> t1 = ember::from_vector<std::int64_t>({0, 3, 1, 1, 2}, Shape{5});
  const double kept = -(lp[0] + lp[7] + lp[18]);
  REQUIRE(ember::nll_loss(logp, t1, Reduction::mean, 1).item() == Approx(kept / 3).epsilon(1e-13));
  REQUIRE(ember::nll_loss(logp, t1, Reduction::sum, 1).item() == Approx(kept).epsilon(1e-13));
  const auto none = ember::nll_loss(logp, t1, Reduction::none, 1).to_vector();
  REQUIRE(none == std::vector<double>{-lp[0], -lp[7], 0.0, 0.0, -lp[18]});
  const Tensor<double> y = rand_tensor(Shape{5, 4}, 22);
  double se = 0;
  const auto xv = x.to_vector(), yv = y.to_vector();
  for (std::size_t i = 0; i < xv.size(); ++i) se += (xv[i] - yv[i]) * (xv[i] - yv[i]);
  REQUIRE(ember::mse_loss(x, y).item() == Approx(se / 20).epsilon(1e-13));
  REQUIRE(ember::mse_loss(x, y, Reduction::sum).item() == Approx(se).epsilon(1e-13));
}

TEST_CASE("losses: bad targets and shapes are errors that say so", "[ops][losses]") {
  const Tensor<float> x = ember::zeros<float>(Shape{3, 4});
  REQUIRE_THROWS_WITH(
      ember::cross_entropy(x, ember::from_vector<std::int64_t>({0, 4, 1}, Shape{3})),
      Catch::Contains("target 4") && Catch::Contains("4 classes"));
  REQUIRE_THROWS_WITH(
      ember::cross_entropy(x, ember::from_vector<std::int64_t>({0, -2, 1}, Shape{3})),
      Catch::Contains("target -2") && Catch::Contains("ignore_index (-100)"));
  REQUIRE_THROWS_WITH(ember::nll_loss(x, ember::from_vector<std::int64_t>({3, 7, -100}, Shape{3})),
                      Catch::Contains("nll_loss: target 7"));
  REQUIRE_THROWS_WITH(ember::cross_entropy(x, ember::from_vector<std::int64_t>({0, 1}, Shape{2})),
                      Catch::Contains("[2]") && Catch::Contains("[3, 4]"));
  REQUIRE_THROWS_AS(
      ember::nll_loss(ember::zeros<float>(Shape{3}), ember::zeros<std::int64_t>(Shape{3})),
      ember::Error);
  // ignore_index is allowed anywhere.
  REQUIRE(
      ember::cross_entropy(x, ember::from_vector<std::int64_t>({-100, 1, 2}, Shape{3})).item() ==
      Approx(std::log(4.0)));
  // The target check and the mean's divisor are one reduction (one wait for a GPU; they were
  // three); then the row pass, the sum, and one pass dividing and rounding to T.
  const Tensor<std::int64_t> good = ember::from_vector<std::int64_t>({-100, 1, 2}, Shape{3});
  const std::uint64_t before = ember::launch_count();
  const Tensor<float> loss = ember::cross_entropy(x, good);
  CHECK(ember::launch_count() - before == 4);
  CHECK(loss.item() == Approx(std::log(4.0)));
}

TEST_CASE("cross_entropy: ONNX's SoftmaxCrossEntropyLoss reference data", "[ops][losses][onnx]") {
  namespace onnx = ember::testing::onnx;
  if (!onnx::available("test_sce_mean")) {
    WARN("libonnx-testdata is not installed: ONNX reference data not checked");
    return;
  }
  for (const char* base :
       {"test_sce_mean", "test_sce_mean_3d", "test_sce_mean_no_weight_ii",
        "test_sce_mean_no_weight_ii_3d", "test_sce_mean_no_weight_ii_4d",
        "test_sce_NCd1d2d3_none_no_weight_negative_ii", "test_sce_NCd1d2d3d4d5_none_no_weight",
        "test_sce_none", "test_sce_sum"}) {
    for (const std::string& name : {std::string(base), std::string(base) + "_log_prob"}) {
      INFO(name);
      const auto t = onnx::read_node_test(name);
      const Tensor<float> x = onnx::to_tensor<float>(t.inputs[0]);
      const Tensor<std::int64_t> targets = onnx::to_tensor<std::int64_t>(t.inputs[1]);
      const std::string red = t.attributes.get_string("reduction", "mean");
      CrossEntropyOptions opt;
      opt.reduction = red == "none"  ? Reduction::none
                      : red == "sum" ? Reduction::sum
                                     : Reduction::mean;
      opt.ignore_index = static_cast<std::int64_t>(t.attributes.get("ignore_index", -1000000));
      const Tensor<float> loss = ember::cross_entropy(x, targets, opt);
      const auto got = loss.to_vector();
      REQUIRE(got.size() == t.outputs[0].values.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        REQUIRE(got[i] == Approx(t.outputs[0].values[i]).epsilon(1e-5).margin(1e-6));
      }
      if (t.outputs.size() > 1) {  // the log-probabilities
        const auto lp = ember::log_softmax(x, 1).to_vector();
        for (std::size_t i = 0; i < lp.size(); ++i) {
          REQUIRE(lp[i] == Approx(t.outputs[1].values[i]).epsilon(1e-5).margin(1e-6));
        }
      }
    }
  }
}

TEST_CASE("gradcheck: cross_entropy, nll_loss, mse_loss", "[ops][losses][gradcheck]") {
  const Tensor<double> x = rand_tensor(Shape{4, 3, 2}, 31);
  const Tensor<std::int64_t> t =
      ember::from_vector<std::int64_t>({0, 2, -100, 1, 2, 2, 0, 1}, Shape{4, 2});
  for (double smoothing : {0.0, 0.2}) {
    for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
      auto res = ember::gradcheck(
          [&](const Vars& v) {
            return ember::cross_entropy(Var<double>(v[0] * 1.5), t, {smoothing, -100, r});
          },
          {x});
      INFO("smoothing " << smoothing << " reduction " << static_cast<int>(r) << ": " << res);
      REQUIRE(res);
      auto res2 = ember::gradcheck(
          [&](const Vars& v) { return ember::nll_loss(ember::log_softmax(v[0], 1), t, r); }, {x});
      INFO(res2);
      REQUIRE(res2);
    }
  }
  // [N, C] logits run a row at a time: the same gradients through that path, with ignored rows.
  const Tensor<double> x2 = rand_tensor(Shape{5, 7}, 33);
  const Tensor<std::int64_t> t2 = ember::from_vector<std::int64_t>({6, -100, 0, 3, 3}, Shape{5});
  for (double smoothing : {0.0, 0.2}) {
    for (Reduction r : {Reduction::none, Reduction::mean, Reduction::sum}) {
      auto res = ember::gradcheck(
          [&](const Vars& v) {
            return ember::cross_entropy(Var<double>(v[0] * 1.5), t2, {smoothing, -100, r});
          },
          {x2});
      INFO("rows: smoothing " << smoothing << " reduction " << static_cast<int>(r) << ": " << res);
      REQUIRE(res);
      // The same logits as [N, C, 1] take the expression path: equal values and gradients.
      auto a = ember::param(x2), b = ember::param(x2.reshape({5, 7, 1}));
      const CrossEntropyOptions opt{smoothing, -100, r};
      const Var<double> la = ember::cross_entropy(a, t2, opt);
      const Var<double> lb = ember::cross_entropy(b, t2.reshape({5, 1}), opt);
      require_close(la.value().reshape({la.value().numel()}),
                    lb.value().reshape({lb.value().numel()}), 1e-13);
      ember::sum(la).backward();
      ember::sum(lb).backward();
      require_close(a.grad(), b.grad().reshape({5, 7}), 1e-13);
    }
  }
  const Tensor<double> y = rand_tensor(Shape{4, 3, 2}, 32);
  auto res3 = ember::gradcheck([&](const Vars& v) { return ember::mse_loss(v[0], v[1]); }, {x, y});
  INFO(res3);
  REQUIRE(res3);
}

}  // namespace test_ops_losses
}  // namespace
