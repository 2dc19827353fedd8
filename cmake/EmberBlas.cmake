# Resolves the EMBER_BLAS option (AUTO, ON or OFF) into EMBER_WITH_BLAS: the CPU matrix product
# calls CBLAS (OpenBLAS preferred; Debian: libopenblas-dev) when it is found, else ember's own
# blocked OpenMP kernel (include/ember/ops/matmul/gemm_cpu.hpp). AUTO passes over Netlib's
# reference BLAS (Debian's libblas3, which other packages pull in): its unblocked loops multiply
# several times slower than ember's own kernel, so only EMBER_BLAS=ON takes it.
#
# Sets:
#   EMBER_WITH_BLAS       ON or OFF
#   EMBER_BLAS_SUMMARY    a few words for the configure summary
include_guard(DIRECTORY)

string(TOUPPER "${EMBER_BLAS}" _ember_blas_mode)
set(EMBER_WITH_BLAS OFF)
set(EMBER_BLAS_SUMMARY "")
if(_ember_blas_mode STREQUAL "OFF")
  set(EMBER_BLAS_SUMMARY " (EMBER_BLAS=OFF: ember's own GEMM)")
else()
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS QUIET)
  if(NOT BLAS_FOUND)
    unset(BLA_VENDOR)
    find_package(BLAS QUIET)
  endif()
  find_path(EMBER_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas)
  # The reference BLAS: a libblas.so that resolves (through Debian's alternatives) to no
  # optimised implementation's file.
  set(_ember_blas_reference OFF)
  if(BLAS_FOUND AND NOT BLA_VENDOR)
    set(_ember_blas_reference ON)
    foreach(_lib IN LISTS BLAS_LIBRARIES)
      if(EXISTS "${_lib}")
        file(REAL_PATH "${_lib}" _real)
      else()
        set(_real "${_lib}")
      endif()
      if(_real MATCHES "openblas|blis|mkl|atlas|Accelerate|armpl|flexiblas")
        set(_ember_blas_reference OFF)
      endif()
    endforeach()
  endif()
  if(_ember_blas_reference AND NOT _ember_blas_mode STREQUAL "ON")
    set(EMBER_BLAS_SUMMARY " (only the reference BLAS was found: ember's own GEMM)")
    message(STATUS "ember: passing over the reference BLAS (${BLAS_LIBRARIES}): install an "
                   "optimised one (Debian: libopenblas-dev) for fast CPU matrix products")
  elseif(BLAS_FOUND AND EMBER_CBLAS_INCLUDE_DIR)
    set(EMBER_WITH_BLAS ON)
    set(EMBER_BLAS_SUMMARY " (${BLAS_LIBRARIES})")
  elseif(_ember_blas_mode STREQUAL "ON")
    message(FATAL_ERROR "ember: EMBER_BLAS=ON but no BLAS library with cblas.h was found "
                        "(Debian: apt-get install libopenblas-dev)")
  else()
    set(EMBER_BLAS_SUMMARY " (no CBLAS found: ember's own GEMM)")
  endif()
endif()
