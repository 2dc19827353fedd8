// softmax, log_softmax and the losses on Vars: the Tensor operators of ops/rows/softmax.hpp and
// ops/rows/losses.hpp, recorded with their hand-written backward passes (one reduction and one
// elementwise pass for softmax; one elementwise pass for cross_entropy and nll_loss).
// mse_loss of Vars is an ordinary expression reduction, fused like any other.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../core/compiled_once.hpp"
#include "../ops/rows/losses.hpp"
#include "../ops/rows/softmax.hpp"
#include "op_node.hpp"
#include "reductions.hpp"
#include "var.hpp"

namespace ember::inline EMBER_UNIT_KIND {

template <FloatingElement T>
Var<T> softmax(const Var<T>& x, int axis) {
  const Tensor<T> y = softmax<T>(x.value(), axis);
  return Var<T>::from_node(
      autograd::record_op<T>("softmax", y, {x.node()}, {y}, [y, axis](const Tensor<T>& g) {
        return std::vector<Tensor<T>>{ops::softmax_backward<T>(y, g, axis)};
      }));
}

template <FloatingElement T>
Var<T> log_softmax(const Var<T>& x, int axis) {
  const Tensor<T> y = log_softmax<T>(x.value(), axis);
  return Var<T>::from_node(
      autograd::record_op<T>("log_softmax", y, {x.node()}, {y}, [y, axis](const Tensor<T>& g) {
        return std::vector<Tensor<T>>{ops::log_softmax_backward<T>(y, g, axis)};
      }));
}

template <FloatingElement T>
Var<T> cross_entropy(const Var<T>& logits, const Tensor<std::int64_t>& targets,
                     const CrossEntropyOptions& opt = {}) {
  using A = acc_t<T>;
  const Tensor<T> x = logits.value();
  const auto terms = ops::cross_entropy_terms<T>(x, targets, opt);
  const double count = ops::loss_divisor(terms.kept, opt.reduction);
  const Tensor<T> out = ops::reduce_loss<T, A>(terms.loss, opt.reduction, count);
  const Tensor<A> lse = terms.lse;
  return Var<T>::from_node(
      autograd::record_op<T>("cross_entropy", out, {logits.node()}, {x},
                             [x, targets, lse, opt, count](const Tensor<T>& g) {
                               return std::vector<Tensor<T>>{
                                   ops::cross_entropy_backward<T>(x, targets, lse, g, opt, count)};
                             }));
}

template <FloatingElement T>
Var<T> nll_loss(const Var<T>& logp, const Tensor<std::int64_t>& targets,
                Reduction reduction = Reduction::mean, std::int64_t ignore_index = -100) {
  const auto forward = ops::nll_loss_forward<T>(logp.value(), targets, reduction, ignore_index);
  const Tensor<T> out = forward.first;
  const double count = forward.second;
  const ops::ClassLayout l = ops::class_layout(logp.value(), targets, "nll_loss");
  const Shape in = logp.shape();
  return Var<T>::from_node(autograd::record_op<T>(
      "nll_loss", out, {logp.node()}, {},
      [targets, l, in, reduction, ignore_index, count](const Tensor<T>& g) {
        const Tensor<std::int64_t> t = targets.reshape(l.target_shape);
        const auto cls = ops::class_index(l, g.device());
        const Tensor<T> gt = reduction == Reduction::none ? g.reshape(l.target_shape)
                                                          : g.reshape(Shape::filled(in.rank(), 1));
        const double scale = reduction == Reduction::mean ? -1.0 / count : -1.0;
        Tensor<T> d = empty<T>(in, g.device());
        d = cast<T>(where(logical_and(cls == t, t != ignore_index), gt * scale, 0.0));
        return std::vector<Tensor<T>>{d};
      }));
}

/// Mean (or sum, or none) of (a - b)^2 where a or b is a Var: a fused expression reduction.
template <class A, class B>
requires(autograd::is_var<A>::value ||
         autograd::is_var<B>::value) auto mse_loss(const A& a, const B& b,
                                                   Reduction reduction = Reduction::mean) {
  using T = std::conditional_t<autograd::is_var<A>::value, typename A::value_type,
                               typename B::value_type>;
  if (reduction == Reduction::none) return Var<T>(square(a - b));
  if (reduction == Reduction::sum) return sum<decltype(square(a - b))>(square(a - b));
  return mean<decltype(square(a - b))>(square(a - b));
}
}  // namespace ember::inline EMBER_UNIT_KIND

/// Compiled once in ember::kernels (core/compiled_once.hpp): softmax, log-softmax, cross-entropy,
/// NLL and MSE on tensors and Vars, and their passes.
#define EMBER_LOSS_INSTANCES(EXPLICIT, T)                                                     \
  namespace ember {                                                                           \
  EXPLICIT Tensor<T> softmax<T>(const Tensor<T>&, int);                                       \
  EXPLICIT Tensor<T> log_softmax<T>(const Tensor<T>&, int);                                   \
  EXPLICIT Var<T> softmax<T>(const Var<T>&, int);                                             \
  EXPLICIT Var<T> log_softmax<T>(const Var<T>&, int);                                         \
  EXPLICIT Tensor<T> cross_entropy<T>(const Tensor<T>&, const Tensor<std::int64_t>&,          \
                                      const CrossEntropyOptions&);                            \
  EXPLICIT Var<T> cross_entropy<T>(const Var<T>&, const Tensor<std::int64_t>&,                \
                                   const CrossEntropyOptions&);                               \
  EXPLICIT Tensor<T> nll_loss<T>(const Tensor<T>&, const Tensor<std::int64_t>&, Reduction,    \
                                 std::int64_t);                                               \
  EXPLICIT Var<T> nll_loss<T>(const Var<T>&, const Tensor<std::int64_t>&, Reduction,          \
                              std::int64_t);                                                  \
  EXPLICIT Tensor<T> mse_loss<T>(const Tensor<T>&, const Tensor<T>&, Reduction);              \
  }                                                                                           \
  namespace ember::ops {                                                                      \
  EXPLICIT Tensor<T> softmax_backward<T>(const Tensor<T>&, const Tensor<T>&, int);            \
  EXPLICIT Tensor<T> log_softmax_backward<T>(const Tensor<T>&, const Tensor<T>&, int);        \
  EXPLICIT CrossEntropyTerms<acc_t<T>> cross_entropy_terms<T>(const Tensor<T>&,               \
                                                              const Tensor<std::int64_t>&,    \
                                                              const CrossEntropyOptions&);    \
  EXPLICIT Tensor<T> cross_entropy_backward<T>(const Tensor<T>&, const Tensor<std::int64_t>&, \
                                               const Tensor<acc_t<T>>&, const Tensor<T>&,     \
                                               const CrossEntropyOptions&, double);           \
  EXPLICIT std::pair<Tensor<T>, double> nll_loss_forward<T>(const Tensor<T>&,                 \
                                                            const Tensor<std::int64_t>&,      \
                                                            Reduction, std::int64_t);         \
  }
EMBER_EXTERN_INSTANCES(EMBER_LOSS_INSTANCES)
