# Warnings for ember's own targets (tests, benchmarks, examples); never forced on consumers.
include_guard(GLOBAL)

function(ember_target_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra>"
      # nvcc hands its host pass `#pragma unroll`, which only the device pass understands.
      "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unknown-pragmas>")
  elseif(MSVC)
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:/W4>")
  endif()
endfunction()
