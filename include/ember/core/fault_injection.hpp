// Fault injection for the tests of killed runs: with EMBER_FAULT_KILL="<site>:<n>" in the
// environment, the n-th time (from 1) the process passes fault_point("<site>") it sends itself
// SIGKILL, as an out-of-memory killer or a lost machine would stop it: no destructor, no flush,
// no cleanup. Deterministic, so a test kills a run exactly mid-step or mid-checkpoint-write
// without waiting for a moment to come. Without the variable a fault point reads one flag.
//
// Sites: "file-write" (io::TempFile, after each write of an atomic file, before its rename: a
// checkpoint half written) and "train-step" (the example trainers, between the backward pass
// and the optimizer's step).
#pragma once

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace ember {

namespace detail {

/// EMBER_FAULT_KILL, parsed once: the site and the pass to kill at (0: none).
struct FaultPlan {
  std::string site;
  std::int64_t at = 0;
  std::atomic<std::int64_t> passes{0};
  FaultPlan() {
    const char* spec = std::getenv("EMBER_FAULT_KILL");
    if (spec == nullptr) return;
    const std::string_view s(spec);
    const std::size_t colon = s.rfind(':');
    if (colon == std::string_view::npos) return;
    site = std::string(s.substr(0, colon));
    at = std::strtoll(spec + colon + 1, nullptr, 10);
  }
};

inline FaultPlan& fault_plan() {
  static FaultPlan plan;
  return plan;
}

}  // namespace detail

/// A place where a test may kill the process (see the top of this file).
inline void fault_point(std::string_view site) {
  detail::FaultPlan& plan = detail::fault_plan();
  if (plan.at <= 0 || site != plan.site) return;
  if (plan.passes.fetch_add(1) + 1 == plan.at) ::kill(::getpid(), SIGKILL);
}

}  // namespace ember
