// Weights in: a ResNet's parameters and batch-norm statistics from a torchvision state dict or a
// resnet50_train checkpoint (resnet50_train --init-checkpoint / --eval-only, resnet_predict).
#pragma once

#include <filesystem>

#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>

#include "resnet.hpp"

namespace resnet {

/// Weights into `model` from a torchvision state dict (safetensors) or a resnet50_train
/// checkpoint (whose model tensors are under "model."); float files load into bf16 models.
template <class T>
void load_weights(ResNet<T>& model, const std::filesystem::path& path) {
  const ember::NamedTensors tensors = ember::io::load_safetensors(path);
  bool training = false;
  for (const auto& [name, t] : tensors) {
    training = training || name.rfind(ember::io::kModelPrefix, 0) == 0;
  }
  ember::io::LoadOptions o;
  o.convert_floating = true;
  if (training) {
    o.prefix = ember::io::kModelPrefix;
    o.allow_unexpected = true;  // the optimizer's state and the progress
  }
  ember::io::load_state_dict(model, tensors, o, "'" + path.string() + "'");
}

}  // namespace resnet
