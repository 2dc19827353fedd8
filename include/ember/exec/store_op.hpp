// How a computed value meets the value already stored in an output: `=`, `+=`, `-=`, `*=`, `/=`
// (mshadow's `=` versus `+=`). Tensor's assignments name it; exec/assign_plan.hpp applies it.
#pragma once

#include "../core/config.hpp"

namespace ember::exec {

enum class StoreOp { set, add, sub, mul, div };

template <StoreOp Op, class A>
EMBER_HD EMBER_FORCEINLINE A combine(A old, A v) {
  if constexpr (Op == StoreOp::set) {
    return v;
  } else if constexpr (Op == StoreOp::add) {
    return old + v;
  } else if constexpr (Op == StoreOp::sub) {
    return old - v;
  } else if constexpr (Op == StoreOp::mul) {
    return old * v;
  } else {
    return old / v;
  }
}

}  // namespace ember::exec
