// The instances of float.cpp compiled by nvcc: there exec::mode names the CUDA translation units'
// executor, so nvcc-compiled programs that link ember::kernels find their copies here. The CPU
// loops they call are the ones the library's host units compile (exec/cpu_executor.hpp).
#define EMBER_CPU_LOOPS_ELSEWHERE 1
#include "float.cpp"
