// Anomaly detection: while it is on (`ember::detect_anomaly guard;` or set_detect_anomaly(true),
// for the current thread), every operation recorded on the tape checks its output, and the
// first whose output holds a NaN or an infinity throws an ember::Error naming the operation, the
// shape, how many values are not finite and the first of them: the place a training run's loss
// went bad, found in the forward pass. A debugging mode (PyTorch's torch.autograd.detect_anomaly):
// each check copies the output to the host and reads all of it.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../tensor/tensor.hpp"
#include "tape.hpp"

namespace ember {

namespace autograd::detail {
inline bool& anomaly_flag() {
  thread_local bool enabled = false;
  return enabled;
}
}  // namespace autograd::detail

/// Whether anomaly detection is on for this thread.
inline bool anomaly_detection_enabled() { return autograd::detail::anomaly_flag(); }
/// Turns anomaly detection on or off for this thread.
inline void set_detect_anomaly(bool on) { autograd::detail::anomaly_flag() = on; }

/// Scope guard: anomaly detection on while alive (guards nest).
class detect_anomaly {
 public:
  detect_anomaly() : previous_(autograd::detail::anomaly_flag()) {
    autograd::detail::anomaly_flag() = true;
  }
  ~detect_anomaly() { autograd::detail::anomaly_flag() = previous_; }
  detect_anomaly(const detect_anomaly&) = delete;
  detect_anomaly& operator=(const detect_anomaly&) = delete;

 private:
  bool previous_;
};

}  // namespace ember

namespace ember::autograd::detail::inline EMBER_UNIT_KIND {

/// When anomaly detection is on: throws when `value`, the output of the recorded operation
/// `node`, holds a value that is not finite. Off, it reads one thread-local flag.
template <Storable T>
void check_anomaly(const Tensor<T>& value, const TapeNode& node) {
  if constexpr (FloatingElement<T>) {
    if (!anomaly_flag() || value.numel() == 0) return;
    const Tensor<T> host = value.to(Device::cpu()).contiguous();
    const T* p = host.data();
    std::int64_t bad = 0, first = -1;
    double first_value = 0;
    for (std::int64_t i = 0; i < host.numel(); ++i) {
      double x;
      if constexpr (std::is_same_v<T, double>) {
        x = p[i];
      } else {
        x = static_cast<float>(p[i]);
      }
      if (!std::isfinite(x) && bad++ == 0) {
        first = i;
        first_value = x;
      }
    }
    if (bad == 0) return;
    const std::string op = node.name();
    fail("ember: detect_anomaly: '", op.empty() ? "an expression" : op, "' made ", bad,
         " value(s) that are not finite, of ", host.numel(), " (shape ", value.shape().str(),
         "); the first, element ", first, ", is ",
         std::isnan(first_value) ? "nan" : (first_value > 0 ? "inf" : "-inf"));
  }
}

}  // namespace ember::autograd::detail::inline EMBER_UNIT_KIND
