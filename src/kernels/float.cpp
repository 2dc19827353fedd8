// ember::kernels: the operators on float tensors and Vars and float's copies, compiled once
// (src/kernels/operators.hpp). nvcc compiles the same instances from float.cu for its units.
#include "operators.hpp"

EMBER_COMPILE_OPERATORS(float)
