// The instances of float.cpp compiled by nvcc: here they fall in the CUDA kind's namespace
// (core/config.hpp), so nvcc-compiled programs that link ember::kernels find their copies here. The
// CPU loops they call are the ones the library's host units compile (exec/cpu_executor.hpp).
#define EMBER_CPU_LOOPS_ELSEWHERE 1
#include "float.cpp"
