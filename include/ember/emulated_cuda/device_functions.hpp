// What device code sees on the emulated device: CUDA's keywords as the host compiler reads them,
// the block and warp collectives (run by block.hpp), atomics and fences with their memory-order
// meaning, and the intrinsics with CUDA's results (the correctly rounded ones exactly; the fast
// approximations, such as __expf, as the exact function, within CUDA's documented error).
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "block.hpp"

// ---- Keywords --------------------------------------------------------------------------------
// A kernel is an ordinary function; __shared__ memory belongs to the OS thread that runs the
// block (a block runs on one OS thread, block after block).
#define __global__
#define __device__
#define __host__
#define __constant__
#define __shared__ static thread_local
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict

// ---- Synchronisation -------------------------------------------------------------------------

inline void __syncthreads() { ember::emulated::this_block().sync_threads(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

namespace ember::emulated {
template <class T>
std::uint64_t to_lane_bits(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "a warp shuffle moves a value of at most 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <class T>
T from_lane_bits(std::uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}
template <class T>
T shuffle(Collective op, unsigned mask, T v, int arg, int width) {
  return from_lane_bits<T>(this_block().warp_collective(op, mask, to_lane_bits(v), arg, width));
}
}  // namespace ember::emulated

template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
  return ember::emulated::shuffle(ember::emulated::Collective::shfl, mask, var, src_lane, width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ember::emulated::shuffle(ember::emulated::Collective::shfl_up, mask, var,
                                  static_cast<int>(delta), width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ember::emulated::shuffle(ember::emulated::Collective::shfl_down, mask, var,
                                  static_cast<int>(delta), width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
  return ember::emulated::shuffle(ember::emulated::Collective::shfl_xor, mask, var, lane_mask,
                                  width);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned>(ember::emulated::this_block().warp_collective(
      ember::emulated::Collective::ballot, mask, predicate != 0, 0, warpSize));
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) == mask;
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ember::emulated::this_block().warp_collective(ember::emulated::Collective::sync, mask, 0, 0,
                                                warpSize);
}

// ---- Atomics (relaxed read-modify-writes, as CUDA's; fences order them) ------------------------

namespace ember::emulated {
template <class T>
std::atomic_ref<T> atomic_at(T* p) {
  return std::atomic_ref<T>(*p);
}
}  // namespace ember::emulated

template <class T>
requires std::is_arithmetic_v<T> T atomicAdd(T* address, T value) {
  return ember::emulated::atomic_at(address).fetch_add(value, std::memory_order_relaxed);
}
template <class T>
requires std::is_arithmetic_v<T> T atomicSub(T* address, T value) {
  return ember::emulated::atomic_at(address).fetch_sub(value, std::memory_order_relaxed);
}
template <class T>
T atomicExch(T* address, T value) {
  return ember::emulated::atomic_at(address).exchange(value, std::memory_order_relaxed);
}
template <class T>
T atomicCAS(T* address, T compare, T value) {
  ember::emulated::atomic_at(address).compare_exchange_strong(compare, value,
                                                              std::memory_order_relaxed);
  return compare;  // the old value either way
}
namespace ember::emulated {
/// Replaces *address by value while `better(value, old)`; returns the old value.
template <class T, class Better>
T atomic_keep(T* address, T value, Better better) {
  auto a = atomic_at(address);
  T old = a.load(std::memory_order_relaxed);
  while (better(value, old) && !a.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
  return old;
}
}  // namespace ember::emulated

template <class T>
T atomicMax(T* address, T value) {
  return ember::emulated::atomic_keep(address, value, [](T v, T old) { return old < v; });
}
template <class T>
T atomicMin(T* address, T value) {
  return ember::emulated::atomic_keep(address, value, [](T v, T old) { return v < old; });
}

// ---- Intrinsics --------------------------------------------------------------------------------

inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((std::uint64_t{a} * b) >> 32);
}
inline int __mulhi(int a, int b) { return static_cast<int>((std::int64_t{a} * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float a) { return 1.0f / std::sqrt(a); }
inline double rsqrt(double a) { return 1.0 / std::sqrt(a); }
inline float __expf(float a) { return std::exp(a); }
inline float __logf(float a) { return std::log(a); }
inline float __saturatef(float a) { return a < 0.0f ? 0.0f : (a > 1.0f ? 1.0f : a); }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v)); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline float __int_as_float(int v) { return __builtin_bit_cast(float, v); }
inline int __float_as_int(float v) { return __builtin_bit_cast(int, v); }
inline float __uint_as_float(unsigned v) { return __builtin_bit_cast(float, v); }
inline unsigned __float_as_uint(float v) { return __builtin_bit_cast(unsigned, v); }
template <class T>
T __ldg(const T* p) {
  return *p;
}
