# The `add_subdirectory_consumer` test: configure tests/subdirectory/ (which adds ember's source
# tree with add_subdirectory), build it, and run its two programs.
#
# Variables (-D): EMBER_SOURCE_DIR, EMBER_SCRATCH, EMBER_GENERATOR, EMBER_CXX_COMPILER, and
# EMBER_EMULATED_CUDA: instead, the .cu program on the emulated CUDA device, which must compute
# on cuda:0 in one launch.
cmake_minimum_required(VERSION 3.25)

foreach(var EMBER_SOURCE_DIR EMBER_SCRATCH)
  if(NOT ${var})
    message(FATAL_ERROR "run_subdirectory_test.cmake: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${EMBER_SCRATCH}")

set(EMBER_TEST_NAME "add_subdirectory test")
include("${CMAKE_CURRENT_LIST_DIR}/../install/steps.cmake")

set(args -S "${EMBER_SOURCE_DIR}/tests/subdirectory" -B "${EMBER_SCRATCH}"
    "-DEMBER_SOURCE_DIR=${EMBER_SOURCE_DIR}" -DCMAKE_BUILD_TYPE=Release)
if(EMBER_GENERATOR)
  list(APPEND args -G "${EMBER_GENERATOR}")
endif()
if(EMBER_CXX_COMPILER)
  list(APPEND args "-DCMAKE_CXX_COMPILER=${EMBER_CXX_COMPILER}")
endif()
if(EMBER_EMULATED_CUDA)
  list(APPEND args -DCONSUMER_CUDA_EMULATION=ON)
endif()
step("configure" "${CMAKE_COMMAND}" ${args})
step("build" "${CMAKE_COMMAND}" --build "${EMBER_SCRATCH}" --config Release
     --parallel ${build_jobs})
if(EMBER_EMULATED_CUDA)
  run_apps("${EMBER_SCRATCH}" consumer_app_cuda)
  if(NOT step_output MATCHES "ember on cuda:0, 0 mismatches, 1 launch")
    message(FATAL_ERROR "add_subdirectory test: the .cu program did not run on cuda:0 in one launch")
  endif()
else()
  run_apps("${EMBER_SCRATCH}" consumer_app consumer_io)
endif()
message(STATUS "add_subdirectory test: passed")
