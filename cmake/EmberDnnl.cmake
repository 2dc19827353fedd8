# Resolves the EMBER_DNNL option (AUTO, ON or OFF) into EMBER_WITH_DNNL: conv2d on the CPU runs on
# oneDNN (Debian: libdnnl-dev, 2.6; header oneapi/dnnl/dnnl.hpp) when it is found, else on
# im2col + GEMM (include/ember/ops/conv/conv.hpp). Found by its header and library, like cuDNN, so
# oneDNN's own package config (which wants OpenCL's) is not needed.
#
# Sets:
#   EMBER_WITH_DNNL         ON or OFF
#   EMBER_DNNL_LIBRARY      the library, EMBER_DNNL_INCLUDE_DIR where oneapi/dnnl/dnnl.hpp is
#   EMBER_DNNL_SUMMARY      a few words for the configure summary
include_guard(DIRECTORY)

string(TOUPPER "${EMBER_DNNL}" _ember_dnnl_mode)
set(EMBER_WITH_DNNL OFF)
set(EMBER_DNNL_SUMMARY "")
if(_ember_dnnl_mode STREQUAL "OFF")
  set(EMBER_DNNL_SUMMARY " (EMBER_DNNL=OFF: CPU conv2d on im2col + GEMM)")
else()
  find_path(EMBER_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp HINTS ${DNNL_ROOT} $ENV{DNNL_ROOT}
            PATH_SUFFIXES include)
  find_library(EMBER_DNNL_LIBRARY dnnl HINTS ${DNNL_ROOT} $ENV{DNNL_ROOT} PATH_SUFFIXES lib lib64)
  if(EMBER_DNNL_INCLUDE_DIR AND EMBER_DNNL_LIBRARY)
    set(EMBER_WITH_DNNL ON)
    set(EMBER_DNNL_SUMMARY " (${EMBER_DNNL_LIBRARY})")
  elseif(_ember_dnnl_mode STREQUAL "ON")
    message(FATAL_ERROR "ember: EMBER_DNNL=ON but oneDNN was not found "
                        "(Debian: apt-get install libdnnl-dev, or set DNNL_ROOT)")
  else()
    set(EMBER_DNNL_SUMMARY " (not found: CPU conv2d on im2col + GEMM; Debian: libdnnl-dev)")
  endif()
endif()
