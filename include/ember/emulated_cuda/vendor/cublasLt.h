// The emulated device's <cublasLt.h>: ember's substitute for cuBLASLt's matmul
// (../cublas_lt.hpp). On the include path only in builds with EMBER_CUDA_EMULATION.
#pragma once

#include "../cublas_lt.hpp"
