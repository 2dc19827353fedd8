// ember::kernels: the operators on double tensors and Vars, compiled once
// (include/ember/kernels.hpp lists them). nvcc compiles the same instances from double.cu for the
// CUDA translation units.
#include <ember/kernels.hpp>

EMBER_KERNEL_INSTANCES(template, double)
