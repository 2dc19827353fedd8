// ember::kernels: the optimizers' passes (SGD, LARS, AdamW, LAMB), compiled once
// (include/ember/kernels.hpp lists them). nvcc compiles the same from optimizers.cu.
#include <ember/kernels.hpp>

EMBER_KERNEL_OPTIMIZERS(template)
