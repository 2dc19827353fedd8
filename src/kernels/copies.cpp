// ember::kernels: the copies and fills of the element types that are not floating (int64, int32,
// uint8, bool), and `empty` of every type, compiled once (include/ember/kernels.hpp lists them);
// from copies.cu, nvcc's, with its copies of double too (nvcc's units hold no other double
// instance; double.cpp has the host's).
#include <ember/kernels.hpp>

EMBER_KERNEL_INTEGER_COPIES_ALL(template)
#if defined(EMBER_CUDA_KERNELS)
EMBER_KERNEL_INSTANCES_DOUBLE(template)
#else
EMBER_KERNEL_EMPTY_ALL(template)  // outside the kinds' namespaces: one instance for both
#endif
