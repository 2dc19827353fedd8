# Resolves the EMBER_BLAS option into EMBER_WITH_BLAS (and EMBER_WITH_MKL): the CPU's matrix
# products call a BLAS where one is found, else ember's own blocked OpenMP kernel
# (include/ember/ops/matmul/gemm_cpu.hpp, which also says which products go to oneDNN instead).
#   AUTO      Intel's oneMKL where found (cmake/EmberMkl.cmake: PyPI's mkl-devel, oneAPI or
#             MKLROOT), else OpenBLAS (Debian: libopenblas-dev), else another optimised CBLAS
#   MKL       oneMKL, required
#   OPENBLAS  OpenBLAS, required (for measuring it against MKL)
#   ON        any CBLAS, required, Netlib's reference BLAS included
#   OFF       ember's own kernel
# AUTO passes over Netlib's reference BLAS (Debian's libblas3, which other packages pull in): its
# unblocked loops multiply several times slower than ember's own kernel.
#
# Sets:
#   EMBER_WITH_BLAS       ON or OFF
#   EMBER_WITH_MKL        ON or OFF (ON: the BLAS is oneMKL, EMBER_MKL_INCLUDE_DIR and
#                         EMBER_MKL_LIBRARIES say where; else BLAS::BLAS and EMBER_CBLAS_INCLUDE_DIR)
#   EMBER_BLAS_SUMMARY    a few words for the configure summary
include_guard(DIRECTORY)

string(TOUPPER "${EMBER_BLAS}" _ember_blas_mode)
set(EMBER_WITH_BLAS OFF)
set(EMBER_WITH_MKL OFF)
set(EMBER_BLAS_SUMMARY "")
if(_ember_blas_mode MATCHES "^(AUTO|MKL)$")
  include(EmberMkl)
  if(EMBER_MKL_FOUND)
    set(EMBER_WITH_BLAS ON)
    set(EMBER_WITH_MKL ON)
    list(GET EMBER_MKL_LIBRARIES -1 _ember_mkl_core)
    get_filename_component(_ember_mkl_dir "${_ember_mkl_core}" DIRECTORY)
    set(EMBER_BLAS_SUMMARY " (oneMKL in ${_ember_mkl_dir})")
  elseif(_ember_blas_mode STREQUAL "MKL")
    message(FATAL_ERROR "ember: EMBER_BLAS=MKL but oneMKL was not found "
                        "(pip install mkl-devel, or set MKLROOT)")
  endif()
endif()
if(_ember_blas_mode STREQUAL "OFF")
  set(EMBER_BLAS_SUMMARY " (EMBER_BLAS=OFF: ember's own GEMM)")
elseif(NOT EMBER_WITH_MKL AND NOT _ember_blas_mode STREQUAL "MKL")
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS QUIET)
  if(NOT BLAS_FOUND AND NOT _ember_blas_mode STREQUAL "OPENBLAS")
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
                   "optimised one (pip install mkl-devel, or Debian's libopenblas-dev) for fast "
                   "CPU matrix products")
  elseif(BLAS_FOUND AND EMBER_CBLAS_INCLUDE_DIR)
    set(EMBER_WITH_BLAS ON)
    set(EMBER_BLAS_SUMMARY " (${BLAS_LIBRARIES})")
  elseif(_ember_blas_mode MATCHES "^(ON|OPENBLAS)$")
    message(FATAL_ERROR "ember: EMBER_BLAS=${EMBER_BLAS} but no such BLAS library with cblas.h "
                        "was found (Debian: apt-get install libopenblas-dev)")
  else()
    set(EMBER_BLAS_SUMMARY " (no CBLAS found: ember's own GEMM; pip install mkl-devel, or "
                           "Debian's libopenblas-dev)")
  endif()
endif()
