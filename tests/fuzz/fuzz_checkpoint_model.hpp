// The model whose training checkpoints fuzz_checkpoint reads (and make_fuzz_seeds writes): float
// parameters, float and int64 buffers.
#pragma once

#include <ember/ember.hpp>

namespace ember::fuzz {

struct CheckpointModel : nn::Module {
  nn::Linear<float> fc1{4, 3};
  nn::BatchNorm2d<float> norm{3};
  nn::Linear<float> fc2{3, 2};
  CheckpointModel() {
    register_module("fc1", fc1);
    register_module("norm", norm);
    register_module("fc2", fc2);
  }
};

}  // namespace ember::fuzz
