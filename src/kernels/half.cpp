// ember::kernels: the operators on half tensors and Vars and half's copies, compiled once
// (src/kernels/operators.hpp). nvcc compiles the same instances from half.cu for its units.
#include "operators.hpp"

EMBER_COMPILE_OPERATORS(ember::half)
