// The tape's hooks: a leaf's post-accumulate-grad hook runs once per backward, after the last node
// that feeds it, and sees the whole gradient; queue_callback runs after every node; handles
// remove their hook; misuse is an ember::Error.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <ember/ember.hpp>

using namespace ember;
using Catch::Matchers::Contains;

TEST_CASE("post-accumulate-grad hooks run once per backward with the complete gradient",
          "[autograd]") {
  Var<double> w = param(from_vector<double>({1.0, 2.0, 3.0}));
  Var<double> x = param(from_vector<double>({4.0, 5.0, 6.0}));
  std::vector<std::string> events;
  std::vector<double> seen;
  auto hw = w.register_post_accumulate_grad_hook([&](const Tensor<double>& g) {
    events.push_back("w");
    seen = g.to_vector();
  });
  auto hx =
      x.register_post_accumulate_grad_hook([&](const Tensor<double>&) { events.push_back("x"); });
  // w feeds three nodes: a sum over w*x, a sum of exp(w) and a matmul-free view (w * 2 reshaped).
  Var<double> a = sum(w * x);
  Var<double> b = sum(exp(w));
  Var<double> c = sum(w.reshape(Shape{3, 1}) * 2.0);
  Var<double> loss = a + b + c;
  loss.backward();
  REQUIRE(events.size() == 2);  // each hook once
  const std::vector<double> want{4.0 + std::exp(1.0) + 2, 5.0 + std::exp(2.0) + 2,
                                 6.0 + std::exp(3.0) + 2};
  REQUIRE(seen == w.grad().to_vector());
  for (std::size_t i = 0; i < 3; ++i) REQUIRE(seen[i] == Approx(want[i]).epsilon(1e-14));
  // Removed: silent in the next backward; the other still runs.
  hw.remove();
  hw.remove();  // twice is fine
  events.clear();
  sum(w * x).backward();
  REQUIRE(events == std::vector<std::string>{"x"});
  hx.remove();
}

TEST_CASE("a hook on a leaf that is the root, and on a leaf the backward does not reach",
          "[autograd]") {
  Var<double> w = param(from_vector<double>({2.0}, Shape{}));
  Var<double> unused = param(from_vector<double>({1.0}));
  int w_calls = 0, unused_calls = 0;
  auto h1 = w.register_post_accumulate_grad_hook([&](const Tensor<double>&) { ++w_calls; });
  auto h2 =
      unused.register_post_accumulate_grad_hook([&](const Tensor<double>&) { ++unused_calls; });
  w.backward();
  REQUIRE(w_calls == 1);
  sum(w * 3.0).backward();
  REQUIRE(w_calls == 2);
  REQUIRE(unused_calls == 0);
}

TEST_CASE("queue_callback runs after the backward's last node, in order", "[autograd]") {
  Var<double> w1 = param(from_vector<double>({1.0, 2.0}));
  Var<double> w2 = param(from_vector<double>({3.0, 4.0}));
  std::vector<std::string> events;
  auto h1 = w1.register_post_accumulate_grad_hook([&](const Tensor<double>&) {
    events.push_back("w1 ready");
    autograd::queue_callback([&] { events.push_back("first callback"); });
  });
  auto h2 = w2.register_post_accumulate_grad_hook([&](const Tensor<double>&) {
    events.push_back("w2 ready");
    autograd::queue_callback([&] {
      events.push_back("second callback");
      autograd::queue_callback([&] { events.push_back("queued by a callback"); });
    });
  });
  // w2 is used later (its node has a higher sequence number): its gradient is ready first.
  Var<double> y = w1 * 2.0;
  Var<double> loss = sum(y * w2);
  loss.backward();
  REQUIRE(events == std::vector<std::string>{"w2 ready", "w1 ready", "second callback",
                                             "first callback", "queued by a callback"});
  REQUIRE_THROWS_WITH(autograd::queue_callback([] {}), Contains("outside a backward"));
}

TEST_CASE("hooks only on leaves that require grad", "[autograd]") {
  Var<double> w = param(from_vector<double>({1.0}));
  Var<double> y = w * 2.0;
  REQUIRE_THROWS_WITH(y.register_post_accumulate_grad_hook([](const Tensor<double>&) {}),
                      Contains("not a leaf"));
  Var<double> c(from_vector<double>({1.0}));
  REQUIRE_THROWS_WITH(c.register_post_accumulate_grad_hook([](const Tensor<double>&) {}),
                      Contains("does not require grad"));
  REQUIRE_THROWS_WITH(w.register_post_accumulate_grad_hook(nullptr), Contains("empty hook"));
}
