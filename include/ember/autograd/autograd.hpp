// Reverse-mode autodiff for ember: Var, param, no_grad, sum/mean of Vars, gradcheck.
// Include this header (after or instead of ember/ember.hpp).
#pragma once

#include "../ember.hpp"
#include "grad_mode.hpp"
#include "gradcheck.hpp"
#include "tape.hpp"
#include "var.hpp"
