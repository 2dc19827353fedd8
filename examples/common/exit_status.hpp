// The trainers' exit statuses: a bad command line or option is 2 (one line on stderr, before any
// data is read), a failure during the run 1.
#pragma once

namespace trainer {

inline constexpr int kExitBadOption = 2;
inline constexpr int kExitFailure = 1;

}  // namespace trainer
