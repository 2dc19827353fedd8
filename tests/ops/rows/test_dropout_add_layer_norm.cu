// dropout_add_layer_norm on CUDA device 0 (a warp per row) against the CPU (a thread per row):
// values, the dropped elements and gradients, in float and bf16, for rows shorter and longer
// than a warp. Compiled by nvcc for sm_90 in every CUDA build; skipped without a GPU.
#include <catch2/catch.hpp>

#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_ops_dropout_add_layer_norm_cuda {
const Device kGpu = Device::cuda(0);
using ember::testing::require_near;

template <class T>
void check_matches_cpu(const Shape& shape, double rel) {
  const std::int64_t cols = shape[shape.rank() - 1];
  const Tensor<T> x = Tensor<T>(cast<T>(randn<float>(shape, 1)));
  const Tensor<T> r = Tensor<T>(cast<T>(randn<float>(shape, 2)));
  const Tensor<T> w = Tensor<T>(cast<T>(randn<float>(Shape{cols}, 3)));
  const Tensor<T> b = Tensor<T>(cast<T>(randn<float>(Shape{cols}, 4)));
  const Tensor<T> g = Tensor<T>(cast<T>(randn<float>(shape, 5)));
  for (double p : {0.0, 0.1}) {
    INFO("shape " << shape.str() << " p " << p);
    const DropoutOptions d{p, 17, 8};
    require_near(dropout_add_layer_norm(x.to(kGpu), r.to(kGpu), w.to(kGpu), b.to(kGpu), 1e-12, d),
                 dropout_add_layer_norm(x, r, w, b, 1e-12, d), rel);
    std::vector<Var<T>> cpu{param(x), param(r), param(w), param(b)};
    std::vector<Var<T>> gpu{param(x.to(kGpu)), param(r.to(kGpu)), param(w.to(kGpu)),
                            param(b.to(kGpu))};
    sum(dropout_add_layer_norm(cpu[0], cpu[1], cpu[2], cpu[3], 1e-12, d) * g).backward();
    sum(dropout_add_layer_norm(gpu[0], gpu[1], gpu[2], gpu[3], 1e-12, d) * g.to(kGpu)).backward();
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      INFO("gradient " << i);
      // dw and db sum over the rows: scale the tolerance by their count.
      require_near(gpu[i].grad(), cpu[i].grad(), i < 2 ? rel : rel * shape[0]);
    }
  }
}

TEST_CASE("cuda dropout_add_layer_norm: values, dropped elements and gradients match the CPU",
          "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  for (const Shape& s : {Shape{64, 768}, Shape{33, 20}, Shape{7, 1}, Shape{3, 1031}}) {
    check_matches_cpu<float>(s, 1e-4);
    check_matches_cpu<bf16>(s, 1.0 / 64);
  }
  const Tensor<float> x = randn<float>(Shape{8, 64}, 1, kGpu),
                      r = randn<float>(Shape{8, 64}, 2, kGpu);
  const std::uint64_t before = launch_count();
  (void)dropout_add_layer_norm(x, r, Tensor<float>(), Tensor<float>());
  CHECK(launch_count() - before == 1);
}

}  // namespace test_ops_dropout_add_layer_norm_cuda
}  // namespace
