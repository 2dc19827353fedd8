// dropout with counter-based Philox: element i is kept when the uniform number that
// Philox(seed, offset + i / 4) gives it is at least p, so for the same seed and offset the CPU
// and the GPU drop the same elements, and the backward recomputes the mask instead of storing it.
//   y = x / (1 - p) where kept, else 0   (training; p = 1 drops everything)
//   y = x                                (evaluation, or p = 0)
// One pass each way.
#pragma once

#include <cstdint>

#include "../core/dtype.hpp"
#include "../exec/assign.hpp"
#include "../expr/generator.hpp"
#include "../expr/operators.hpp"
#include "../tensor/tensor.hpp"

namespace ember {

/// Dropout's probability and its Philox stream, for operators that fuse a dropout
/// (dropout_add_layer_norm). p = 0 (the default; what evaluation passes) drops nothing.
struct DropoutOptions {
  double p = 0;
  std::uint64_t seed = 0, offset = 0;
};
}  // namespace ember

namespace ember::ops::inline EMBER_UNIT_KIND {

/// x times the scaled keep-mask of (seed, offset): the forward and, on the gradient, backward.
template <FloatingElement T>
Tensor<T> apply_dropout_mask(const Tensor<T>& x, double p, std::uint64_t seed,
                             std::uint64_t offset) {
  const expr::Generated<float, expr::UniformGen> u(x.shape(), x.device(),
                                                   {seed, offset, 0.0f, 1.0f});
  const double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  return Tensor<T>(cast<T>(where(u >= p, x * scale, 0.0)));
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// Dropout of x with probability p (see the top of this header). `seed` and `offset` select the
/// random stream: advance the offset by x.numel() between calls for fresh masks.
template <FloatingElement T>
Tensor<T> dropout(const Tensor<T>& x, double p, bool training, std::uint64_t seed,
                  std::uint64_t offset = 0) {
  EMBER_CHECK(p >= 0 && p <= 1, "ember: dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  return ops::apply_dropout_mask<T>(x, p, seed, offset);
}
}  // namespace ember::inline EMBER_UNIT_KIND
