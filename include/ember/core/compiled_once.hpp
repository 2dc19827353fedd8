// ember::kernels, the operators compiled once (docs/design.md, "Operators compiled once"). Each
// operator family's header ends with its instances for an element type T, a macro
// EMBER_<FAMILY>_INSTANCES(EXPLICIT, T) whose entries start with EXPLICIT: `template` in the
// library's sources (src/kernels/), `extern template` in a program that links the library
// (EMBER_KERNELS), which then calls the library's copies instead of compiling its own. The one
// list serves both, so a declaration cannot drift from its definition; a program that links
// nothing instantiates everything where it is used, as in any header-only build.
//
// Only function templates defined outside a class (not inline) are listed: GCC instantiates an
// inline function for inlining even when it is declared extern, and with it everything it calls.
// A list's functions are in the kind's namespace (or are a shared type's members that name
// exec::mode), so a host-compiled unit declares the host copies and an nvcc one the CUDA copies
// (core/config.hpp).
#pragma once

#include "config.hpp"

/// Apply LIST(EXPLICIT, T) for each floating element type, and for each of the others (labels,
/// indices, masks, pixels).
#define EMBER_FLOATING_TYPES(LIST, EXPLICIT) \
  LIST(EXPLICIT, float)                      \
  LIST(EXPLICIT, double) LIST(EXPLICIT, ember::bf16) LIST(EXPLICIT, ember::half)
#define EMBER_INTEGER_TYPES(LIST, EXPLICIT) \
  LIST(EXPLICIT, std::int64_t)              \
  LIST(EXPLICIT, std::int32_t) LIST(EXPLICIT, std::uint8_t) LIST(EXPLICIT, bool)

/// Declares family LIST's instances extern for every element type the library compiles
/// operators for, where the program links the library: float, bf16, half, and double in
/// host-compiled units only (GPUs train in the other three; an nvcc unit that uses double
/// operators compiles them itself, as in header-only use: that saves the library's longest unit).
#if !defined(EMBER_KERNELS)
#define EMBER_EXTERN_INSTANCES(LIST)
#elif defined(EMBER_CUDA_KERNELS)
#define EMBER_EXTERN_INSTANCES(LIST) \
  LIST(extern template, float) LIST(extern template, ember::bf16) LIST(extern template, ember::half)
#else
#define EMBER_EXTERN_INSTANCES(LIST) EMBER_FLOATING_TYPES(LIST, extern template)
#endif
