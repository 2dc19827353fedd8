// The convolution cases the conv2d tests share (strides, paddings, dilations, groups, odd sizes,
// an empty batch, pointwise kernels) and a float64 convolution written from the definition.
#pragma once

#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

namespace ember::testing {

// y[n, o, i, j] = b[o] + sum_{c in o's group, kh, kw} x[n, c, i s + kh d - p, ...] w[o, c', kh, kw]
inline Tensor<double> naive_conv(const Tensor<double>& xt, const Tensor<double>& wt,
                                 const Tensor<double>& bt, const ember::Conv2dOptions& o) {
  const auto x = xt.contiguous().to_vector(), w = wt.contiguous().to_vector();
  const std::int64_t N = xt.size(0), C = xt.size(1), H = xt.size(2), W = xt.size(3);
  const std::int64_t O = wt.size(0), CG = wt.size(1), KH = wt.size(2), KW = wt.size(3);
  const std::int64_t OG = O / o.groups;
  const std::int64_t OH = (H + 2 * o.padding[0] - o.dilation[0] * (KH - 1) - 1) / o.stride[0] + 1;
  const std::int64_t OW = (W + 2 * o.padding[1] - o.dilation[1] * (KW - 1) - 1) / o.stride[1] + 1;
  std::vector<double> y(static_cast<std::size_t>(N * O * OH * OW));
  const auto bv =
      bt.defined() ? bt.to_vector() : std::vector<double>(static_cast<std::size_t>(O), 0.0);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t oc = 0; oc < O; ++oc)
      for (std::int64_t i = 0; i < OH; ++i)
        for (std::int64_t j = 0; j < OW; ++j) {
          double s = bv[static_cast<std::size_t>(oc)];
          const std::int64_t g = oc / OG;
          for (std::int64_t c = 0; c < CG; ++c)
            for (std::int64_t kh = 0; kh < KH; ++kh)
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t ih = i * o.stride[0] + kh * o.dilation[0] - o.padding[0];
                const std::int64_t iw = j * o.stride[1] + kw * o.dilation[1] - o.padding[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += x[static_cast<std::size_t>(((n * C + g * CG + c) * H + ih) * W + iw)] *
                     w[static_cast<std::size_t>(((oc * CG + c) * KH + kh) * KW + kw)];
              }
          y[static_cast<std::size_t>(((n * O + oc) * OH + i) * OW + j)] = s;
        }
  return ember::from_vector<double>(y, Shape{N, O, OH, OW});
}

struct ConvCase {
  Shape x, w;
  ember::Conv2dOptions opt;
};
inline const std::vector<ConvCase> kConvCases = {
    {{1, 1, 5, 5}, {1, 1, 3, 3}, {}},
    {{2, 3, 7, 6}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
    {{2, 4, 9, 8}, {6, 2, 3, 2}, {{2, 1}, {1, 0}, {1, 2}, 2}},  // groups, asymmetric everything
    {{1, 6, 8, 8}, {6, 1, 3, 3}, {{1, 1}, {2, 2}, {2, 2}, 6}},  // depthwise, dilated
    {{3, 2, 5, 7}, {5, 2, 1, 1}, {{2, 2}, {0, 0}, {1, 1}, 1}},  // 1x1, strided
    {{2, 3, 4, 4}, {2, 3, 4, 4}, {{1, 1}, {0, 0}, {1, 1}, 1}},  // kernel = input
    {{0, 3, 5, 5}, {2, 3, 3, 3}, {}},                           // empty batch
    {{2, 4, 5, 3}, {6, 4, 1, 1}, {}},                           // pointwise: x is the columns
    {{1, 3, 4, 4}, {2, 3, 1, 1}, {}},                           // pointwise, one image
    {{3, 4, 3, 5}, {6, 2, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 2}},  // pointwise, groups
    {{2, 3, 4, 4}, {2, 3, 1, 1}, {{1, 1}, {1, 1}, {1, 1}, 1}},  // 1x1 with padding: im2col
};

}  // namespace ember::testing
