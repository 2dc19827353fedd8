// Float <-> bit-pattern helpers shared by the tests.
#pragma once

#include <bit>
#include <cstdint>

namespace ember::testing {
inline float float_from_bits(std::uint32_t x) { return std::bit_cast<float>(x); }
inline std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }
}  // namespace ember::testing
