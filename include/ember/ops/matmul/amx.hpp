// Intel AMX for bf16 products on the CPU (Sapphire Rapids and later): eight tile registers of
// 16 rows x 64 bytes, and TDPBF16PS, C[16 x 16 float] += A[16 x 32 bf16] B[32 x 16 bf16], about
// sixteen times the bf16 work of an AVX-512 FMA a cycle. B is read in pairs ("VNNI" layout): row r
// of a B tile holds, for each of its 16 columns n, the two bf16 B[2r][n] and B[2r + 1][n].
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
#include <limits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define EMBER_HAVE_AMX 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define EMBER_HAVE_AMX 0
#endif

namespace ember::ops::amx {

/// Whether AMX's bf16 tiles may run in this process (asked once).
inline bool usable() {
#if EMBER_HAVE_AMX
  static const bool ok = [] {
    const char* env = std::getenv("EMBER_CPU_AMX");
    if (env != nullptr && std::strcmp(env, "0") == 0) return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    const bool tile = (d >> 24) & 1u, bf16 = (d >> 22) & 1u;
    // AVX512-BF16 (leaf 7, subleaf 1, EAX bit 5) converts to bf16 beside the tiles (to_bf16).
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d) == 0) return false;
    const bool convert = (a >> 5) & 1u;
    if (!tile || !bf16 || !convert) return false;
    constexpr long kReqXcompPerm = 0x1023, kXfeatureTileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureTileData) == 0;
  }();
  return ok;
#else
  return false;
#endif
}

#if EMBER_HAVE_AMX
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

/// out[i] = x[i] rounded to bf16 (bit patterns) for i < n, n a multiple of 16: VCVTNEPS2BF16,
/// round to nearest even as bf16(float), except that results below bf16's normal range flush to
/// zero (probabilities under 1e-38, which add nothing to a product).
EMBER_AMX_TARGET inline void to_bf16(const float* x, std::int64_t n, std::uint16_t* out) {
  for (std::int64_t i = 0; i < n; i += 16) {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), reinterpret_cast<const __m256i&>(h));
  }
}

/// C = A B, or C += A B when `accumulate`, on the tiles: C [M x N] float rows `ldc` apart, A
/// [M x 32 chunks] bf16 rows `lda` elements apart, B packed as 16 x 16-pair tiles (pack_pairs,
/// pack_transposed), the tile of column block nb (16 columns) and chunk kc (32 rows of the
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

/// Packs rows [0, rows) of x (bf16 bit patterns, `rows` x `cols`, rows `row_stride` apart) into
/// B tiles of the product x^T (contraction over cols): tile (rb, cb) holds rows rb*16 .. rb*16+15
/// and columns cb*32 .. cb*32+31 as 16 x 16 pairs, out[((rb * chunks + cb) * 16 + pair) * 16 + n]
/// = the pair (x[rb*16 + n][cb*32 + 2 pair], x[..][cb*32 + 2 pair + 1]). Rows past `rows` up to a
/// whole tile are zeros; cols is a multiple of 32. A whole block of 16 rows is a 16 x 16
/// transpose of pairs: one gather per pair, the 16 rows' pairs at once.
EMBER_AMX_TARGET inline void pack_transposed(const std::uint16_t* x, std::int64_t rows,
                                             std::int64_t cols, std::int64_t row_stride,
                                             std::uint32_t* out) {
  const std::int64_t blocks = (rows + 15) / 16, chunks = cols / 32;
  const bool gather = row_stride * 2 * 16 <= std::numeric_limits<std::int32_t>::max();
  const __m512i offsets =  // the byte offsets of a block's 16 rows
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(static_cast<std::int32_t>(gather ? row_stride * 2 : 0)));
  for (std::int64_t rb = 0; rb < blocks; ++rb) {
    for (std::int64_t cb = 0; cb < chunks; ++cb) {
      std::uint32_t* tile = out + (rb * chunks + cb) * 256;
      if (gather && rb * 16 + 16 <= rows) {
        const std::uint16_t* base = x + rb * 16 * row_stride + cb * 32;
        for (std::int64_t pair = 0; pair < 16; ++pair) {
          // The masked form with a zero source: the plain one's undefined source trips GCC 12's
          // -Wmaybe-uninitialized.
          _mm512_storeu_si512(tile + pair * 16,
                              _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), 0xFFFF, offsets,
                                                          base + 2 * pair, 1));
        }
        continue;
      }
      for (std::int64_t n = 0; n < 16; ++n) {
        const std::int64_t r = rb * 16 + n;
        const std::uint16_t* src = x + r * row_stride + cb * 32;
        for (std::int64_t pair = 0; pair < 16; ++pair) {
          std::uint32_t v = 0;
          if (r < rows) std::memcpy(&v, src + 2 * pair, sizeof v);
          tile[pair * 16 + n] = v;
        }
      }
    }
  }
}

/// Packs rows [0, rows) of x (bf16 bit patterns, `rows` x `cols`, rows `row_stride` apart) into
/// B tiles of the product with x (contraction over rows): tile (kc, cb) holds rows kc*32 ..
/// kc*32+31 and columns cb*16 .. cb*16+15 as out[((kc * col_blocks + cb) * 16 + pair) * 16 + n]
/// = the pair (x[kc*32 + 2 pair][cb*16 + n], x[kc*32 + 2 pair + 1][cb*16 + n]). Rows past `rows`
/// up to a whole 32 are zeros; cols is a multiple of 16.
inline void pack_pairs(const std::uint16_t* x, std::int64_t rows, std::int64_t cols,
                       std::int64_t row_stride, std::uint32_t* out) {
  const std::int64_t chunks = (rows + 31) / 32, col_blocks = cols / 16;
  for (std::int64_t kc = 0; kc < chunks; ++kc) {
    for (std::int64_t pair = 0; pair < 16; ++pair) {
      const std::int64_t r0 = kc * 32 + 2 * pair, r1 = r0 + 1;
      const std::uint16_t* lo = x + r0 * row_stride;
      const std::uint16_t* hi = x + r1 * row_stride;
      for (std::int64_t cb = 0; cb < col_blocks; ++cb) {
        std::uint32_t* dst = out + ((kc * col_blocks + cb) * 16 + pair) * 16;
        for (std::int64_t n = 0; n < 16; ++n) {
          const std::uint32_t a = r0 < rows ? lo[cb * 16 + n] : 0;
          const std::uint32_t b = r1 < rows ? hi[cb * 16 + n] : 0;
          dst[n] = a | (b << 16);
        }
      }
    }
  }
}

#endif

}  // namespace ember::ops::amx
