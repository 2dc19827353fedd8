// ember::kernels linked whole, every member whether used or not (tests/CMakeLists.txt links it
// with WHOLE_ARCHIVE). The library's nvcc units do not compile the CPU loops their operators call
// (EMBER_CPU_LOOPS_ELSEWHERE, exec/cpu_executor.hpp): they link to the host units' copies. Were
// one missing, because an nvcc unit instantiated a loop no host unit does, this program would
// fail to link, whatever a test happens to call.
#include <cstdio>

int main() {
  std::puts("every member of ember::kernels links");
  return 0;
}
