// The instances of copies.cpp compiled by nvcc, with nvcc's copies of double. The CPU loops they
// call are the ones the library's host units compile (exec/cpu_executor.hpp).
#define EMBER_CPU_LOOPS_ELSEWHERE 1
#include "copies.cpp"
