// The emulated device's <cudnn.h>: ember's substitute for cuDNN's convolution API
// (../cudnn.hpp). On the include path only in builds with EMBER_CUDA_EMULATION.
#pragma once

#include "../cudnn.hpp"
