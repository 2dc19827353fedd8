// CUDA's built-in names as the emulated device provides them, in the global namespace as CUDA's
// are: dim3 and uint3, and threadIdx, blockIdx, blockDim, gridDim and warpSize. The four
// coordinates are per OS thread: the block scheduler (block.hpp) sets blockIdx, blockDim and
// gridDim once per block and threadIdx every time it resumes a CUDA thread.
#pragma once

struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

inline thread_local uint3 threadIdx{};
inline thread_local uint3 blockIdx{};
inline thread_local dim3 blockDim{};
inline thread_local dim3 gridDim{};
inline constexpr int warpSize = 32;
