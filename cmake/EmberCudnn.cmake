# Resolves the EMBER_CUDNN option (AUTO, ON or OFF) into EMBER_WITH_CUDNN: conv2d on CUDA calls
# cuDNN 9 (found next to the CUDA toolkit, or where CUDNN_ROOT points). Only with CUDA. The
# emulated device brings its own substitute (include/ember/emulated_cuda/cudnn.hpp).
#
# Sets:
#   EMBER_WITH_CUDNN        ON or OFF
#   EMBER_CUDNN_LIBRARY     the library, EMBER_CUDNN_INCLUDE_DIR where cudnn.h is
#   EMBER_CUDNN_SUMMARY     a few words for the configure summary
include_guard(DIRECTORY)

string(TOUPPER "${EMBER_CUDNN}" _ember_cudnn_mode)
set(EMBER_WITH_CUDNN OFF)
set(EMBER_CUDNN_SUMMARY "")
if(NOT EMBER_WITH_CUDA OR _ember_cudnn_mode STREQUAL "OFF")
  set(EMBER_CUDNN_SUMMARY " (off)")
elseif(EMBER_CUDA_EMULATION)
  set(EMBER_WITH_CUDNN ON)
  set(EMBER_CUDNN_SUMMARY " (the emulated device's substitute)")
else()
  find_path(EMBER_CUDNN_INCLUDE_DIR cudnn.h
            HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  find_library(EMBER_CUDNN_LIBRARY cudnn
               HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR}
                     "${CUDAToolkit_LIBRARY_DIR}/.." ${CUDAToolkit_LIBRARY_ROOT}
               PATH_SUFFIXES lib lib64 lib/x64)
  if(EMBER_CUDNN_INCLUDE_DIR AND EMBER_CUDNN_LIBRARY)
    set(EMBER_WITH_CUDNN ON)
    set(EMBER_CUDNN_SUMMARY " (${EMBER_CUDNN_LIBRARY})")
  elseif(_ember_cudnn_mode STREQUAL "ON")
    message(FATAL_ERROR "ember: EMBER_CUDNN=ON but cuDNN was not found (set CUDNN_ROOT)")
  else()
    set(EMBER_CUDNN_SUMMARY " (not found: conv2d on CUDA unavailable)")
  endif()
endif()
