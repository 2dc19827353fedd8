// multinomial: category indices drawn from rows of non-negative weights, as PyTorch's
// torch.multinomial (sampling a language model's next token, top-k or nucleus filtered first).
//
//   with replacement     each sample on its own: the first category whose running sum of weights
//                        exceeds u * total, u uniform in [0, 1) (inverse CDF; one fused
//                        reduction over [rows, samples, categories], nothing of that size kept)
//   without replacement  an exponential race: key_c = E_c / w_c with E_c = -log(u_c) ~ Exp(1); the
//                        categories of the smallest keys, in order, are draws one after another
//                        without replacement (each next with probability w_c over the weights
//                        left), as PyTorch samples them
//
// The uniforms come from Philox(seed, offset) as rand's do: the same indices on every device.
// The distribution is PyTorch's; the indices drawn are not its (another generator).
#pragma once

#include <cmath>
#include <cstdint>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../exec/generate.hpp"
#include "../exec/reduce.hpp"
#include "../expr/operators.hpp"
#include "../tensor/tensor.hpp"
#include "indexing/rearrange.hpp"
#include "indexing/sort.hpp"

namespace ember::inline EMBER_UNIT_KIND {

/// `num_samples` category indices per row of `weights` ([C], or [rows, C]: non-negative, finite,
/// a positive sum per row; they need not sum to 1), with or without replacement (see the top of
/// this header); int64 [num_samples] or [rows, num_samples] on weights' device.
template <FloatingElement T>
Tensor<std::int64_t> multinomial(const Tensor<T>& weights, std::int64_t num_samples,
                                 bool replacement, std::uint64_t seed, std::uint64_t offset = 0) {
  EMBER_CHECK(weights.defined() && (weights.rank() == 1 || weights.rank() == 2),
              "ember: multinomial: weights must be [C] or [rows, C], got ",
              weights.defined() ? weights.shape().str() : std::string("an undefined tensor"));
  const std::int64_t C = weights.size(weights.rank() - 1);
  const std::int64_t R = weights.rank() == 2 ? weights.size(0) : 1;
  EMBER_CHECK(C > 0, "ember: multinomial: no categories (shape ", weights.shape().str(), ")");
  EMBER_CHECK(num_samples > 0, "ember: multinomial: num_samples must be positive, got ",
              num_samples);
  const Device device = weights.device();
  const Tensor<double> w = Tensor<double>(cast<double>(weights)).reshape(Shape{R, C});
  // The weights checked as PyTorch checks them (a few reductions, read on the host); a NaN makes
  // the sum NaN, an infinity makes it infinite.
  const double lowest = min(w).item(), total = sum(w).item();
  EMBER_CHECK(lowest >= 0.0 && std::isfinite(total),
              "ember: multinomial: weights must be finite and non-negative");
  const Tensor<std::int64_t> positive = sum(cast<std::int64_t>(w > 0.0), Dims{1});
  const std::int64_t fewest = min(positive).item();
  EMBER_CHECK(fewest > 0, "ember: multinomial: a row's weights sum to 0");
  EMBER_CHECK(replacement || num_samples <= fewest, "ember: multinomial: ", num_samples,
              " samples without replacement, but a row has only ", fewest,
              " categories of positive weight");
  const Shape out = weights.rank() == 2 ? Shape{R, num_samples} : Shape{num_samples};
  if (!replacement) {
    const Tensor<double> u = rand<double>(Shape{R, C}, seed, device, 0.0, 1.0, offset);
    const Tensor<double> keys = -log(u) / w;  // weight 0: key +inf, never among the first
    return topk(keys, num_samples, 1, /*largest=*/false).indices.reshape(out);
  }
  const Tensor<double> cdf = cumsum(w, 1);
  const Tensor<double> u = rand<double>(Shape{R, num_samples, 1}, seed, device, 0.0, 1.0, offset);
  const Tensor<double> target = u * cdf.narrow(1, C - 1, 1).reshape(Shape{R, 1, 1});
  // The index is the number of running sums at or below the target; a target that rounding put
  // at the total goes to the last category of positive weight.
  const Tensor<std::int64_t> counted =
      sum(cast<std::int64_t>(cdf.reshape(Shape{R, 1, C}) <= target), Dims{2});
  const Tensor<double> index = arange<double>(static_cast<double>(C), device);
  const Tensor<std::int64_t> last =
      cast<std::int64_t>(max(where(w > 0.0, index.reshape(Shape{1, C}), -1.0), Dims{1}));
  return Tensor<std::int64_t>(
             where(counted > last.reshape(Shape{R, 1}), last.reshape(Shape{R, 1}), counted))
      .reshape(out);
}
}  // namespace ember::inline EMBER_UNIT_KIND
