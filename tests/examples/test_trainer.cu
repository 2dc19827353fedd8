// The trainer's optimizer recipe (examples/resnet50/config.hpp) as nvcc compiles it, as it does
// for the program examples/resnet50/train.cu: it must be what the host-compiled trainer's is. No
// GPU is needed.
#include "trainer_recipe_cases.hpp"

TEST_CASE("the trainer's optimizer options are those of the command line (nvcc)", "[examples]") {
  check_optimizer_recipe();
}
