// The emulated device's <cub/device/device_radix_sort.cuh>: ember's substitute for CUB's device-wide
// sorts (../../../cub_sort.hpp). On the include path only in builds with EMBER_CUDA_EMULATION.
#pragma once

#include "../../../cub_sort.hpp"
