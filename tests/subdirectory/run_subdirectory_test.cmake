# The `add_subdirectory_consumer` test: configure tests/subdirectory/ (which adds ember's source
# tree with add_subdirectory), build it, and run its two programs.
#
# Variables (-D): EMBER_SOURCE_DIR, EMBER_SCRATCH, EMBER_GENERATOR, EMBER_CXX_COMPILER.
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
step("configure" "${CMAKE_COMMAND}" ${args})
step("build" "${CMAKE_COMMAND}" --build "${EMBER_SCRATCH}" --config Release
     --parallel ${build_jobs})
run_apps("${EMBER_SCRATCH}" consumer_app consumer_io)
message(STATUS "add_subdirectory test: passed")
