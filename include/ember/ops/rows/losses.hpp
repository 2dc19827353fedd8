// Losses on Tensors: cross_entropy (log-softmax and NLL fused, label smoothing, ignore_index),
// nll_loss, mse_loss; and cross_entropy's backward.
//
// cross_entropy(logits [N, C, d...], targets [N, d...] int64): with lse the logsumexp over the
// classes and e = label_smoothing,
//   loss_i = lse_i - (1 - e) x_{i, t_i} - e/C sum_c x_{i, c}       (0 where t_i == ignore_index)
// in two reductions over the logits (lse; the weighted sum, whose weights come from comparing
// a class index with the target inside the expression: no one-hot tensor is made), and
//   dlogits = g_i (softmax_{i,c} - (1 - e) [c == t_i] - e/C)        (0 where ignored)
// in one elementwise pass. [N, C] logits run a row at a time instead (cross_entropy_rows.hpp:
// one launch each way). Reduction mean divides by the number of targets not ignored, as
// PyTorch does. Targets outside [0, C) other than ignore_index are an ember::Error.
#pragma once

#include <cstdint>
#include <string>

#include "../../core/dtype.hpp"
#include "../../core/shape.hpp"
#include "../../exec/assign.hpp"
#include "../../exec/reduce.hpp"
#include "../../expr/generator.hpp"
#include "../../expr/operators.hpp"
#include "../../tensor/tensor.hpp"
#include "cross_entropy_rows.hpp"
#include "softmax.hpp"

namespace ember {

enum class Reduction { none, mean, sum };

struct CrossEntropyOptions {
  double label_smoothing = 0.0;
  std::int64_t ignore_index = -100;
  Reduction reduction = Reduction::mean;
};
}  // namespace ember

namespace ember::ops::inline EMBER_UNIT_KIND {

/// The class index c at every element of a [N, C, d...] tensor, as a lazy expression shaped
/// [C, 1, ...] (broadcast), and the targets reshaped to [N, 1, d...].
struct ClassLayout {
  std::int64_t N, C;
  Shape class_shape, target_shape;
};
template <FloatingElement T>
ClassLayout class_layout(const Tensor<T>& logits, const Tensor<std::int64_t>& targets,
                         const char* name) {
  EMBER_CHECK(logits.defined() && targets.defined(), "ember: ", name, ": undefined operand");
  EMBER_CHECK(logits.rank() >= 2, "ember: ", name, ": logits must be [N, C, ...], got ",
              logits.shape().str());
  Shape want = logits.shape();
  want.erase(1);
  EMBER_CHECK(targets.shape() == want, "ember: ", name, ": targets of shape ",
              targets.shape().str(), " for logits of shape ", logits.shape().str(), " (want ",
              want.str(), ")");
  EMBER_CHECK(logits.device() == targets.device(), "ember: ", name,
              ": logits and targets are on different devices");
  ClassLayout l{logits.size(0), logits.size(1), Shape::filled(logits.rank() - 1, 1), want};
  l.class_shape[0] = l.C;
  l.target_shape.insert(1, 1);
  return l;
}
inline auto class_index(const ClassLayout& l, Device device) {
  return expr::Generated<std::int64_t, expr::ArangeGen>(l.class_shape, device, {0.0, 1.0});
}

/// Throws unless every target is in [0, C) or equal to ignore_index; returns how many are not
/// ignore_index (a mean's divisor). One integer reduction, so one wait for a GPU: a kept target
/// counts 1 and a bad one 2^32; the bad value itself is looked up only when there is one.
template <class = void>  // compiled only where called (docs/design.md)
std::int64_t checked_target_count(const Tensor<std::int64_t>& t, std::int64_t C,
                                  std::int64_t ignore, const char* name) {
  if (t.numel() == 0) return 0;
  constexpr std::int64_t kBad = std::int64_t{1} << 32;
  const auto kept = t != ignore;
  const auto bad = logical_and(kept, logical_or(t < std::int64_t{0}, t >= C));
  const auto weight = where(bad, kBad, cast<std::int64_t>(kept));
  const std::int64_t total = sum<decltype(weight)>(weight).item();
  if (total >= kBad) {
    const auto counted = where(t == ignore, std::int64_t{0}, t);
    const auto lo = min<decltype(counted)>(counted).item();
    const auto hi = max<decltype(counted)>(counted).item();
    fail("ember: ", name, ": target ", lo < 0 ? lo : hi, " is outside the ", C, " classes [0, ", C,
         ") and is not ignore_index (", ignore, ")");
  }
  return total;
}

/// What cross_entropy computes before its reduction: the per-element losses [N, d...] in the
/// compute type, the logsumexp they used (kept for the backward), and the number of targets
/// that are not ignore_index.
template <class A>
struct CrossEntropyTerms {
  Tensor<A> loss, lse;
  std::int64_t kept = 0;
};

/// cross_entropy's terms (see CrossEntropyTerms), after checking the operands.
template <FloatingElement T>
CrossEntropyTerms<acc_t<T>> cross_entropy_terms(const Tensor<T>& logits,
                                                const Tensor<std::int64_t>& targets,
                                                const CrossEntropyOptions& opt) {
  using A = acc_t<T>;
  const ClassLayout l = class_layout(logits, targets, "cross_entropy");
  EMBER_CHECK(opt.label_smoothing >= 0 && opt.label_smoothing <= 1,
              "ember: cross_entropy: label_smoothing must be in [0, 1], got ", opt.label_smoothing);
  const std::int64_t kept = checked_target_count(targets, l.C, opt.ignore_index, "cross_entropy");
  if (cross_entropy_rows_apply(logits)) {
    auto [loss, lse] =
        cross_entropy_rows<T>(logits, targets, opt.ignore_index, opt.label_smoothing);
    return {std::move(loss), std::move(lse), kept};
  }
  const Tensor<A> lse = kept_logsumexp<T>(logits, 1, "cross_entropy");
  const Tensor<std::int64_t> t = targets.reshape(l.target_shape);
  const auto cls = class_index(l, logits.device());
  const double e = opt.label_smoothing, on = 1.0 - e, off = l.C > 0 ? e / double(l.C) : 0.0;
  // sum_c w_c x_c with w = (1 - e)[c == t] + e/C: one fused reduction over the classes.
  const Tensor<A> picked = exec::reduce_expression<A>(logits * (cast<A>(cls == t) * on + off),
                                                      reduce::Bound<reduce::Sum<A>>{},
                                                      "cross_entropy", Dims{1}, true, true);
  Tensor<A> loss = Tensor<A>(where(t == opt.ignore_index, 0.0, lse - picked));
  Shape s = l.target_shape;
  s.erase(1);
  return {loss.reshape(s), lse, kept};
}

/// The divisor of a mean over targets: how many are not ignore_index (1 for sum and none).
inline double loss_divisor(std::int64_t kept, Reduction r) {
  return r == Reduction::mean ? static_cast<double>(kept) : 1.0;
}

/// The reduced loss in T: the per-element losses (none), their sum, or their sum / count (mean),
/// each rounded to T in the pass that finishes it.
template <FloatingElement T, class A>
Tensor<T> reduce_loss(const Tensor<A>& loss, Reduction r, double count) {
  if (r == Reduction::none) return Tensor<T>(cast<T>(loss));
  const Tensor<A> s = sum<Tensor<A>>(loss);
  if (r == Reduction::sum) return Tensor<T>(cast<T>(s));
  return Tensor<T>(cast<T>(s / count));
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// Cross-entropy of logits [N, C, d...] against class targets [N, d...] (see the top).
template <FloatingElement T>
Tensor<T> cross_entropy(const Tensor<T>& logits, const Tensor<std::int64_t>& targets,
                        const CrossEntropyOptions& opt = {}) {
  using A = acc_t<T>;
  const auto terms = ops::cross_entropy_terms<T>(logits, targets, opt);
  const double count = ops::loss_divisor(terms.kept, opt.reduction);
  return ops::reduce_loss<T, A>(terms.loss, opt.reduction, count);
}
}  // namespace ember::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// nll_loss's result and the divisor its mean used (for the backward).
template <FloatingElement T>
std::pair<Tensor<T>, double> nll_loss_forward(const Tensor<T>& logp,
                                              const Tensor<std::int64_t>& targets,
                                              Reduction reduction, std::int64_t ignore_index) {
  using A = acc_t<T>;
  const ClassLayout l = class_layout(logp, targets, "nll_loss");
  const std::int64_t kept = checked_target_count(targets, l.C, ignore_index, "nll_loss");
  const Tensor<std::int64_t> t = targets.reshape(l.target_shape);
  const auto cls = class_index(l, logp.device());
  // An ignored target adds nothing, also where ignore_index names a real class.
  Tensor<A> picked =
      exec::reduce_expression<A>(where(t == ignore_index, 0.0, where(cls == t, -logp, 0.0)),
                                 reduce::Bound<reduce::Sum<A>>{}, "nll_loss", Dims{1}, false, true);
  const double count = loss_divisor(kept, reduction);
  Shape s = l.target_shape;
  s.erase(1);
  return {reduce_loss<T, A>(picked.reshape(s), reduction, count), count};
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// The negative log-likelihood of log-probabilities logp [N, C, d...] at targets [N, d...].
template <FloatingElement T>
Tensor<T> nll_loss(const Tensor<T>& logp, const Tensor<std::int64_t>& targets,
                   Reduction reduction = Reduction::mean, std::int64_t ignore_index = -100) {
  return ops::nll_loss_forward<T>(logp, targets, reduction, ignore_index).first;
}
}  // namespace ember::inline EMBER_UNIT_KIND

namespace ember::ops::inline EMBER_UNIT_KIND {

/// The gradient of cross_entropy's logits, given the gradient g of its (reduced) result.
template <FloatingElement T>
Tensor<T> cross_entropy_backward(const Tensor<T>& logits, const Tensor<std::int64_t>& targets,
                                 const Tensor<acc_t<T>>& lse, const Tensor<T>& g,
                                 const CrossEntropyOptions& opt, double count) {
  const ClassLayout l = class_layout(logits, targets, "cross_entropy");
  const double scale = opt.reduction == Reduction::mean ? 1.0 / count : 1.0;
  if (cross_entropy_rows_apply(logits)) {
    return cross_entropy_rows_backward<T>(logits, targets, lse, g, opt.ignore_index,
                                          opt.label_smoothing, scale);
  }
  const Tensor<std::int64_t> t = targets.reshape(l.target_shape);
  const auto cls = class_index(l, logits.device());
  const double e = opt.label_smoothing, on = 1.0 - e, off = l.C > 0 ? e / double(l.C) : 0.0;
  // g per target element, broadcast over the classes.
  Tensor<T> gt = opt.reduction == Reduction::none ? g.reshape(l.target_shape)
                                                  : g.reshape(Shape::filled(logits.rank(), 1));
  return Tensor<T>(
      cast<T>(where(t == opt.ignore_index, 0.0,
                    gt * scale * (exp(logits - lse) - cast<acc_t<T>>(cls == t) * on - off))));
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// Mean (or sum, or none) of (a - b)^2.
template <FloatingElement T>
Tensor<T> mse_loss(const Tensor<T>& a, const Tensor<T>& b, Reduction reduction = Reduction::mean) {
  if (reduction == Reduction::none) return Tensor<T>(square(a - b));
  if (reduction == Reduction::sum) return sum(square(a - b));
  return mean(square(a - b));
}
}  // namespace ember::inline EMBER_UNIT_KIND
