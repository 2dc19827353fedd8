// ember::kernels: the optimizers' passes (SGD, LARS, AdamW, LAMB; optim/optimizer.hpp lists
// them), compiled once. nvcc compiles the same from optimizers.cu.
#include <ember/ember.hpp>

EMBER_OPTIMIZER_INSTANCES(template, SGD)
EMBER_OPTIMIZER_INSTANCES(template, LARS)
EMBER_OPTIMIZER_INSTANCES(template, AdamW)
EMBER_OPTIMIZER_INSTANCES(template, LAMB)
