// ember::kernels: the copies and fills of the element types that are not floating (int64, int32,
// uint8, bool), and `empty` of every type (exec/assign.hpp and tensor/factories.hpp list them);
// from copies.cu, nvcc's, with its copies of double too (nvcc's units hold no other double
// instance; double.cpp has the host's).
#include <ember/ember.hpp>

EMBER_INTEGER_TYPES(EMBER_INTEGER_COPY_INSTANCES, template)
#if defined(EMBER_CUDA_KERNELS)
EMBER_FLOATING_COPY_INSTANCES(template, double)
#else
// empty does not evaluate: one instance serves both kinds.
EMBER_FLOATING_TYPES(EMBER_EMPTY_INSTANCE, template)
EMBER_INTEGER_TYPES(EMBER_EMPTY_INSTANCE, template)
#endif
