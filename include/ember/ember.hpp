// ember: header-only C++20/CUDA tensors with fused expression templates.
// Include this one header; see docs/getting-started.md.
#pragma once

#include "core/bf16.hpp"
#include "core/concepts.hpp"
#include "core/config.hpp"
#include "core/cuda.hpp"
#include "core/device.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/half.hpp"
#include "core/philox.hpp"
#include "core/shape.hpp"
#include "exec/assign.hpp"
#include "exec/generate.hpp"
#include "exec/launch_counter.hpp"
#include "exec/reduce.hpp"
#include "expr/operators.hpp"
#include "memory/stats.hpp"
#include "ops/attention.hpp"
#include "ops/conv.hpp"
#include "ops/dropout.hpp"
#include "ops/embedding.hpp"
#include "ops/losses.hpp"
#include "ops/matmul.hpp"
#include "ops/normalization.hpp"
#include "ops/pooling.hpp"
#include "ops/softmax.hpp"
#include "tensor/factories.hpp"
#include "tensor/tensor.hpp"

// Autodiff sits on top of everything above.
#include "autograd/autograd.hpp"

// Modules and layers sit on the operators and autodiff.
#include "nn/init.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
