# What the scripts that build a consumer project share (run_install_test.cmake,
# ../subdirectory/run_subdirectory_test.cmake): `step` runs a command and stops the script with its
# output when it fails; `run_apps` finds each built program under a build tree and runs it.
# Messages start with ${EMBER_TEST_NAME}. `build_jobs`: the consumer's files compile in parallel,
# one per core (they are independent, and the test waits for them).

cmake_host_system_information(RESULT build_jobs QUERY NUMBER_OF_LOGICAL_CORES)

function(step what)
  message(STATUS "${EMBER_TEST_NAME}: ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message("${out}")
    message(FATAL_ERROR "${EMBER_TEST_NAME}: ${what} failed (exit ${rc})")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

function(run_apps build)
  foreach(app IN LISTS ARGN)
    file(GLOB_RECURSE exe "${build}/${app}" "${build}/*/${app}" "${build}/${app}.exe"
         "${build}/*/${app}.exe")
    if(NOT exe)
      message(FATAL_ERROR "${EMBER_TEST_NAME}: ${app} was not built")
    endif()
    list(GET exe 0 exe)
    step("run ${app}" "${exe}")
    message(STATUS "${step_output}")
  endforeach()
  set(step_output "${step_output}" PARENT_SCOPE)  # the last program's
endfunction()
