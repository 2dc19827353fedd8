// ember::kernels: the operators on bf16 tensors and Vars, compiled once (include/ember/kernels.hpp
// lists them). nvcc compiles the same instances from bf16.cu for the CUDA translation units.
#include <ember/kernels.hpp>

EMBER_KERNEL_INSTANCES(template, ember::bf16)
