// Intel AMX for bf16 products on the CPU (Sapphire Rapids and later): eight tile registers of
// 16 rows x 64 bytes, and TDPBF16PS, C[16 x 16 float] += A[16 x 32 bf16] B[32 x 16 bf16], about
// sixteen times the bf16 work of an AVX-512 FMA a cycle. B is read in pairs, packed as
// bf16_pairs.hpp packs it for AVX512-BF16: a B tile is one of its blocks of 16 pairs x 16 columns.
//
// Usable when the CPU has AMX-TILE and AMX-BF16 (and AVX512-BF16, whose conversion to bf16 runs
// beside the tiles: every AMX CPU has it) and Linux lets the process use the tile data
// (arch_prctl ARCH_REQ_XCOMP_PERM, asked once); every thread loads the tile configuration before
// its first tile instruction (configure_tiles) and releases the tiles after its last. Host code of
// GCC and clang on x86-64 only; elsewhere `usable()` is false and the callers keep their AVX
// paths. EMBER_CPU_AMX=0 in the environment turns it off (the fallback's tests, comparisons).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "bf16_pairs.hpp"

#if EMBER_HAVE_BF16_PAIRS
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ember::ops::amx {

/// Whether AMX's bf16 tiles may run in this process (asked once).
inline bool usable() {
#if EMBER_HAVE_BF16_PAIRS
  static const bool ok = [] {
    const char* env = std::getenv("EMBER_CPU_AMX");
    if (env != nullptr && std::strcmp(env, "0") == 0) return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    const bool tile = (d >> 24) & 1u, bf16 = (d >> 22) & 1u;
    // AVX512-BF16 converts to bf16 beside the tiles (pairs::to_bf16).
    if (!tile || !bf16 || !ember::cpu_has_avx512_bf16()) return false;
    constexpr long kReqXcompPerm = 0x1023, kXfeatureTileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureTileData) == 0;
  }();
  return ok;
#else
  return false;
#endif
}

#if EMBER_HAVE_BF16_PAIRS
/// Functions that run tile instructions (and AVX512-BF16's conversion, which every AMX CPU has).
#define EMBER_AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512bf16")))

/// LDTILECFG's 64 bytes: palette 1, every tile 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
  TileConfig() {
    for (int t = 0; t < 8; ++t) {
      bytes_per_row[t] = 64;
      rows[t] = 16;
    }
  }
};

/// Loads the configuration into this thread's tile registers (before the first tile instruction).
EMBER_AMX_TARGET inline void configure_tiles() {
  static const TileConfig config;
  _tile_loadconfig(&config);
}
/// Gives the tile registers back to the OS's lazy state (after the last tile instruction).
EMBER_AMX_TARGET inline void release_tiles() { _tile_release(); }

/// C = A B, or C += A B when `accumulate`, on the tiles: C [M x N] float rows `ldc` apart, A
/// [M x 32 chunks] bf16 rows `lda` elements apart, B packed as 16 x 16-pair tiles (pack_pairs,
/// pairs::pack_transposed), the tile of column block nb (16 columns) and chunk kc (32 rows of the
/// contraction) at b + nb * b_block + kc * b_chunk words. M and N are multiples of 32: C is
/// walked in 32 x 32 blocks, tiles 0-3 its quarters, 4-5 A's two row halves, 6-7 B's two columns.
EMBER_AMX_TARGET inline void product(float* c, std::int64_t ldc, const std::uint16_t* a,
                                     std::int64_t lda, const std::uint32_t* b, std::int64_t b_block,
                                     std::int64_t b_chunk, std::int64_t M, std::int64_t N,
                                     std::int64_t chunks, bool accumulate) {
  const std::int64_t c_bytes = ldc * 4, a_bytes = lda * 2;
  for (std::int64_t m = 0; m < M; m += 32) {
    for (std::int64_t n = 0; n < N; n += 32) {
      float* top = c + m * ldc + n;
      float* bottom = top + 16 * ldc;
      if (accumulate) {
        _tile_loadd(0, top, c_bytes);
        _tile_loadd(1, top + 16, c_bytes);
        _tile_loadd(2, bottom, c_bytes);
        _tile_loadd(3, bottom + 16, c_bytes);
      } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
      }
      for (std::int64_t kc = 0; kc < chunks; ++kc) {
        const std::uint32_t* bt = b + n / 16 * b_block + kc * b_chunk;
        _tile_loadd(4, a + m * lda + kc * 32, a_bytes);
        _tile_loadd(5, a + (m + 16) * lda + kc * 32, a_bytes);
        _tile_loadd(6, bt, 64);
        _tile_loadd(7, bt + b_block, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      _tile_stored(0, top, c_bytes);
      _tile_stored(1, top + 16, c_bytes);
      _tile_stored(2, bottom, c_bytes);
      _tile_stored(3, bottom + 16, c_bytes);
    }
  }
}

#endif

}  // namespace ember::ops::amx
