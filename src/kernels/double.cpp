// ember::kernels: the operators on double tensors and Vars, compiled once
// (include/ember/kernels.hpp lists them), for the host's translation units only: nvcc's compile
// their double operators themselves (kernels.hpp says why).
#include <ember/kernels.hpp>

EMBER_KERNEL_INSTANCES(template, double)
