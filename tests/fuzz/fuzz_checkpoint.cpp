// Training checkpoints (io/checkpoint.hpp): load_training_checkpoint into a small model and its
// AdamW state, which checks the file whole (format, progress, every tensor's name, dtype and
// shape) before changing anything.
#include <cstddef>
#include <cstdint>

#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>

#include "fuzz_checkpoint_model.hpp"
#include "fuzz_target.hpp"

EMBER_FUZZ_TARGET(checkpoint)(const std::uint8_t* data, std::size_t size) {
  const auto path = ember::fuzz::scratch_file("input.ckpt.safetensors", data, size);
  ember::fuzz::CheckpointModel model;
  ember::optim::AdamW opt(model, ember::optim::AdamWOptions{.lr = 1e-3});
  ember::fuzz::expect_file_errors(
      [&] { (void)ember::io::load_training_checkpoint(path, model, opt); });
  return 0;
}
