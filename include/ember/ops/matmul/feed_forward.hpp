// feed_forward on Tensors: a transformer's position-wise feed-forward block, two linears with an
// activation between,
//
//   feed_forward(x, w1, b1, w2, b2, act) = linear(linear(x, w1, b1, act), w2, b2)
//   x [..., K], w1 [F, K], b1 [F], w2 [N, F], b2 [N] -> [..., N]   (b1, b2 undefined for none)
//
// as one operation, so that its recorded form (autograd/feed_forward.hpp) can fold the
// activation's gradient into the second product's backward GEMM.
#pragma once

#include "../../core/error.hpp"
#include "../../tensor/tensor.hpp"
#include "matmul.hpp"

namespace ember::ops::inline EMBER_UNIT_KIND {

/// The shape checks of feed_forward beyond each linear's: the inner widths agree.
template <Storable T>
void check_feed_forward_args(const Tensor<T>& x, const Tensor<T>& w1, const Tensor<T>& b1,
                             const Tensor<T>& w2, const Tensor<T>& b2) {
  check_linear_args(x, w1, b1);
  EMBER_CHECK(w2.defined() && w2.rank() == 2 && w2.size(1) == w1.size(0),
              "ember: feed_forward: second weight ",
              w2.defined() ? w2.shape().str() : std::string("undefined"), " does not take the ",
              w1.size(0), " features of the first (", w1.shape().str(), ")");
  EMBER_CHECK(!b2.defined() || b2.shape() == Shape{w2.size(0)}, "ember: feed_forward: bias ",
              b2.defined() ? b2.shape().str() : std::string(), " for ", w2.size(0),
              " output features");
  EMBER_CHECK(w2.device() == w1.device() && (!b2.defined() || b2.device() == w2.device()),
              "ember: feed_forward: the second linear's parameters are on ", w2.device().str(),
              ", the first's on ", w1.device().str());
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// linear(linear(x, w1, b1, act), w2, b2), see the top of this header.
template <FloatingElement T>
Tensor<T> feed_forward(const Tensor<T>& x, const Tensor<T>& w1, const Tensor<T>& b1,
                       const Tensor<T>& w2, const Tensor<T>& b2, Activation act) {
  ops::check_feed_forward_args(x, w1, b1, w2, b2);
  return linear<T>(linear<T>(x, w1, b1, act), w2, b2);
}
}  // namespace ember::inline EMBER_UNIT_KIND
