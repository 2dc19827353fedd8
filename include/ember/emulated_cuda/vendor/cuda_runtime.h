// The emulated CUDA device's cuda_runtime.h: ember's emulation (../runtime_api.hpp, ../device_functions.hpp)
// under the name CUDA code includes. On the include path only in builds with
// EMBER_CUDA_EMULATION (CMake's option of that name adds this folder first).
#pragma once

#include "../device_functions.hpp"
#include "../runtime_api.hpp"
