// Number formatting shared by the examples' reports.
#pragma once

#include <cstdint>
#include <string>

namespace trainer {

/// 25557032 -> "25,557,032".
inline std::string thousands(std::int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace trainer
