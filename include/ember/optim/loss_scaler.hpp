// optim::LossScaler: dynamic loss scaling for half-precision training, as torch.amp.GradScaler.
// Half's range ends at 65504 and its subnormals at 6e-8, so small gradients underflow; the loss
// is multiplied by a large scale before backward and the gradients divided by it in the update.
//
//   optim::LossScaler scaler;                   // half: enabled; for bf16 pass {.enabled = false}
//   scaler.scale(loss).backward();
//   bool stepped = scaler.step(opt, 1.0);       // unscale (+ clip to norm 1.0) + step, or skip
//
// step() reads the gradients once (the global norm pass, which also finds inf and NaN); the
// division by the scale and the clipping are folded into the optimizer's own pass. When a
// gradient is not finite the step is skipped and the scale multiplied by backoff_factor; after
// growth_interval clean steps in a row it is multiplied by growth_factor. Disabled (bf16, float),
// it steps with the scale 1 and only clips.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>

#include "../autograd/var.hpp"
#include "../core/error.hpp"
#include "../expr/operators.hpp"

namespace ember::optim {

struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
  bool enabled = true;
};

class LossScaler {
 public:
  LossScaler() : LossScaler(LossScalerOptions{}) {}
  explicit LossScaler(const LossScalerOptions& o) : opt_(o), scale_(o.enabled ? o.init_scale : 1) {
    EMBER_CHECK(o.init_scale > 0 && std::isfinite(o.init_scale),
                "ember: optim::LossScaler: init_scale must be positive and finite, got ",
                o.init_scale);
    EMBER_CHECK(o.growth_factor > 1, "ember: optim::LossScaler: growth_factor must be > 1, got ",
                o.growth_factor);
    EMBER_CHECK(o.backoff_factor > 0 && o.backoff_factor < 1,
                "ember: optim::LossScaler: backoff_factor must be in (0, 1), got ",
                o.backoff_factor);
    EMBER_CHECK(o.growth_interval > 0,
                "ember: optim::LossScaler: growth_interval must be positive, got ",
                o.growth_interval);
  }

  /// loss * scale (the loss itself when disabled).
  template <FloatingElement T, class Mode = exec::mode>
  Var<T> scale(const Var<T>& loss) const {
    if (!opt_.enabled) return loss;
    return Var<T>(loss * scale_);
  }

  /// Unscales (and, when max_norm > 0, clips) the gradients and steps `opt`, or skips the step
  /// when a gradient is inf or NaN. Returns whether it stepped; the gradients are left for the
  /// caller's zero_grad() either way.
  template <class Optimizer, class Mode = exec::mode>
  bool step(Optimizer& opt, double max_norm = 0) {
    opt.scale_grads(1.0 / scale_);
    const auto norm = opt.grad_norm();
    last_norm_ = norm.norm;
    if (!norm.finite) {
      opt.reset_grad_scale();
      EMBER_CHECK(opt_.enabled,
                  "ember: optim::LossScaler: a gradient is inf or NaN in a run "
                  "without loss scaling (norm ",
                  norm.norm, ")");
      scale_ *= opt_.backoff_factor;
      clean_steps_ = 0;
      ++skipped_;
      return false;
    }
    if (max_norm > 0 && norm.norm > max_norm) opt.scale_grads(max_norm / (norm.norm + 1e-6));
    opt.step();
    if (opt_.enabled && ++clean_steps_ == opt_.growth_interval) {
      scale_ *= opt_.growth_factor;
      clean_steps_ = 0;
    }
    return true;
  }

  double scale() const { return scale_; }
  /// The gradients' global norm (unscaled, before clipping) the last step() saw.
  double last_grad_norm() const { return last_norm_; }
  /// Steps skipped so far because of inf/NaN gradients.
  std::int64_t skipped_steps() const { return skipped_; }
  bool enabled() const { return opt_.enabled; }

  /// Its state as strings, for a training checkpoint's metadata.
  std::map<std::string, std::string> state() const {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", scale_);
    return {{"loss_scaler.scale", buf},
            {"loss_scaler.clean_steps", std::to_string(clean_steps_)},
            {"loss_scaler.skipped", std::to_string(skipped_)}};
  }
  void load_state(const std::map<std::string, std::string>& s) {
    auto get = [&](const char* key) -> const std::string& {
      const auto it = s.find(key);
      EMBER_CHECK(it != s.end(), "ember: optim::LossScaler: the checkpoint has no '", key, "'");
      return it->second;
    };
    try {
      const double scale = std::stod(get("loss_scaler.scale"));
      const std::int64_t clean = std::stoll(get("loss_scaler.clean_steps"));
      const std::int64_t skipped = std::stoll(get("loss_scaler.skipped"));
      EMBER_CHECK(scale > 0 && std::isfinite(scale) && clean >= 0 && skipped >= 0,
                  "ember: optim::LossScaler: the checkpoint's state is out of range");
      scale_ = scale;
      clean_steps_ = clean;
      skipped_ = skipped;
    } catch (const std::logic_error&) {
      fail("ember: optim::LossScaler: the checkpoint's state is not numeric");
    }
  }

 private:
  LossScalerOptions opt_;
  double scale_;
  std::int64_t clean_steps_ = 0;
  std::int64_t skipped_ = 0;
  double last_norm_ = 0;
};

}  // namespace ember::optim
