# Finds Intel's oneMKL for the CPU's matrix products: PyPI's wheels (`pip install mkl-devel`: the
# headers and libraries under Python's prefix, or the user's with `pip install --user`), a oneAPI
# install (/opt/intel/oneapi/mkl/latest) or MKLROOT. ember takes MKL's LP64 interface, its GNU
# OpenMP threading layer (MKL's threads are then libgomp's, the pool ember's own loops run on, so
# the two never spin against each other) and its core. Used by ember's build (EmberBlas.cmake) and
# by its package config, which finds the same libraries again for a user's project.
#
# Sets:
#   EMBER_MKL_FOUND         TRUE or FALSE
#   EMBER_MKL_INCLUDE_DIR   where mkl_cblas.h is
#   EMBER_MKL_LIBRARIES     the linker flag that keeps all three (the program calls only the
#                           interface layer, which calls the other two), then the libraries
include_guard(GLOBAL)

set(_ember_mkl_hints ${MKL_ROOT} $ENV{MKLROOT} /opt/intel/oneapi/mkl/latest)
find_program(EMBER_PYTHON3 NAMES python3 python)
mark_as_advanced(EMBER_PYTHON3)
if(EMBER_PYTHON3)
  execute_process(
    COMMAND "${EMBER_PYTHON3}" -c "import site, sys; print(sys.prefix); print(site.USER_BASE)"
    OUTPUT_VARIABLE _ember_python_prefixes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
    RESULT_VARIABLE _ember_python_status)
  if(_ember_python_status EQUAL 0)
    string(REPLACE "\n" ";" _ember_python_prefixes "${_ember_python_prefixes}")
    list(APPEND _ember_mkl_hints ${_ember_python_prefixes})
  endif()
endif()

find_path(EMBER_MKL_INCLUDE_DIR mkl_cblas.h HINTS ${_ember_mkl_hints} PATH_SUFFIXES include mkl)
set(EMBER_MKL_LIBRARIES "")
set(EMBER_MKL_FOUND FALSE)
if(EMBER_MKL_INCLUDE_DIR)
  set(EMBER_MKL_FOUND TRUE)
  # The wheels ship only the versioned names: libmkl_core.so.2 up to 2025, .so.3 from 2026.
  foreach(_ember_mkl_part mkl_intel_lp64 mkl_gnu_thread mkl_core)
    string(TOUPPER "EMBER_${_ember_mkl_part}_LIBRARY" _ember_mkl_var)
    find_library(${_ember_mkl_var} NAMES ${_ember_mkl_part} lib${_ember_mkl_part}.so.3
                                         lib${_ember_mkl_part}.so.2
                 HINTS ${_ember_mkl_hints} PATH_SUFFIXES lib lib/intel64)
    mark_as_advanced(${_ember_mkl_var})
    if(${_ember_mkl_var})
      list(APPEND EMBER_MKL_LIBRARIES "${${_ember_mkl_var}}")
    else()
      set(EMBER_MKL_FOUND FALSE)
    endif()
  endforeach()
  list(PREPEND EMBER_MKL_LIBRARIES "-Wl,--no-as-needed")
endif()
mark_as_advanced(EMBER_MKL_INCLUDE_DIR)
