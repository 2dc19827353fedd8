# g++'s garbage collector, run less often in ember's own heavy compiles (ember::kernels, the tests,
# the benchmarks). GCC collects its heap whenever it has doubled since the last collection, from
# 128 MB on, and a test unit at -O0 spent 7 of its 58 s in those collections (-ftime-report,
# "garbage collection"). With no collection before EMBER_GCC_HEAP_MB (g++'s
# --param=ggc-min-heapsize), measured 2026-12-05: tests/expr's unity source 46.9 -> 37.3 s of CPU
# (peak 2.9 -> 3.8 GB), the fifteen C++ test units 272 -> 241 s, src/kernels/float.cpp at -O3
# 56.6 -> 50.9 s (1.5 -> 2.3 GB); the objects are byte for byte the same. The default is half the
# machine's memory per core, at most 4 GB (a build with a job per core keeps half the memory
# free); 0 keeps g++'s own. Not applied to the examples: users build those, and their memory is
# one of issue 22's targets.
include_guard(GLOBAL)

cmake_host_system_information(RESULT _ember_memory_mb QUERY TOTAL_PHYSICAL_MEMORY)
cmake_host_system_information(RESULT _ember_cores QUERY NUMBER_OF_LOGICAL_CORES)
math(EXPR _ember_heap_mb "${_ember_memory_mb} / (${_ember_cores} * 2)")
if(_ember_heap_mb GREATER 4096)
  set(_ember_heap_mb 4096)
elseif(_ember_heap_mb LESS 256)
  set(_ember_heap_mb 0)
endif()
set(EMBER_GCC_HEAP_MB "${_ember_heap_mb}" CACHE STRING
    "g++'s heap before its first garbage collection in ember's tests, benchmarks and kernels (MB; 0: g++'s default)")

set(EMBER_COMPILE_HEAP_OPTIONS "")
if(EMBER_GCC_HEAP_MB GREATER 0)
  math(EXPR _ember_heap_kb "${EMBER_GCC_HEAP_MB} * 1024")
  list(APPEND EMBER_COMPILE_HEAP_OPTIONS
       "$<$<COMPILE_LANG_AND_ID:CXX,GNU>:--param=ggc-min-heapsize=${_ember_heap_kb}>")
  # nvcc's host compiler: g++ where the C++ compiler is (CMake's default on Linux).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND EMBER_COMPILE_HEAP_OPTIONS
         "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=--param=ggc-min-heapsize=${_ember_heap_kb}>")
  endif()
endif()
