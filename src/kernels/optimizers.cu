// The instances of optimizers.cpp compiled by nvcc, for the CUDA translation units. The CPU loops
// they call are the ones the library's host units compile (exec/cpu_executor.hpp).
#define EMBER_CPU_LOOPS_ELSEWHERE 1
#include "optimizers.cpp"
