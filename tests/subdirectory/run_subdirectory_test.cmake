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

function(step what)
  message(STATUS "add_subdirectory test: ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message("${out}")
    message(FATAL_ERROR "add_subdirectory test: ${what} failed (exit ${rc})")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

set(args -S "${EMBER_SOURCE_DIR}/tests/subdirectory" -B "${EMBER_SCRATCH}"
    "-DEMBER_SOURCE_DIR=${EMBER_SOURCE_DIR}" -DCMAKE_BUILD_TYPE=Release)
if(EMBER_GENERATOR)
  list(APPEND args -G "${EMBER_GENERATOR}")
endif()
if(EMBER_CXX_COMPILER)
  list(APPEND args "-DCMAKE_CXX_COMPILER=${EMBER_CXX_COMPILER}")
endif()
step("configure" "${CMAKE_COMMAND}" ${args})
step("build" "${CMAKE_COMMAND}" --build "${EMBER_SCRATCH}" --config Release)
foreach(app consumer_app consumer_io)
  file(GLOB_RECURSE exe "${EMBER_SCRATCH}/${app}" "${EMBER_SCRATCH}/*/${app}")
  if(NOT exe)
    message(FATAL_ERROR "add_subdirectory test: ${app} was not built")
  endif()
  list(GET exe 0 exe)
  step("run ${app}" "${exe}")
  message(STATUS "${step_output}")
endforeach()
message(STATUS "add_subdirectory test: passed")
