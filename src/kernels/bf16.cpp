// ember::kernels: the operators on bf16 tensors and Vars and bf16's copies, compiled once
// (src/kernels/operators.hpp). nvcc compiles the same instances from bf16.cu for its units.
#include "operators.hpp"

EMBER_COMPILE_OPERATORS(ember::bf16)
