// optim schedules: each against its closed form at chosen steps, composition (Warmup, Offset,
// Schedule copies), bad arguments, and every lr of PyTorch's own schedulers over 51 steps
// (tests/optim/data/schedules.json, written by make_schedule_fixtures.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ember/optim/schedule.hpp>

namespace {
namespace test_optim_schedule {

namespace optim = ember::optim;
namespace fs = std::filesystem;
using Catch::Contains;

constexpr double kPi = std::numbers::pi;

bool close(double got, double want, double rel = 1e-12) {
  return std::abs(got - want) <= rel * std::max(std::abs(got), std::abs(want));
}

fs::path data_path(const std::string& name) {
  return fs::path(__FILE__).parent_path() / "data" / name;
}

// The ember schedule a fixture case describes.
optim::Schedule from_json(const nlohmann::json& j) {
  const std::string kind = j.at("kind");
  if (kind == "StepDecay") return optim::StepDecay{j.at("lr"), j.at("step_size"), j.at("gamma")};
  if (kind == "MultiStepDecay")
    return optim::MultiStepDecay{j.at("lr"), j.at("milestones").get<std::vector<std::int64_t>>(),
                                 j.at("gamma")};
  if (kind == "CosineDecay")
    return optim::CosineDecay{j.at("lr"), j.at("decay_steps"), j.at("min_lr")};
  if (kind == "PolynomialDecay")
    return optim::PolynomialDecay{j.at("lr"), j.at("end_lr"), j.at("decay_steps"), j.at("power")};
  if (kind == "Warmup")
    return optim::warmup(j.at("warmup_steps"), from_json(j.at("after")), j.at("start_factor"));
  FAIL("unknown schedule kind " << kind);
  return optim::Constant{0.0};
}

TEST_CASE("optim schedules: closed forms", "[optim]") {
  SECTION("Constant") {
    const optim::Constant s{0.25};
    CHECK(s(0) == 0.25);
    CHECK(s(1'000'000'000'000) == 0.25);
    CHECK(s.base_lr() == 0.25);
  }
  SECTION("StepDecay: drops at multiples of step_size") {
    const optim::StepDecay s{0.1, 30, 0.1};
    CHECK(s(0) == 0.1);
    CHECK(s(29) == 0.1);
    CHECK(close(s(30), 0.1 * 0.1));
    CHECK(close(s(59), 0.1 * 0.1));
    CHECK(close(s(60), 0.1 * 0.1 * 0.1));
    CHECK(close(s(95), 0.1 * std::pow(0.1, 3)));
  }
  SECTION("MultiStepDecay: drops at each milestone, given in any order") {
    const optim::MultiStepDecay s{1.0, {80, 30, 60}, 0.5};
    CHECK(s.milestones == std::vector<std::int64_t>{30, 60, 80});
    CHECK(s(29) == 1.0);
    CHECK(s(30) == 0.5);
    CHECK(s(60) == 0.25);
    CHECK(s(79) == 0.25);
    CHECK(s(80) == 0.125);
    CHECK(s(10'000) == 0.125);
    const optim::MultiStepDecay twice{1.0, {5, 5}, 0.5};
    CHECK(twice(4) == 1.0);
    CHECK(twice(5) == 0.25);
    const optim::MultiStepDecay none{0.3, {}, 0.5};
    CHECK(none(100) == 0.3);
  }
  SECTION("PolynomialDecay: MLPerf's formula, held at end_lr") {
    const double lr = 10.0, end = 1e-4;
    const std::int64_t T = 100;
    const optim::PolynomialDecay s{lr, end, T, 2.0};
    for (const std::int64_t t : {0, 1, 37, 99}) {
      const double left = 1.0 - static_cast<double>(t) / 100.0;
      CHECK(close(s(t), (lr - end) * left * left + end));
    }
    CHECK(s(T) == end);
    CHECK(s(T + 500) == end);
    const optim::PolynomialDecay linear{0.004, 0.0, 8, 1.0};
    CHECK(close(linear(2), 0.004 * 0.75));
    CHECK(linear(8) == 0.0);
    const optim::PolynomialDecay root{1.0, 0.0, 4, 0.5};
    CHECK(close(root(3), 0.5));
  }
  SECTION("CosineDecay: half a cosine to min_lr, held there") {
    const optim::CosineDecay s{0.1, 40, 0.001};
    CHECK(s(0) == 0.1);
    CHECK(close(s(20), 0.001 + 0.099 * 0.5));
    CHECK(close(s(10), 0.001 + 0.099 * 0.5 * (1 + std::cos(kPi / 4))));
    CHECK(close(s(40), 0.001));
    CHECK(close(s(41), 0.001));
    CHECK(close(s(1000), 0.001));
    CHECK(optim::CosineDecay{2.0, 10}(10) == 0.0);  // min_lr defaults to 0
  }
  SECTION("Warmup: linear from start_factor * base, then `after` from its step 0") {
    const optim::Warmup s{4, optim::StepDecay{0.8, 3, 0.5}, 0.25};
    CHECK(s.base_lr() == 0.8);
    CHECK(close(s(0), 0.2));
    CHECK(close(s(1), 0.8 * (0.25 + 0.75 * 0.25)));
    CHECK(close(s(3), 0.8 * (0.25 + 0.75 * 0.75)));
    CHECK(s(4) == 0.8);  // after(0)
    CHECK(s(6) == 0.8);  // after(2)
    CHECK(s(7) == 0.4);  // after(3)
    // start_factor 0 (the default): MLPerf's lr * t / W; the first step has lr 0.
    const auto mlperf = optim::warmup(5, optim::PolynomialDecay{10.0, 1e-4, 95, 2.0});
    CHECK(mlperf(0) == 0.0);
    CHECK(close(mlperf(2), 10.0 * 2 / 5));
    CHECK(mlperf(5) == 10.0);
    CHECK(close(mlperf(5 + 19), (10.0 - 1e-4) * std::pow(1 - 19.0 / 95, 2) + 1e-4));
    CHECK(mlperf(100) == 1e-4);
    // No warmup steps: just `after`.
    const optim::Warmup none{0, optim::Constant{0.5}};
    CHECK(none(0) == 0.5);
  }
  SECTION("Offset under Warmup: MLPerf BERT's decay over the global step") {
    const double lr = 4e-3;
    const std::int64_t W = 10, total = 100;
    const auto s = optim::warmup(W, optim::Offset{W, optim::PolynomialDecay{lr, 0.0, total, 1.0}});
    CHECK(close(s(3), lr * 3 / 10));
    for (const std::int64_t t : {10, 11, 50, 99})
      CHECK(close(s(t), lr * (1 - static_cast<double>(t) / static_cast<double>(total))));
    CHECK(s(100) == 0.0);
    CHECK(s.base_lr() == lr);
  }
  SECTION("Schedule: holds any schedule by value; copies and nesting") {
    optim::Schedule s = optim::CosineDecay{1.0, 10};
    const optim::Schedule copy = s;
    s = optim::Constant{3.0};
    CHECK(s(5) == 3.0);
    CHECK(close(copy(5), 0.5));
    CHECK(copy.base_lr() == 1.0);
    // A warmup of a warmup: the outer one ramps to the inner one's base lr.
    const optim::Schedule nested = optim::warmup(2, optim::warmup(2, optim::Constant{1.0}, 0.5));
    const std::vector<double> want = {0.0, 0.5, 0.5, 0.75, 1.0, 1.0};
    for (std::int64_t t = 0; t < 6; ++t) CHECK(nested(t) == want[static_cast<std::size_t>(t)]);
  }
}

TEST_CASE("optim schedules: bad arguments name the schedule and the value", "[optim]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_AS(optim::Constant{inf}, ember::Error);
  REQUIRE_THROWS_WITH(optim::Constant{inf},
                      Contains("Constant") && Contains("lr") && Contains("inf"));
  REQUIRE_THROWS_WITH(optim::Constant{-0.1}, Contains("Constant") && Contains("-0.1"));
  REQUIRE_THROWS_WITH((optim::StepDecay{nan, 3, 0.1}), Contains("StepDecay") && Contains("nan"));
  REQUIRE_THROWS_WITH((optim::StepDecay{0.1, 0, 0.1}),
                      Contains("StepDecay") && Contains("step_size") && Contains("got 0"));
  REQUIRE_THROWS_WITH((optim::StepDecay{0.1, 3, -1.0}),
                      Contains("StepDecay") && Contains("gamma") && Contains("-1"));
  REQUIRE_THROWS_WITH((optim::MultiStepDecay{0.1, {3, -2}, 0.1}),
                      Contains("MultiStepDecay") && Contains("milestone") && Contains("-2"));
  REQUIRE_THROWS_WITH((optim::PolynomialDecay{0.1, 0.0, 0, 1.0}),
                      Contains("PolynomialDecay") && Contains("decay_steps") && Contains("got 0"));
  REQUIRE_THROWS_WITH((optim::PolynomialDecay{0.1, 0.0, -5, 1.0}),
                      Contains("PolynomialDecay") && Contains("-5"));
  REQUIRE_THROWS_WITH((optim::PolynomialDecay{0.1, inf, 10, 1.0}),
                      Contains("PolynomialDecay") && Contains("end_lr") && Contains("inf"));
  REQUIRE_THROWS_WITH((optim::PolynomialDecay{0.1, 0.0, 10, 0.0}),
                      Contains("PolynomialDecay") && Contains("power"));
  REQUIRE_THROWS_WITH((optim::CosineDecay{0.1, 0}),
                      Contains("CosineDecay") && Contains("decay_steps") && Contains("got 0"));
  REQUIRE_THROWS_WITH((optim::CosineDecay{0.1, 10, nan}),
                      Contains("CosineDecay") && Contains("min_lr") && Contains("nan"));
  REQUIRE_THROWS_WITH((optim::Warmup{-1, optim::Constant{0.1}}),
                      Contains("Warmup") && Contains("warmup_steps") && Contains("-1"));
  REQUIRE_THROWS_WITH(optim::warmup(5, optim::Constant{0.1}, 1.5),
                      Contains("Warmup") && Contains("start_factor") && Contains("1.5"));
  REQUIRE_THROWS_WITH((optim::Offset{-3, optim::Constant{0.1}}),
                      Contains("Offset") && Contains("-3"));
  // Negative steps, through every schedule and through Schedule.
  REQUIRE_THROWS_WITH(optim::Constant{0.1}(-1),
                      Contains("Constant") && Contains("step") && Contains("-1"));
  REQUIRE_THROWS_WITH((optim::StepDecay{0.1, 3, 0.1}(-2)), Contains("StepDecay") && Contains("-2"));
  REQUIRE_THROWS_WITH((optim::MultiStepDecay{0.1, {3}, 0.1}(-2)), Contains("MultiStepDecay"));
  REQUIRE_THROWS_WITH((optim::PolynomialDecay{0.1, 0.0, 3, 1.0}(-2)), Contains("PolynomialDecay"));
  REQUIRE_THROWS_WITH((optim::CosineDecay{0.1, 3}(-2)), Contains("CosineDecay"));
  const optim::Schedule s = optim::warmup(3, optim::Constant{0.1});
  REQUIRE_THROWS_WITH(s(-7), Contains("Warmup") && Contains("-7"));
  REQUIRE_THROWS_WITH((optim::Offset{2, optim::Constant{0.1}}(-1)), Contains("Offset"));
}

TEST_CASE("optim schedules: PyTorch's schedulers, step by step", "[optim]") {
  std::ifstream in(data_path("schedules.json"));
  REQUIRE(in.good());
  const auto doc = nlohmann::json::parse(in);
  const auto& cases = doc.at("cases");
  REQUIRE(cases.size() == 7);
  for (const auto& c : cases) {
    const std::string name = c.at("name");
    INFO(name << ": torch." << c.at("torch").get<std::string>());
    const optim::Schedule s = from_json(c.at("ember"));
    const auto want = c.at("lrs").get<std::vector<double>>();
    REQUIRE(want.size() == 51);
    for (std::size_t k = 0; k < want.size(); ++k) {
      INFO("step " << k << ": ember " << s(static_cast<std::int64_t>(k)) << ", torch " << want[k]);
      CHECK(close(s(static_cast<std::int64_t>(k)), want[k]));
    }
  }
}

}  // namespace test_optim_schedule
}  // namespace
