// Learning-rate schedules: small value objects, each a pure function of the optimizer step, so a
// training checkpoint needs only the step to restore the learning rate.
//
//   Constant{lr}                                     lr
//   StepDecay{lr, step_size, gamma}                  lr * gamma^floor(t / step_size)
//   MultiStepDecay{lr, milestones, gamma}            lr * gamma^(number of milestones <= t)
//   PolynomialDecay{lr, end_lr, decay_steps, power}  (lr - end_lr) * (1 - min(t, T) / T)^power
//                                                      + end_lr
//   CosineDecay{lr, decay_steps, min_lr}             min_lr + (lr - min_lr)
//                                                      * (1 + cos(pi * min(t, T) / T)) / 2
//   Warmup{warmup_steps, after, start_factor}        t < W: base * (f + (1 - f) * t / W)
//                                                    t >= W: after(t - W); base = after.base_lr()
//   Offset{steps, inner}                             inner(t + steps)
//
// The step. t counts the optimizer steps already taken: the first optimizer step uses lr(0), the
// k-th (counting from 0) uses lr(k). That is PyTorch's convention too: a scheduler built on an
// optimizer gives the lr of the first optimizer.step(), and after k calls of scheduler.step() (one
// after each optimizer.step()) it gives the lr of optimizer step k. A negative step is an error.
//
// The design. Every schedule is a plain struct: a constructor that checks its arguments (bad ones
// throw ember::Error naming the schedule and the value), `double operator()(std::int64_t step)` and
// `double base_lr()` (the lr the schedule is built around: its peak for the decays, the target of
// a warmup). The LrSchedule concept names that shape. `Schedule` holds any of them by value behind
// a std::function, so optimizers, Warmup and Offset take one type instead of a template parameter,
// and a new schedule is one struct: no base class, no virtual functions to write. The fields are
// public to read; set them through the constructor, which checks them. A Schedule holds its own
// copy, so later edits to the original do not reach it. Compose by nesting:
//
//   optim::Schedule s = optim::warmup(5 * steps_per_epoch,
//                                     optim::PolynomialDecay{10.0, 1e-4, decay_steps, 2.0});
//   opt.set_lr(s(step));
//
// PyTorch equivalents (torch.optim.lr_scheduler), and where they differ:
//   Constant         no scheduler (or LambdaLR(lambda t: 1)).
//   StepDecay        StepLR(step_size, gamma).
//   MultiStepDecay   MultiStepLR(milestones, gamma). Milestones may come in any order; one listed
//                    twice applies gamma twice (as PyTorch's Counter of milestones does).
//   PolynomialDecay  PolynomialLR(total_iters=decay_steps, power) when end_lr == 0. PyTorch has
//                    no end_lr; this is the MLPerf (and tf.compat.v1.train.polynomial_decay,
//                    cycle=False) formula: MLPerf's ResNet-50 LARS uses power 2, BERT's LAMB
//                    power 1. Held at end_lr from step decay_steps on.
//   CosineDecay      CosineAnnealingLR(T_max=decay_steps, eta_min=min_lr) for t <= decay_steps.
//                    Past T_max PyTorch keeps following the cosine (the lr rises again, period
//                    2 * T_max); CosineDecay holds at min_lr (TF's cosine_decay does the same).
//   Warmup           SequentialLR([LinearLR(start_factor, 1.0, total_iters=W), after],
//                    milestones=[W]): linear from start_factor * base at step 0 towards base, and
//                    `after` restarted at step W. LinearLR needs start_factor > 0; Warmup also
//                    takes 0 (and defaults to it), the MLPerf references' lr * t / W.
//   Offset           none: it lets a Warmup's `after` run on the global step. MLPerf's BERT
//                    reference warms up over the first W steps but decays over the global step:
//                    warmup(W, Offset{W, PolynomialDecay{lr, 0.0, total_steps, 1.0}}).
//                    (Its ResNet-50 reference restarts the decay after the warmup, as Warmup does.)
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <numbers>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/error.hpp"

namespace ember::optim {

namespace detail {
inline void schedule_check_step(const char* who, std::int64_t step) {
  EMBER_CHECK(step >= 0, "ember: optim::", who, ": the step must be >= 0, got ", step);
}
/// A learning rate (or any rate that must be a finite, non-negative number).
inline void schedule_check_rate(const char* who, const char* what, double value) {
  EMBER_CHECK(std::isfinite(value) && value >= 0, "ember: optim::", who, ": ", what,
              " must be finite and >= 0, got ", value);
}
inline void schedule_check_count(const char* who, const char* what, std::int64_t value,
                                 std::int64_t least) {
  EMBER_CHECK(value >= least, "ember: optim::", who, ": ", what, " must be >= ", least, ", got ",
              value);
}
}  // namespace detail

/// What a schedule provides: the lr of a step, and the lr it is built around.
template <class S>
concept LrSchedule = std::copy_constructible<S> && requires(const S& s, std::int64_t step) {
  { s(step) } -> std::convertible_to<double>;
  { s.base_lr() } -> std::convertible_to<double>;
};

/// Any schedule, by value: what optimizers and the composing schedules hold.
class Schedule {
 public:
  // Schedule itself is excluded first, so that checking LrSchedule<Schedule> (copyable?) never
  // asks this constructor again.
  template <class S>
  requires(!std::same_as<std::remove_cvref_t<S>, Schedule> && LrSchedule<S>)
      Schedule(S schedule)  // NOLINT(google-explicit-constructor): any schedule converts to this.
      : base_lr_(static_cast<double>(schedule.base_lr())), at_(std::move(schedule)) {}

  double operator()(std::int64_t step) const { return at_(step); }
  double base_lr() const { return base_lr_; }

 private:
  double base_lr_;
  std::function<double(std::int64_t)> at_;
};

struct Constant {
  double lr;
  explicit Constant(double lr_) : lr(lr_) { detail::schedule_check_rate("Constant", "lr", lr); }
  double operator()(std::int64_t step) const {
    detail::schedule_check_step("Constant", step);
    return lr;
  }
  double base_lr() const { return lr; }
};

struct StepDecay {
  double lr;
  std::int64_t step_size;
  double gamma;
  StepDecay(double lr_, std::int64_t step_size_, double gamma_)
      : lr(lr_), step_size(step_size_), gamma(gamma_) {
    detail::schedule_check_rate("StepDecay", "lr", lr);
    detail::schedule_check_count("StepDecay", "step_size", step_size, 1);
    detail::schedule_check_rate("StepDecay", "gamma", gamma);
  }
  double operator()(std::int64_t step) const {
    detail::schedule_check_step("StepDecay", step);
    return lr * std::pow(gamma, static_cast<double>(step / step_size));
  }
  double base_lr() const { return lr; }
};

struct MultiStepDecay {
  double lr;
  std::vector<std::int64_t> milestones;  // sorted by the constructor
  double gamma;
  MultiStepDecay(double lr_, std::vector<std::int64_t> milestones_, double gamma_)
      : lr(lr_), milestones(std::move(milestones_)), gamma(gamma_) {
    detail::schedule_check_rate("MultiStepDecay", "lr", lr);
    detail::schedule_check_rate("MultiStepDecay", "gamma", gamma);
    for (const std::int64_t m : milestones)
      detail::schedule_check_count("MultiStepDecay", "a milestone", m, 0);
    std::sort(milestones.begin(), milestones.end());
  }
  double operator()(std::int64_t step) const {
    detail::schedule_check_step("MultiStepDecay", step);
    // Milestones at or before `step` (PyTorch's bisect_right): the lr drops at the milestone.
    const auto passed = std::upper_bound(milestones.begin(), milestones.end(), step);
    return lr * std::pow(gamma, static_cast<double>(passed - milestones.begin()));
  }
  double base_lr() const { return lr; }
};

struct PolynomialDecay {
  double lr;
  double end_lr;
  std::int64_t decay_steps;
  double power;
  PolynomialDecay(double lr_, double end_lr_, std::int64_t decay_steps_, double power_)
      : lr(lr_), end_lr(end_lr_), decay_steps(decay_steps_), power(power_) {
    detail::schedule_check_rate("PolynomialDecay", "lr", lr);
    detail::schedule_check_rate("PolynomialDecay", "end_lr", end_lr);
    detail::schedule_check_count("PolynomialDecay", "decay_steps", decay_steps, 1);
    // power 0 would jump from lr to end_lr at decay_steps.
    EMBER_CHECK(std::isfinite(power) && power > 0,
                "ember: optim::PolynomialDecay: power must be finite and > 0, got ", power);
  }
  double operator()(std::int64_t step) const {
    detail::schedule_check_step("PolynomialDecay", step);
    const double left =
        1.0 - static_cast<double>(std::min(step, decay_steps)) / static_cast<double>(decay_steps);
    return (lr - end_lr) * std::pow(left, power) + end_lr;
  }
  double base_lr() const { return lr; }
};

struct CosineDecay {
  double lr;
  std::int64_t decay_steps;
  double min_lr;
  CosineDecay(double lr_, std::int64_t decay_steps_, double min_lr_ = 0.0)
      : lr(lr_), decay_steps(decay_steps_), min_lr(min_lr_) {
    detail::schedule_check_rate("CosineDecay", "lr", lr);
    detail::schedule_check_count("CosineDecay", "decay_steps", decay_steps, 1);
    detail::schedule_check_rate("CosineDecay", "min_lr", min_lr);
  }
  double operator()(std::int64_t step) const {
    detail::schedule_check_step("CosineDecay", step);
    const double done =
        static_cast<double>(std::min(step, decay_steps)) / static_cast<double>(decay_steps);
    return min_lr + (lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * done));
  }
  double base_lr() const { return lr; }
};

/// Linear warmup to after.base_lr(), then `after` started afresh at step warmup_steps.
struct Warmup {
  std::int64_t warmup_steps;
  Schedule after;
  double start_factor;
  Warmup(std::int64_t warmup_steps_, Schedule after_, double start_factor_ = 0.0)
      : warmup_steps(warmup_steps_), after(std::move(after_)), start_factor(start_factor_) {
    detail::schedule_check_count("Warmup", "warmup_steps", warmup_steps, 0);
    EMBER_CHECK(start_factor >= 0 && start_factor <= 1,
                "ember: optim::Warmup: start_factor must be in [0, 1], got ", start_factor);
  }
  double operator()(std::int64_t step) const {
    detail::schedule_check_step("Warmup", step);
    if (step >= warmup_steps) return after(step - warmup_steps);
    const double done = static_cast<double>(step) / static_cast<double>(warmup_steps);
    return after.base_lr() * (start_factor + (1.0 - start_factor) * done);
  }
  double base_lr() const { return after.base_lr(); }
};

/// `inner` read `steps` later: inner(step + steps). For a decay that runs on the global step
/// under a Warmup (see the header comment).
struct Offset {
  std::int64_t steps;
  Schedule inner;
  Offset(std::int64_t steps_, Schedule inner_) : steps(steps_), inner(std::move(inner_)) {
    detail::schedule_check_count("Offset", "steps", steps, 0);
  }
  double operator()(std::int64_t step) const {
    detail::schedule_check_step("Offset", step);
    return inner(step + steps);
  }
  double base_lr() const { return inner.base_lr(); }
};

/// Warmup{warmup_steps, after, start_factor}, spelled as a function.
inline Warmup warmup(std::int64_t warmup_steps, Schedule after, double start_factor = 0.0) {
  return Warmup(warmup_steps, std::move(after), start_factor);
}

}  // namespace ember::optim
