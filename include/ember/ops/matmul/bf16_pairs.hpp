// bf16 products on the CPU whose B operand is read in pairs ("VNNI" layout): a row of 16 32-bit
// words holds, for each of 16 columns n, the two bf16 B[2r][n] and B[2r + 1][n] of rows 2r and
// 2r + 1 of the contraction. Two instruction sets multiply in that layout:
// - AVX512-BF16's VDPBF16PS (Cooper Lake, Sapphire Rapids and later, AMD Zen 4 and later):
//   16 float lanes += the dot products of 16 pairs of bf16, twice the multiply-adds of a float
//   FMA of the same width. `product` here.
// - AMX's TDPBF16PS on 16 x 16 tiles of such rows (amx.hpp), where the CPU has AMX.
// Both take the same packed B (pack_transposed, pack_pairs), bf16 A rows and float C, so a kernel
// written against one runs on the other. Host code of GCC and clang on x86-64 only
// (EMBER_HAVE_BF16_PAIRS); elsewhere `avx512_bf16()` is false and callers keep their float paths.
// EMBER_CPU_AVX512_BF16=0 in the environment turns `product` off (the fallback's tests).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "../../core/cpu_features.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define EMBER_HAVE_BF16_PAIRS 1
#include <immintrin.h>
#else
#define EMBER_HAVE_BF16_PAIRS 0
#endif

namespace ember::ops::pairs {

/// Whether `product` may run: the CPU has AVX512-BF16 and the environment does not turn it off.
inline bool avx512_bf16() {
  static const bool ok = [] {
    const char* env = std::getenv("EMBER_CPU_AVX512_BF16");
    return ember::cpu_has_avx512_bf16() && (env == nullptr || std::strcmp(env, "0") != 0);
  }();
  return ok;
}

#if EMBER_HAVE_BF16_PAIRS
/// Functions that run AVX512-BF16 instructions (which imply AVX512F and AVX512BW).
#define EMBER_BF16_PAIRS_TARGET __attribute__((target("avx512bf16")))

/// out[i] = x[i] rounded to bf16 (bit patterns) for i < n, n a multiple of 16: VCVTNEPS2BF16,
/// round to nearest even as bf16(float), except that results below bf16's normal range flush to
/// zero (probabilities under 1e-38, which add nothing to a product).
EMBER_BF16_PAIRS_TARGET inline void to_bf16(const float* x, std::int64_t n, std::uint16_t* out) {
  for (std::int64_t i = 0; i < n; i += 16) {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), reinterpret_cast<const __m256i&>(h));
  }
}

/// C = A B, or C += A B when `accumulate`, with VDPBF16PS: C [M x N] float rows `ldc` apart, A
/// [M x 32 chunks] bf16 rows `lda` elements apart, B packed as blocks of 16 pairs x 16 columns
/// (pack_pairs, pack_transposed), the block of columns nb*16 .. nb*16+15 and contraction rows
/// kc*32 .. kc*32+31 at b + nb * b_block + kc * b_chunk words. M is a multiple of 8 and N of 32:
/// C is walked in blocks of 8 rows x 32 columns, sixteen accumulators, each pair of A broadcast
/// to both of B's vectors. (amx::product takes the same arguments.)
EMBER_BF16_PAIRS_TARGET inline void product(float* c, std::int64_t ldc, const std::uint16_t* a,
                                            std::int64_t lda, const std::uint32_t* b,
                                            std::int64_t b_block, std::int64_t b_chunk,
                                            std::int64_t M, std::int64_t N, std::int64_t chunks,
                                            bool accumulate) {
  constexpr int R = 8;
  for (std::int64_t m = 0; m < M; m += R) {
    for (std::int64_t n = 0; n < N; n += 32) {
      float* cb = c + m * ldc + n;
      __m512 acc[R][2];
      for (int r = 0; r < R; ++r) {
        acc[r][0] = accumulate ? _mm512_loadu_ps(cb + r * ldc) : _mm512_setzero_ps();
        acc[r][1] = accumulate ? _mm512_loadu_ps(cb + r * ldc + 16) : _mm512_setzero_ps();
      }
      const std::uint32_t* left = b + n / 16 * b_block;
      for (std::int64_t kc = 0; kc < chunks; ++kc) {
        const std::uint32_t* b0 = left + kc * b_chunk;
        const std::uint32_t* b1 = b0 + b_block;
        const std::uint16_t* ak = a + m * lda + kc * 32;
        for (int pair = 0; pair < 16; ++pair) {
          const auto v0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b0 + pair * 16));
          const auto v1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b1 + pair * 16));
          for (int r = 0; r < R; ++r) {
            std::int32_t w;
            std::memcpy(&w, ak + r * lda + 2 * pair, sizeof w);
            const auto x = reinterpret_cast<__m512bh>(_mm512_set1_epi32(w));
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, v0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, v1);
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        _mm512_storeu_ps(cb + r * ldc, acc[r][0]);
        _mm512_storeu_ps(cb + r * ldc + 16, acc[r][1]);
      }
    }
  }
}

/// Packs rows [0, rows) of x (bf16 bit patterns, `rows` x `cols`, rows `row_stride` apart) into
/// B blocks of the product x^T (contraction over cols): block (rb, cb) holds rows rb*16 .. rb*16+15
/// and columns cb*32 .. cb*32+31 as 16 x 16 pairs, out[((rb * chunks + cb) * 16 + pair) * 16 + n]
/// = the pair (x[rb*16 + n][cb*32 + 2 pair], x[..][cb*32 + 2 pair + 1]). Rows past `rows` up to a
/// whole block are zeros; cols is a multiple of 32. A whole block of 16 rows is a 16 x 16
/// transpose of pairs: one gather per pair, the 16 rows' pairs at once.
EMBER_BF16_PAIRS_TARGET inline void pack_transposed(const std::uint16_t* x, std::int64_t rows,
                                                    std::int64_t cols, std::int64_t row_stride,
                                                    std::uint32_t* out) {
  const std::int64_t blocks = (rows + 15) / 16, chunks = cols / 32;
  const bool gather = row_stride * 2 * 16 <= std::numeric_limits<std::int32_t>::max();
  const __m512i offsets =  // the byte offsets of a block's 16 rows
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(static_cast<std::int32_t>(gather ? row_stride * 2 : 0)));
  for (std::int64_t rb = 0; rb < blocks; ++rb) {
    for (std::int64_t cb = 0; cb < chunks; ++cb) {
      std::uint32_t* block = out + (rb * chunks + cb) * 256;
      if (gather && rb * 16 + 16 <= rows) {
        const std::uint16_t* base = x + rb * 16 * row_stride + cb * 32;
        for (std::int64_t pair = 0; pair < 16; ++pair) {
          // The masked form with a zero source: the plain one's undefined source trips GCC 12's
          // -Wmaybe-uninitialized.
          _mm512_storeu_si512(block + pair * 16,
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
          block[pair * 16 + n] = v;
        }
      }
    }
  }
}

/// Packs rows [0, rows) of x (bf16 bit patterns, `rows` x `cols`, rows `row_stride` apart) into
/// B blocks of the product with x (contraction over rows): block (kc, cb) holds rows kc*32 ..
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

}  // namespace ember::ops::pairs
