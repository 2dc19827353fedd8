// What the emulated CUDA device does with code that would be undefined on a GPU: each mode
// breaks one rule and must end with the emulation's own sentence (tests/CMakeLists.txt matches
// it). Built only with EMBER_CUDA_EMULATION; a real device would hang or read garbage instead.
//
//   faults host-read      host code reads a device allocation: the process dies, saying so
//   faults deadlock       half a warp calls __shfl_sync with a full mask: the launch fails
//   faults divergent-mask lanes of a warp disagree on a collective's mask: the launch fails
//   faults sticky         after a failed kernel every later call reports the failure
#include <cstdio>
#include <cstring>
#include <string>

#include <ember/ember.hpp>

namespace {

__global__ void half_warp_shuffle(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x < 16) v = __shfl_sync(0xffffffffu, v, 0);
  out[threadIdx.x] = v;
}

__global__ void mask_per_lane(int* out) {
  const unsigned mask = threadIdx.x < 16 ? 0x0000ffffu : 0xffffffffu;
  out[threadIdx.x] = __shfl_sync(mask, static_cast<int>(threadIdx.x), 0);
}

void launch(const char* name, void (*kernel)(int*), int* out) {
  ember::exec::gpu::launch_kernel(name, kernel, 1, 32, 0, ember::cuda::current_stream(0), out);
  ember::cuda::synchronize(0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    const auto out = ember::zeros<int>({32}, ember::Device::cuda(0));
    if (mode == "host-read") {
      ember::cuda::synchronize(0);  // the device is idle: its memory is closed to the host
      std::printf("reading device memory on the host...\n");
      std::fflush(stdout);
      volatile int first = out.data()[0];  // a device pointer, used on the host
      std::printf("read %d: the emulation did not stop it\n", first);
      return 1;
    }
    if (mode == "deadlock") launch("half_warp_shuffle", half_warp_shuffle, out.data());
    if (mode == "divergent-mask") launch("mask_per_lane", mask_per_lane, out.data());
    if (mode == "sticky") {
      try {
        launch("half_warp_shuffle", half_warp_shuffle, out.data());
      } catch (const ember::Error&) {
      }
      const auto more = ember::ones<float>({4}, ember::Device::cuda(0));  // a later call
      std::printf("a later allocation succeeded: the error was not sticky\n");
      return 1;
    }
    std::printf("unknown mode '%s'\n", mode.c_str());
    return 2;
  } catch (const ember::Error& e) {
    std::printf("ember::Error: %s\n", e.what());
    return 3;
  }
}
