# Resolves the EMBER_MPI option (AUTO, ON or OFF) for ember::dist: MPI for processes and hosts
# (Debian: libopenmpi-dev openmpi-bin), and NCCL for CUDA tensors (it comes with the CUDA
# toolkit, or where NCCL_ROOT points; only with CUDA). Without MPI, ember::dist still exists and
# gives a world of one.
#
# Sets:
#   EMBER_WITH_MPI          ON or OFF (MPI::MPI_CXX is then an imported target)
#   EMBER_WITH_NCCL         ON or OFF; EMBER_NCCL_LIBRARY, EMBER_NCCL_INCLUDE_DIR
#   EMBER_MPI_SUMMARY       a few words for the configure summary
include_guard(DIRECTORY)

string(TOUPPER "${EMBER_MPI}" _ember_mpi_mode)
set(EMBER_WITH_MPI OFF)
set(EMBER_MPI_SUMMARY "")
if(_ember_mpi_mode STREQUAL "OFF")
  set(EMBER_MPI_SUMMARY " (off: ember::dist has a world of one only)")
else()
  # ember calls MPI's C API from C++: the CXX component (FindMPI's C one needs the C language),
  # without MPI's deprecated C++ bindings. GLOBAL: MPI::MPI_CXX must be visible to a parent
  # project that used add_subdirectory.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI COMPONENTS CXX QUIET GLOBAL)
  if(MPI_CXX_FOUND)
    set(EMBER_WITH_MPI ON)
    set(EMBER_MPI_SUMMARY " (MPI ${MPI_CXX_VERSION}, ${MPIEXEC_EXECUTABLE})")
  elseif(_ember_mpi_mode STREQUAL "ON")
    message(FATAL_ERROR "ember: EMBER_MPI=ON but MPI was not found (Debian: libopenmpi-dev openmpi-bin)")
  else()
    set(EMBER_MPI_SUMMARY
        " (not found: ember::dist has a world of one only; Debian: libopenmpi-dev openmpi-bin)")
  endif()
endif()

set(EMBER_WITH_NCCL OFF)
if(EMBER_CUDA_EMULATION)
  # The emulated device's substitute (include/ember/emulated_cuda/nccl.hpp): ranks meet in
  # POSIX shared memory.
  set(EMBER_WITH_NCCL ON)
  string(APPEND EMBER_MPI_SUMMARY "; NCCL the emulated device's substitute")
elseif(EMBER_WITH_CUDA)
  find_path(EMBER_NCCL_INCLUDE_DIR nccl.h
            HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  find_library(EMBER_NCCL_LIBRARY nccl
               HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR}
                     "${CUDAToolkit_LIBRARY_DIR}/.." ${CUDAToolkit_LIBRARY_ROOT}
               PATH_SUFFIXES lib lib64)
  if(EMBER_NCCL_INCLUDE_DIR AND EMBER_NCCL_LIBRARY)
    set(EMBER_WITH_NCCL ON)
    string(APPEND EMBER_MPI_SUMMARY "; NCCL ON")
  else()
    string(APPEND EMBER_MPI_SUMMARY "; NCCL not found (set NCCL_ROOT)")
  endif()
endif()
