# The `install_find_package` test: install this build of ember into a scratch prefix, then
# configure, build and run tests/install/ against it with find_package(ember CONFIG REQUIRED).
#
# Variables (-D): EMBER_BINARY_DIR, EMBER_CONSUMER_SOURCE, EMBER_SCRATCH, EMBER_WITH_CUDA,
# EMBER_GENERATOR, EMBER_CXX_COMPILER, EMBER_CONFIG, EMBER_HAS_IO_DATA (ember::io and
# ember::data were built: the consumer uses them too), EMBER_HAS_KERNELS (ember::kernels was
# built: the consumer links it in one program), and with CUDA EMBER_CUDA_COMPILER and
# EMBER_CUDA_ARCHITECTURES.
cmake_minimum_required(VERSION 3.25)

foreach(var EMBER_BINARY_DIR EMBER_CONSUMER_SOURCE EMBER_SCRATCH)
  if(NOT ${var})
    message(FATAL_ERROR "run_install_test.cmake: ${var} is not set")
  endif()
endforeach()
if(NOT EMBER_CONFIG)
  set(EMBER_CONFIG Release)
endif()

set(prefix "${EMBER_SCRATCH}/prefix")
set(build "${EMBER_SCRATCH}/consumer-build")
file(REMOVE_RECURSE "${EMBER_SCRATCH}")
file(MAKE_DIRECTORY "${EMBER_SCRATCH}")

set(EMBER_TEST_NAME "install test")
include("${CMAKE_CURRENT_LIST_DIR}/steps.cmake")

step("cmake --install into ${prefix}"
     "${CMAKE_COMMAND}" --install "${EMBER_BINARY_DIR}" --prefix "${prefix}" --config "${EMBER_CONFIG}")
file(GLOB_RECURSE config_file "${prefix}/*/emberConfig.cmake")
if(NOT config_file)
  message(FATAL_ERROR "install test: no emberConfig.cmake under ${prefix}")
endif()
if(NOT EXISTS "${prefix}/include/ember/ember.hpp")
  message(FATAL_ERROR "install test: include/ember/ember.hpp was not installed")
endif()

set(configure_args
  -S "${EMBER_CONSUMER_SOURCE}" -B "${build}"
  "-DCMAKE_PREFIX_PATH=${prefix}"
  "-DCMAKE_BUILD_TYPE=${EMBER_CONFIG}")
if(EMBER_GENERATOR)
  list(APPEND configure_args -G "${EMBER_GENERATOR}")
endif()
if(EMBER_CXX_COMPILER)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER=${EMBER_CXX_COMPILER}")
endif()
if(EMBER_WITH_CUDA)
  list(APPEND configure_args "-DCMAKE_CUDA_COMPILER=${EMBER_CUDA_COMPILER}"
                             "-DCMAKE_CUDA_ARCHITECTURES=${EMBER_CUDA_ARCHITECTURES}")
endif()
if(EMBER_HAS_IO_DATA)
  list(APPEND configure_args -DCONSUMER_WITH_IO_DATA=ON)
endif()
step("configure the consumer project" "${CMAKE_COMMAND}" ${configure_args})
step("build the consumer project" "${CMAKE_COMMAND}" --build "${build}" --config "${EMBER_CONFIG}"
     --parallel ${build_jobs})

set(apps consumer_app)
if(EMBER_HAS_IO_DATA)
  list(APPEND apps consumer_io)
endif()
if(EMBER_WITH_CUDA)
  list(APPEND apps consumer_app_cuda)
endif()
if(EMBER_HAS_KERNELS)
  list(APPEND apps consumer_app_kernels)
endif()
run_apps("${build}" ${apps})
message(STATUS "install test: passed")
