# libjpeg-turbo's TurboJPEG API, for include/ember/data/image_folder.hpp. Debian's
# libturbojpeg0-dev ships no CMake package: the header and library are looked for (with
# pkg-config's hints when there is pkg-config). Defines EMBER_TURBOJPEG_FOUND and, when found, the
# imported target ember::turbojpeg (with Threads, which the loader's workers need).
if(TARGET ember::turbojpeg)  # found by an earlier directory: the target is global
  set(EMBER_TURBOJPEG_FOUND ON)
  return()
endif()
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(EMBER_PC_TURBOJPEG QUIET libturbojpeg)
endif()
find_path(EMBER_TURBOJPEG_INCLUDE_DIR turbojpeg.h HINTS ${EMBER_PC_TURBOJPEG_INCLUDE_DIRS})
find_library(EMBER_TURBOJPEG_LIBRARY NAMES turbojpeg HINTS ${EMBER_PC_TURBOJPEG_LIBRARY_DIRS})
if(EMBER_TURBOJPEG_INCLUDE_DIR AND EMBER_TURBOJPEG_LIBRARY)
  set(EMBER_TURBOJPEG_FOUND ON)
  find_package(Threads REQUIRED)
  add_library(ember::turbojpeg INTERFACE IMPORTED GLOBAL)
  target_include_directories(ember::turbojpeg SYSTEM INTERFACE "${EMBER_TURBOJPEG_INCLUDE_DIR}")
  target_link_libraries(ember::turbojpeg INTERFACE "${EMBER_TURBOJPEG_LIBRARY}" Threads::Threads)
else()
  set(EMBER_TURBOJPEG_FOUND OFF)
endif()
