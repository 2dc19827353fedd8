// Whether operations on Vars are recorded for backward. `ember::no_grad guard;` turns recording
// off for the current thread until the guard goes out of scope (guards nest).
#pragma once

namespace ember {

namespace autograd::detail {
inline bool& grad_enabled_flag() {
  thread_local bool enabled = true;
  return enabled;
}
}  // namespace autograd::detail

/// True unless a no_grad guard is alive on this thread.
inline bool grad_enabled() { return autograd::detail::grad_enabled_flag(); }

/// Scope guard: while alive, nothing is recorded and results do not require grad.
class no_grad {
 public:
  no_grad() : previous_(autograd::detail::grad_enabled_flag()) {
    autograd::detail::grad_enabled_flag() = false;
  }
  ~no_grad() { autograd::detail::grad_enabled_flag() = previous_; }
  no_grad(const no_grad&) = delete;
  no_grad& operator=(const no_grad&) = delete;

 private:
  bool previous_;
};

}  // namespace ember
