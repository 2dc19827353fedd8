// The emulated device's <nccl.h>: ember's substitute for NCCL's collectives between processes
// (../nccl.hpp). On the include path only in builds with EMBER_CUDA_EMULATION.
#pragma once

#include "../nccl.hpp"
