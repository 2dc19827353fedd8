// The trainer's host code as nvcc compiles it (the program examples/resnet50/train.cu is): its
// configuration must be what the host-compiled trainer's is. No GPU is needed.
#include "trainer_recipe_cases.hpp"
