# Resolves the EMBER_CUDA option (AUTO, ON or OFF) into EMBER_WITH_CUDA and, when it is ON,
# enables the CUDA language for sm_90 by default. Included at file scope from the top-level
# CMakeLists.txt: enable_language() must not run inside a function.
#
# With EMBER_CUDA_EMULATION on, EMBER_WITH_CUDA is ON and no toolkit is looked for.
#
# Sets:
#   EMBER_WITH_CUDA       ON or OFF
#   EMBER_CUDA_CCCL_DIR   the toolkit's include/cccl (CUB, Thrust, libcu++) when it exists
#   EMBER_CUDA_SUMMARY    a few words for the configure summary
include_guard(DIRECTORY)

string(TOUPPER "${EMBER_CUDA}" _ember_cuda_mode)
if(NOT _ember_cuda_mode STREQUAL "AUTO")
  if(EMBER_CUDA)
    set(_ember_cuda_mode ON)
  else()
    set(_ember_cuda_mode OFF)
  endif()
endif()

set(EMBER_WITH_CUDA OFF)
set(EMBER_CUDA_CCCL_DIR "")
set(EMBER_CUDA_SUMMARY "")

# The GPU ember targets by default: sm_90 (H100/H200) as real code only, which is exactly
# -gencode=arch=compute_90,code=sm_90. Override with -DCMAKE_CUDA_ARCHITECTURES=...
set(EMBER_DEFAULT_CUDA_ARCHITECTURES "90-real" CACHE STRING
    "CUDA architectures used when CMAKE_CUDA_ARCHITECTURES is not set")

if(EMBER_CUDA_EMULATION)
  # The CUDA code is compiled by the host compiler and runs on the emulated device
  # (include/ember/emulated_cuda): no toolkit, no CUDA language.
  set(EMBER_WITH_CUDA ON)
  set(EMBER_CUDA_SUMMARY " (emulated on the CPU: EMBER_CUDA_EMULATION)")
elseif(_ember_cuda_mode STREQUAL "OFF")
  set(EMBER_CUDA_SUMMARY " (EMBER_CUDA=OFF)")
else()
  # nvcc is often not on PATH (CI images): a compiler given by the user tells us where the
  # toolkit is; otherwise FindCUDAToolkit looks in CUDA_PATH and /usr/local/cuda.
  if(CMAKE_CUDA_COMPILER AND NOT CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT})
    get_filename_component(_ember_nvcc_dir "${CMAKE_CUDA_COMPILER}" REALPATH)
    get_filename_component(_ember_nvcc_dir "${_ember_nvcc_dir}" DIRECTORY)
    get_filename_component(CUDAToolkit_ROOT "${_ember_nvcc_dir}" DIRECTORY)
  endif()
  if(_ember_cuda_mode STREQUAL "ON")
    find_package(CUDAToolkit REQUIRED GLOBAL)
  else()
    find_package(CUDAToolkit QUIET GLOBAL)
  endif()

  set(_ember_cuda_usable OFF)
  if(CUDAToolkit_FOUND AND CUDAToolkit_NVCC_EXECUTABLE)
    if(DEFINED CMAKE_CUDA_COMPILER)
      # Given by the user (or found by an earlier configure of this build directory).
      if(CMAKE_CUDA_COMPILER)
        set(_ember_cuda_usable ON)
      endif()
    elseif(_ember_cuda_mode STREQUAL "ON")
      set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}" CACHE FILEPATH "CUDA compiler")
      set(_ember_cuda_usable ON)
    else()
      # AUTO: make sure nvcc works with this host compiler before committing to it.
      set(ENV{CUDACXX} "${CUDAToolkit_NVCC_EXECUTABLE}")
      include(CheckLanguage)
      check_language(CUDA)
      if(CMAKE_CUDA_COMPILER)
        set(_ember_cuda_usable ON)
      endif()
    endif()
  elseif(_ember_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "ember: EMBER_CUDA=ON but the CUDA toolkit has no nvcc "
                        "(set CUDAToolkit_ROOT or CMAKE_CUDA_COMPILER)")
  endif()

  if(_ember_cuda_usable)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "${EMBER_DEFAULT_CUDA_ARCHITECTURES}")
    endif()
    enable_language(CUDA)
    set(EMBER_WITH_CUDA ON)
    foreach(_ember_dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
      if(NOT EMBER_CUDA_CCCL_DIR AND EXISTS "${_ember_dir}/cccl/cub")
        set(EMBER_CUDA_CCCL_DIR "${_ember_dir}/cccl")
      endif()
    endforeach()
    string(CONCAT EMBER_CUDA_SUMMARY " (CUDA ${CUDAToolkit_VERSION}, "
                  "nvcc ${CMAKE_CUDA_COMPILER}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
  else()
    set(EMBER_CUDA_SUMMARY " (no usable CUDA toolkit found; the CUDA device is unavailable)")
    message(STATUS "ember: CUDA toolkit not found or not usable: building for the CPU only")
  endif()
endif()
