// The instances of double.cpp compiled by nvcc: there exec::mode names the CUDA translation units'
// executor, so nvcc-compiled programs that link ember::kernels find their copies here.
#include "double.cpp"
