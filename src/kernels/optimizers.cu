// The instances of optimizers.cpp compiled by nvcc, for the CUDA translation units.
#include "optimizers.cpp"
