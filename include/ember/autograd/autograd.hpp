// Reverse-mode autodiff for ember: Var, param, no_grad, reductions and views of Vars, matmul and
// linear of Vars, custom functions (apply), gradcheck. Included by ember/ember.hpp.
#pragma once

#include "../ember.hpp"
#include "attention.hpp"
#include "concat.hpp"
#include "conv.hpp"
#include "embedding.hpp"
#include "feed_forward.hpp"
#include "function.hpp"
#include "grad_mode.hpp"
#include "gradcheck.hpp"
#include "indexing.hpp"
#include "losses.hpp"
#include "matmul.hpp"
#include "normalization.hpp"
#include "pooling.hpp"
#include "reductions.hpp"
#include "tape.hpp"
#include "var.hpp"
#include "views.hpp"
