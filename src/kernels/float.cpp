// ember::kernels: the operators on float tensors and Vars, compiled once (include/ember/kernels.hpp
// lists them). nvcc compiles the same instances from float.cu for the CUDA translation units.
#include <ember/kernels.hpp>

EMBER_KERNEL_INSTANCES(template, float)
