// The operator families ember::kernels compiles for a floating element type T, each family's list
// being in its own header (core/compiled_once.hpp), and T's copies. A family that a header
// declares extern and that is missing here leaves the library without its instances: every
// program that calls one (the tests call them all) then fails to link.
#pragma once

#include <ember/ember.hpp>

#define EMBER_COMPILE_OPERATORS(T)              \
  EMBER_FLOATING_COPY_INSTANCES(template, T)    \
  EMBER_RANDOM_INSTANCES(template, T)           \
  EMBER_CONV_INSTANCES(template, T)             \
  EMBER_NORMALIZATION_INSTANCES(template, T)    \
  EMBER_NN_NORMALIZATION_INSTANCES(template, T) \
  EMBER_POOLING_INSTANCES(template, T)          \
  EMBER_LOSS_INSTANCES(template, T)             \
  EMBER_MATMUL_INSTANCES(template, T)           \
  EMBER_FEED_FORWARD_INSTANCES(template, T)     \
  EMBER_ATTENTION_INSTANCES(template, T)        \
  EMBER_EMBEDDING_INSTANCES(template, T)        \
  EMBER_GRADIENT_INSTANCES(template, T)         \
  EMBER_INIT_INSTANCES(template, T)
