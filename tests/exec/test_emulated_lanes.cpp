// The row operators run with 32 emulated lanes (exec/emulated_lanes.hpp: the code a CUDA warp
// runs, lane by lane, with the warp's butterflies) against the CPU's one lane per row: softmax
// and log_softmax, layer_norm, dropout + add + layer_norm, cross_entropy, attention's rows, each
// forward and backward, over rows shorter and longer than a warp's 128-element stretch, with
// dropout (the same elements dropped), masks, ignored targets and label smoothing. The sums
// are combined in another order, so values agree to a few units of the dtype's rounding.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include <ember/ember.hpp>

#include "support/random_tensors.hpp"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
namespace test_exec_emulated_lanes {

const std::vector<std::int64_t> kCols = {1, 3, 5, 31, 32, 33, 127, 128, 129, 300};

template <class T>
Tensor<T> normal(const Shape& s, std::uint64_t seed) {
  return Tensor<T>(cast<T>(randn<double>(s, seed, Device::cpu(), 0.0, 1.5)));
}

// f() computed once as usual and once with 32 emulated lanes: every tensor it returns must agree.
template <class T>
void same_with_lanes(const std::function<std::vector<Tensor<T>>()>& f, double tol) {
  const std::vector<Tensor<T>> one_lane = f();
  std::vector<Tensor<T>> warp;
  {
    exec::EmulatedRowLanes lanes(32);
    warp = f();
  }
  REQUIRE(warp.size() == one_lane.size());
  for (std::size_t i = 0; i < warp.size(); ++i) {
    INFO("result " << i);
    ember::testing::require_close(warp[i], Tensor<double>(cast<double>(one_lane[i])), tol);
  }
}

template <class T>
constexpr double tolerance() {
  return std::is_same_v<T, double> ? 1e-12 : 1e-5;
}

TEMPLATE_TEST_CASE("emulated lanes: softmax and log_softmax rows, forward and backward",
                   "[exec][rows]", float, double) {
  using T = TestType;
  for (const std::int64_t cols : kCols) {
    INFO("cols " << cols);
    const Tensor<T> x = normal<T>({3, cols}, 1), g = normal<T>({3, cols}, 2);
    same_with_lanes<T>(
        [&] {
          Var<T> a = param(x), b = param(x);
          softmax(a, -1).backward(g);
          log_softmax(b, -1).backward(g);
          return std::vector<Tensor<T>>{softmax(x, -1), log_softmax(x, -1), a.grad(), b.grad()};
        },
        tolerance<T>());
  }
}

TEMPLATE_TEST_CASE("emulated lanes: layer_norm and dropout + add + layer_norm rows", "[exec][rows]",
                   float, double) {
  using T = TestType;
  for (const std::int64_t cols : kCols) {
    INFO("cols " << cols);
    const Tensor<T> x = normal<T>({4, cols}, 3), r = normal<T>({4, cols}, 4);
    const Tensor<T> w = normal<T>({cols}, 5), b = normal<T>({cols}, 6), g = normal<T>({4, cols}, 7);
    same_with_lanes<T>(
        [&] {
          std::vector<Tensor<T>> out;
          for (const double p : {0.0, 0.3}) {
            Var<T> xv = param(x), rv = param(r), wv = param(w), bv = param(b);
            Var<T> y = dropout_add_layer_norm(xv, rv, wv, bv, 1e-5, DropoutOptions{p, 9, 2});
            y.backward(g);
            out.insert(out.end(), {y.value(), xv.grad(), rv.grad(), wv.grad(), bv.grad()});
          }
          Var<T> xv = param(x), wv = param(w), bv = param(b);
          Var<T> y = layer_norm(xv, wv, bv);
          y.backward(g);
          out.insert(out.end(), {y.value(), xv.grad(), wv.grad(), bv.grad()});
          return out;
        },
        tolerance<T>());
  }
}

TEMPLATE_TEST_CASE("emulated lanes: cross_entropy rows with ignored targets and smoothing",
                   "[exec][rows]", float, double) {
  using T = TestType;
  for (const std::int64_t cols : kCols) {
    INFO("classes " << cols);
    const Tensor<T> logits = normal<T>({5, cols}, 8);
    std::vector<std::int64_t> t = {0, cols - 1, -100, cols / 2, (cols * 7) / 9};
    const Tensor<std::int64_t> targets = from_vector<std::int64_t>(t);
    same_with_lanes<T>(
        [&] {
          std::vector<Tensor<T>> out;
          for (const double smoothing : {0.0, 0.1}) {
            const CrossEntropyOptions opt{
                .label_smoothing = smoothing, .ignore_index = -100, .reduction = Reduction::none};
            Var<T> z = param(logits);
            Var<T> loss = cross_entropy(z, targets, opt);
            loss.backward(Tensor<T>(cast<T>(arange<double>(1, 6))));
            out.insert(out.end(), {loss.value(), z.grad()});
          }
          return out;
        },
        tolerance<T>());
  }
}

TEMPLATE_TEST_CASE("emulated lanes: attention's rows with masks, causality and dropout",
                   "[exec][rows]", float, double) {
  using T = TestType;
  for (const std::int64_t keys : {1L, 5L, 33L, 130L}) {
    INFO("keys " << keys);
    const std::int64_t queries = 4;
    const Tensor<T> q = normal<T>({2, 2, queries, 8}, 10), k = normal<T>({2, 2, keys, 8}, 11);
    const Tensor<T> v = normal<T>({2, 2, keys, 6}, 12), g = normal<T>({2, 2, queries, 6}, 13);
    // A key-padding mask: batch 1 may not attend to its last key.
    std::vector<bool> keep(static_cast<std::size_t>(2 * keys), true);
    keep.back() = keys == 1;
    const Tensor<bool> mask = from_vector<bool>(keep, Shape{2, 1, 1, keys});
    same_with_lanes<T>(
        [&] {
          std::vector<Tensor<T>> out;
          for (const bool causal : {false, true}) {
            // The score kernel's rows (the CPU's default, flash, has no rows).
            const AttentionOptions opt{.dropout_p = 0.25,
                                       .causal = causal,
                                       .scale = {},
                                       .seed = 5,
                                       .offset = 0,
                                       .kernel = ember::AttentionKernel::scores};
            Var<T> qv = param(q), kv = param(k), vv = param(v);
            Var<T> y = scaled_dot_product_attention(qv, kv, vv, mask, opt);
            y.backward(g);
            out.insert(out.end(), {y.value(), qv.grad(), kv.grad(), vv.grad()});
          }
          return out;
        },
        tolerance<T>());
  }
}

TEST_CASE("emulated lanes: a lane-divergent collective is an error, not a hang", "[exec][rows]") {
  // Lane 0 alone asks for a sum: the other lanes never reach it.
  struct Divergent {
    void row(std::int64_t, int lane, int, const exec::EmulatedLanes& across) const {
      if (lane == 0) (void)across.sum(1.0f);
    }
  };
  // The error names the cause once the emulation's patience (here 0.2 s) runs out.
  CHECK_THROWS_WITH(exec::run_rows_emulated(Divergent{}, 1, 4, std::chrono::milliseconds(200)),
                    Contains("diverged"));
  // A warp of four sums its lanes' values in every lane.
  struct Sums {
    float* out;
    void row(std::int64_t, int lane, int, const exec::EmulatedLanes& across) const {
      out[lane] = across.sum(static_cast<float>(lane + 1));
    }
  };
  float out[4] = {};
  exec::run_rows_emulated(Sums{out}, 1, 4);
  for (const float s : out) CHECK(s == 10.0f);
}

}  // namespace test_exec_emulated_lanes
}  // namespace
