# Install rules: headers, the exported ember::ember target and a relocatable package config,
# so that a user's project can do
#   find_package(ember CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE ember::ember)   # or ember::io, ember::data, ember::dist
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

set(EMBER_INSTALL_CMAKEDIR "${CMAKE_INSTALL_DATADIR}/cmake/ember" CACHE STRING
    "Where ember's CMake package files are installed (relative to the prefix)")

install(TARGETS ember EXPORT emberTargets)
# ember::io, ember::data and ember::dist where this build has them; their libraries are found again by the
# package config (TurboJPEG with the same module as here). ember::kernels, the operators compiled
# once, is a static library built with this build's options (CUDA, oneDNN, BLAS).
foreach(_ember_component io data dist kernels)
  if(TARGET ember_${_ember_component} AND (EMBER_BUILD_KERNELS OR NOT _ember_component STREQUAL "kernels"))
    install(TARGETS ember_${_ember_component} EXPORT emberTargets)
  endif()
endforeach()
# The modules the package config includes, installed beside it and copied beside the build tree's.
set(_ember_config_modules "${PROJECT_SOURCE_DIR}/cmake/EmberTurboJpeg.cmake"
                          "${PROJECT_SOURCE_DIR}/cmake/EmberMkl.cmake")
install(FILES ${_ember_config_modules} DESTINATION "${EMBER_INSTALL_CMAKEDIR}")
file(COPY ${_ember_config_modules} DESTINATION "${PROJECT_BINARY_DIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/ember"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.cuh" PATTERN "*.h")
install(EXPORT emberTargets
        NAMESPACE ember::
        FILE emberTargets.cmake
        DESTINATION "${EMBER_INSTALL_CMAKEDIR}")
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" "${PROJECT_SOURCE_DIR}/README.md"
        DESTINATION "${CMAKE_INSTALL_DOCDIR}" OPTIONAL)

set(EMBER_HAS_IO FALSE)
set(EMBER_HAS_DATA FALSE)
if(TARGET ember_io)
  set(EMBER_HAS_IO TRUE)
endif()
if(TARGET ember_data)
  set(EMBER_HAS_DATA TRUE)
endif()
if(NOT EMBER_TURBOJPEG_FOUND)
  set(EMBER_TURBOJPEG_FOUND FALSE)
endif()
configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/emberConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/emberConfig.cmake"
  INSTALL_DESTINATION "${EMBER_INSTALL_CMAKEDIR}")
# The headers are arch-independent; what the package needs (OpenMP, the CUDA runtime) is found
# again by the consumer's own find_dependency calls.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/emberConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMinorVersion
  ARCH_INDEPENDENT)
install(FILES "${PROJECT_BINARY_DIR}/emberConfig.cmake"
              "${PROJECT_BINARY_DIR}/emberConfigVersion.cmake"
        DESTINATION "${EMBER_INSTALL_CMAKEDIR}")

# The build tree works as a package too: -Dember_DIR=<build dir>.
export(EXPORT emberTargets NAMESPACE ember:: FILE "${PROJECT_BINARY_DIR}/emberTargets.cmake")
