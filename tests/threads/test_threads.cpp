// ember used from two host threads at once, each on its own model and tensors: what each thread
// computes equals what the same work computes alone, bit for bit, and (scripts/sanitize.sh
// thread) ThreadSanitizer finds no race. The work touches everything that is shared between
// threads: the host allocator's cache and counters, the oneDNN primitive caches (convolution
// and matmul), the launch counter, autograd's per-thread tape state and node ids, the fused
// optimizer, and the initialisers' random stream (drawn under its mutex; which thread draws
// first is not determined, so the models are built before the threads start).
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <thread>
#include <vector>

#include <ember/ember.hpp>

namespace {
namespace test_threads_threads {

using ember::Shape;
using ember::Tensor;
using ember::Var;
namespace nn = ember::nn;

/// conv -> batch norm -> ReLU -> global average pool -> linear: a small image classifier.
struct Net : nn::Module {
  nn::Conv2d<float> conv{1, 8, 3, nn::Conv2dOptions{.padding = {1, 1}}};
  nn::BatchNorm2d<float> bn{8};
  nn::Linear<float> fc{8, 4};
  Net() {
    register_module("conv", conv);
    register_module("bn", bn);
    register_module("fc", fc);
  }
  Var<float> forward(const Var<float>& x) const {
    const Var<float> h = ember::relu(bn(conv(x)));
    return fc(ember::adaptive_avg_pool2d(h, {1, 1}).reshape(Shape{x.shape()[0], 8}));
  }
};

/// One model trained for a few SGD steps on its own batch; its final parameters, flattened.
struct Run {
  Net net;
  Tensor<float> images;
  Tensor<std::int64_t> labels;
  std::vector<float> result;

  explicit Run(std::uint64_t seed)
      : images(ember::randn<float>(Shape{16, 1, 12, 12}, seed)),
        labels(ember::from_vector<std::int64_t>({0, 1, 2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0})) {
  }

  void train() {
    ember::optim::SGD opt(net, {.lr = 0.05, .momentum = 0.9});
    for (int step = 0; step < 5; ++step) {
      Var<float> loss = ember::cross_entropy(net.forward(Var<float>(images)), labels);
      loss.backward();
      opt.step();
      opt.zero_grad();
    }
    result.clear();
    for (const auto& [name, p] : net.named_parameters()) {
      std::visit(
          [&](auto* v) {
            for (const auto x : v->value().contiguous().to_vector())
              result.push_back(static_cast<float>(x));
          },
          p);
    }
  }
};

TEST_CASE("two host threads train two models at once, each as it trains alone", "[threads]") {
  nn::manual_seed(11);
  Run alone_a(1), alone_b(2);
  nn::manual_seed(11);
  Run together_a(1), together_b(2);

  alone_a.train();
  alone_b.train();
  const std::uint64_t launches_before = ember::launch_count();
  std::thread ta([&] { together_a.train(); });
  std::thread tb([&] { together_b.train(); });
  ta.join();
  tb.join();

  REQUIRE(!alone_a.result.empty());
  REQUIRE(together_a.result == alone_a.result);
  REQUIRE(together_b.result == alone_b.result);
  REQUIRE(alone_a.result != alone_b.result);
  // Both threads' passes are counted (an atomic counter: no increment lost).
  REQUIRE(ember::launch_count() - launches_before > 0);
}

TEST_CASE("two host threads draw from the initialisers' stream at once: no value drawn twice",
          "[threads]") {
  nn::manual_seed(5);
  std::array<std::vector<float>, 2> drawn;
  std::thread t0([&] { drawn[0] = nn::init::normal<float>(Shape{4096}, 0.0, 1.0).to_vector(); });
  std::thread t1([&] { drawn[1] = nn::init::normal<float>(Shape{4096}, 0.0, 1.0).to_vector(); });
  t0.join();
  t1.join();
  // Each draw reserved its own part of the stream, in one order or the other.
  nn::manual_seed(5);
  const std::vector<float> first = nn::init::normal<float>(Shape{4096}, 0.0, 1.0).to_vector();
  const std::vector<float> second = nn::init::normal<float>(Shape{4096}, 0.0, 1.0).to_vector();
  const bool order_01 = drawn[0] == first && drawn[1] == second;
  const bool order_10 = drawn[1] == first && drawn[0] == second;
  REQUIRE((order_01 || order_10));
}

}  // namespace test_threads_threads
}  // namespace
