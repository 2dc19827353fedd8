# Warnings for ember's own targets (tests, benchmarks, examples); never forced on consumers.
# EMBER_WERROR makes them errors (scripts/test.sh, and so CI, turns it on).
include_guard(GLOBAL)

option(EMBER_WERROR "Treat warnings in ember's own targets as errors" OFF)

function(ember_target_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra>"
      # nvcc hands its host pass `#pragma unroll`, which only the device pass understands.
      "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unknown-pragmas>")
    if(EMBER_WERROR)
      target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Werror>"
                                               "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Werror>")
    endif()
  elseif(MSVC)
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:/W4>")
    if(EMBER_WERROR)
      target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:/WX>")
    endif()
  endif()
endfunction()
