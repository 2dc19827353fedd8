// Pinned host memory on CUDA device 0: non-blocking copies, and a freed block is not handed out
// again while a queued copy still reads it. Skipped when no GPU is present.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

#include "cuda_test_support.hpp"

using namespace ember;

namespace {
namespace test_memory_pinned_allocator_cuda {
const Device kGpu = Device::cuda(0);

// Holds the stream until release(): a host function that the stream runs in order, so copies
// queued after it stay pending for as long as the test wants.
struct StreamGate {
  std::atomic<bool> open{false};
  static void CUDART_CB wait(void* self) {
    auto* gate = static_cast<StreamGate*>(self);
    while (!gate->open.load()) {
    }
  }
  cudaStream_t stream;
  explicit StreamGate(cudaStream_t s) : stream(s) {
    ember::cuda::check(cudaLaunchHostFunc(stream, &StreamGate::wait, this), "cudaLaunchHostFunc");
  }
  // Opened on every way out, so a failing check cannot leave the stream held.
  ~StreamGate() {
    release();
    (void)cudaStreamSynchronize(stream);
  }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void release() { open.store(true); }
};

TEST_CASE("Pinned tensors copy to the GPU without blocking and keep their values", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  REQUIRE(memory::pinned_memory_available());
  const Tensor<float> host = arange<float>(0, 1000, 1).reshape(Shape{10, 100});
  const Tensor<float> pinned = host.pin_memory();
  REQUIRE(pinned.is_pinned());
  CHECK(pinned.pin_memory().data() == pinned.data());  // already pinned: no copy
  CHECK(pinned.to_vector() == host.to_vector());
  // A transposed (non-dense) view pins as a dense copy.
  const Tensor<float> pinned_t = host.transpose(0, 1).pin_memory();
  CHECK(pinned_t.is_contiguous());
  CHECK(pinned_t.to_vector() == host.transpose(0, 1).contiguous().to_vector());

  const Tensor<float> gpu = pinned.to(kGpu, /*non_blocking=*/true);
  CHECK(gpu.device() == kGpu);
  CHECK(gpu.to_vector() == host.to_vector());
  const Tensor<std::int64_t> labels = from_vector<std::int64_t>({3, 1, 4}).pin_memory();
  CHECK(labels.to(kGpu, true).to_vector() == std::vector<std::int64_t>{3, 1, 4});
  // Pageable memory with non_blocking is an ordinary copy.
  CHECK(host.to(kGpu, true).to_vector() == host.to_vector());
}

TEST_CASE("A freed pinned block is not reused while a queued copy still reads it", "[cuda]") {
  EMBER_REQUIRE_CUDA_DEVICE();
  memory::pinned_empty_cache();
  const Shape shape{1 << 16};
  cudaStream_t stream = ember::cuda::current_stream(0);
  const float* first = nullptr;
  Tensor<float> gpu;
  StreamGate gate(stream);
  {
    Tensor<float> batch = full<float>(shape, 7.0f).pin_memory();
    first = batch.data();
    gpu = batch.to(kGpu, /*non_blocking=*/true);  // queued behind the gate
  }
  // The block is back in the cache but its copy has not run: a new batch gets another block,
  // and writing to it cannot change what the copy reads.
  Tensor<float> next = empty_pinned<float>(shape);
  CHECK(next.data() != first);
  std::fill(next.data(), next.data() + next.numel(), -1.0f);
  gate.release();
  ember::cuda::synchronize(0);
  const std::vector<float> got = gpu.to_vector();
  CHECK(std::count(got.begin(), got.end(), 7.0f) == static_cast<std::ptrdiff_t>(got.size()));
  // Once the copy is done, the first block is handed out again for the same size.
  const Tensor<float> again = empty_pinned<float>(shape);
  CHECK(again.data() == first);
  CHECK(memory::pinned_cached_bytes() == 0);
}

}  // namespace test_memory_pinned_allocator_cuda
}  // namespace
