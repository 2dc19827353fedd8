// ember::kernels: the operators on half tensors and Vars, compiled once (include/ember/kernels.hpp
// lists them). nvcc compiles the same instances from half.cu for the CUDA translation units.
#include <ember/kernels.hpp>

EMBER_KERNEL_INSTANCES(template, ember::half)
