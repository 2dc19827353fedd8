// Division by a runtime constant with a multiply-high and a shift (Granlund & Montgomery), for
// turning a linear index into coordinates in kernels. Exact for dividends below 2^31.
#pragma once

#include <cstdint>

#include "../core/config.hpp"

namespace ember::exec {

struct FastDivmod {
  std::uint32_t divisor = 1;
  std::uint32_t multiplier = 0;
  std::uint32_t shift = 0;

  FastDivmod() = default;
  explicit FastDivmod(std::uint32_t d) : divisor(d) {
    // shift = ceil(log2 d); multiplier = floor(2^32 (2^shift - d) / d) + 1
    while ((std::uint64_t{1} << shift) < d) ++shift;
    multiplier = static_cast<std::uint32_t>(
        ((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift) - d)) / d + 1);
  }

  EMBER_HD EMBER_FORCEINLINE std::uint32_t div(std::uint32_t n) const {
#if defined(EMBER_DEVICE_CODE)
    const std::uint32_t hi = __umulhi(n, multiplier);
#else
    const auto hi = static_cast<std::uint32_t>((std::uint64_t{n} * multiplier) >> 32);
#endif
    return static_cast<std::uint32_t>((std::uint64_t{hi} + n) >> shift);
  }
  EMBER_HD EMBER_FORCEINLINE void divmod(std::uint32_t n, std::uint32_t& q,
                                         std::uint32_t& r) const {
    q = div(n);
    r = n - q * divisor;
  }
};

}  // namespace ember::exec
