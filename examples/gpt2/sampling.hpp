// The next token from a position's logits, as gpt2_generate and gpt2_train's samples draw it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace gpt2 {

/// Greedy at temperature 0; else the logits divided by the temperature, the top_k most likely
/// (0: all), drawn with `rng`.
inline std::int32_t sample_token(const std::vector<double>& logits, double temperature,
                                 std::int64_t top_k, std::mt19937_64& rng) {
  std::vector<std::size_t> order(logits.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  const std::size_t top = top_k > 0
                              ? std::min<std::size_t>(static_cast<std::size_t>(top_k), order.size())
                              : order.size();
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                    [&](std::size_t a, std::size_t b) { return logits[a] > logits[b]; });
  if (temperature == 0) return static_cast<std::int32_t>(order[0]);
  std::vector<double> weights(top);
  for (std::size_t k = 0; k < top; ++k) {
    weights[k] = std::exp((logits[order[k]] - logits[order[0]]) / temperature);
  }
  std::discrete_distribution<std::size_t> draw(weights.begin(), weights.end());
  return static_cast<std::int32_t>(order[draw(rng)]);
}

}  // namespace gpt2
