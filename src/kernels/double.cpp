// ember::kernels: the operators on double tensors and Vars and double's copies, compiled once
// (src/kernels/operators.hpp), for the host's translation units only: nvcc's compile their double
// operators themselves (core/compiled_once.hpp says why; copies.cu has their copies).
#include "operators.hpp"

EMBER_COMPILE_OPERATORS(double)
