// Classifying images with a ResNet: the body of resnet_predict (predict.cpp), and what
// tests/examples/test_trainer.cpp checks. Evaluation's transform (shorter side to
// size * 256 / 224, centre crop, ImageNet's normalisation), the model in eval mode, softmax,
// the top k.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <ember/data/image_folder.hpp>
#include <ember/ember.hpp>

#include "resnet.hpp"
#include "weights.hpp"

namespace resnet {

/// The `top` most probable classes of one JPEG file and their probabilities, most probable first.
template <class T>
std::vector<std::pair<std::int64_t, float>> classify(ResNet<T>& model,
                                                     const std::filesystem::path& jpeg,
                                                     std::int64_t top, int image_size = 224) {
  using namespace ember;
  model.eval();
  no_grad guard;
  const data::ImageTransform t = data::ImageTransform::evaluation(image_size);
  const Tensor<float> x = data::transform_image(data::read_jpeg(jpeg), t).unsqueeze(0);
  const Tensor<float> logits = Tensor<float>(cast<float>(
      model.forward(Var<T>(Tensor<T>(cast<T>(x.contiguous(MemoryFormat::channels_last)))))
          .value()));
  const Tensor<float> p = softmax(logits, -1);
  const auto [prob, cls] = topk(p.reshape(Shape{p.numel()}), top);
  std::vector<std::pair<std::int64_t, float>> out;
  for (std::int64_t k = 0; k < top; ++k) out.emplace_back(cls.data()[k], prob.data()[k]);
  return out;
}

}  // namespace resnet
