// Anomaly detection (autograd/anomaly.hpp): with the guard alive, the first recorded operation
// whose output holds a NaN or an infinity throws, naming it, for each kind of tape node (a fused
// expression, a reduction, an operator's node, a custom function), in float, double and bf16;
// off (the default, and after the guard), the same computations go through.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <ember/ember.hpp>

namespace {
namespace test_autograd_anomaly {

using Catch::Matchers::Contains;
using ember::Shape;
using ember::Tensor;
using ember::Var;

TEMPLATE_TEST_CASE("detect_anomaly names the first operation whose output is not finite",
                   "[autograd][anomaly]", float, double, ember::bf16) {
  using T = TestType;
  const Var<T> x = ember::param(Tensor<T>(ember::cast<T>(ember::from_vector<float>({1, -1, 2}))));
  const Var<T> big = ember::param(Tensor<T>(ember::cast<T>(
      ember::from_vector<float>({std::numeric_limits<float>::infinity(), 1, 1, 1}, Shape{2, 2}))));
  REQUIRE(!ember::anomaly_detection_enabled());
  {
    const ember::detect_anomaly guard;
    REQUIRE(ember::anomaly_detection_enabled());
    // A fused expression: log of -1 is NaN (one value of three, element 1).
    REQUIRE_THROWS_WITH(Var<T>(ember::log(x)),
                        Contains("detect_anomaly: 'log'") && Contains("made 1 value(s)") &&
                            Contains("of 3") && Contains("element 1, is nan"));
    // A reduction: inf - inf.
    REQUIRE_THROWS_WITH(ember::sum(Var<T>(big - big)), Contains("detect_anomaly:"));
    // An operator's node: a product through infinity.
    REQUIRE_THROWS_WITH(ember::matmul(big, big), Contains("detect_anomaly: 'matmul'"));
    // Finite outputs go through, and so do values no recorded operation made.
    REQUIRE_NOTHROW(ember::sum(Var<T>(x * x)));
    {
      const ember::no_grad off;  // not recorded: not checked
      REQUIRE_NOTHROW(Var<T>(ember::log(x)));
    }
  }
  REQUIRE(!ember::anomaly_detection_enabled());
  REQUIRE_NOTHROW(Var<T>(ember::log(x)));
  ember::set_detect_anomaly(true);
  REQUIRE_THROWS_WITH(Var<T>(ember::sqrt(x)), Contains("detect_anomaly: 'sqrt'"));
  ember::set_detect_anomaly(false);
}

struct Reciprocal {
  static constexpr const char* name = "reciprocal";
  static Tensor<float> forward(ember::FunctionContext& ctx, const Tensor<float>& x) {
    ctx.save(x);
    return 1.0f / x;
  }
  static Tensor<float> backward(ember::FunctionContext& ctx, const Tensor<float>& g) {
    const auto x = ctx.saved<float>(0);
    return -g / (x * x);
  }
};

TEST_CASE("detect_anomaly checks custom functions' outputs too", "[autograd][anomaly]") {
  const Var<float> x = ember::param(ember::from_vector<float>({2, 0}));
  const ember::detect_anomaly guard;
  REQUIRE_THROWS_WITH(ember::apply<Reciprocal>(x),
                      Contains("detect_anomaly: 'reciprocal'") && Contains("element 1, is inf"));
}

}  // namespace test_autograd_anomaly
}  // namespace
