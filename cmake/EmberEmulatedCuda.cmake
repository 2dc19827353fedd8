# The emulated CUDA device's build rules (EMBER_CUDA_EMULATION): with no CUDA language enabled,
# a .cu file is compiled by the C++ compiler as C++ (-x c++) with EMBER_CUDA_UNIT defined, which
# tells ember's headers that the unit is CUDA code (core/config.hpp).
include_guard(GLOBAL)

# Makes the .cu sources of `target` C++ sources for the emulated device.
function(ember_emulate_cuda_sources target)
  get_target_property(_sources ${target} SOURCES)
  get_target_property(_dir ${target} SOURCE_DIR)
  if(NOT _sources)
    return()
  endif()
  foreach(_source IN LISTS _sources)
    if(_source MATCHES "\\.cu$")
      cmake_path(ABSOLUTE_PATH _source BASE_DIRECTORY "${_dir}" OUTPUT_VARIABLE _path)
      set_property(SOURCE "${_path}" TARGET_DIRECTORY ${target} PROPERTY LANGUAGE CXX)
      set_property(SOURCE "${_path}" TARGET_DIRECTORY ${target} APPEND PROPERTY
                   COMPILE_DEFINITIONS EMBER_CUDA_UNIT=1)
      # CUDA's `#pragma unroll` means nothing to the host compiler; and GCC cannot follow the
      # kernels' coordinate arrays, filled and read up to a rank known at run time, so it warns
      # that they may be read uninitialised.
      set_property(SOURCE "${_path}" TARGET_DIRECTORY ${target} APPEND PROPERTY
                   COMPILE_OPTIONS -Wno-unknown-pragmas -Wno-maybe-uninitialized)
    endif()
  endforeach()
endfunction()

# Does the same for every target defined in `dir` and the directories below it that links an
# ember target (ember::ember, ember::kernels, ember_dist, ...) directly.
function(ember_compile_cuda_sources_as_cxx dir)
  get_property(_targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_type ${_target} TYPE)
    get_target_property(_links ${_target} LINK_LIBRARIES)
    if(NOT _type STREQUAL "INTERFACE_LIBRARY" AND "${_links}" MATCHES "(^|;)ember($|;|::|_)")
      ember_emulate_cuda_sources(${_target})
    endif()
  endforeach()
  get_property(_subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(_subdir IN LISTS _subdirs)
    ember_compile_cuda_sources_as_cxx("${_subdir}")
  endforeach()
endfunction()

# Schedules ember_compile_cuda_sources_as_cxx over the whole build for the end of the top-level
# directory, when every target exists: a user's project that takes ember with add_subdirectory
# gets its .cu files compiled for the emulated device without a line of its own.
function(ember_defer_cuda_emulation)
  get_property(_scheduled GLOBAL PROPERTY EMBER_CUDA_EMULATION_DEFERRED)
  if(NOT _scheduled)
    set_property(GLOBAL PROPERTY EMBER_CUDA_EMULATION_DEFERRED ON)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL ember_compile_cuda_sources_as_cxx
                   "${CMAKE_SOURCE_DIR}")
  endif()
endfunction()
