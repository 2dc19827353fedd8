# Resolves the EMBER_BLAS option (AUTO, ON or OFF) into EMBER_WITH_BLAS: the CPU matrix product
# calls CBLAS (OpenBLAS preferred; Debian: libopenblas-dev) when it is found, else ember's own
# blocked OpenMP kernel (include/ember/ops/matmul/gemm_cpu.hpp).
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
  if(BLAS_FOUND AND EMBER_CBLAS_INCLUDE_DIR)
    set(EMBER_WITH_BLAS ON)
    set(EMBER_BLAS_SUMMARY " (${BLAS_LIBRARIES})")
  elseif(_ember_blas_mode STREQUAL "ON")
    message(FATAL_ERROR "ember: EMBER_BLAS=ON but no BLAS library with cblas.h was found "
                        "(Debian: apt-get install libopenblas-dev)")
  else()
    set(EMBER_BLAS_SUMMARY " (no CBLAS found: ember's own GEMM)")
  endif()
endif()
