// ember::Error: the one exception type ember throws for bad input and failed resources.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ember {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
template <class... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream os;
  (os << ... << std::forward<Parts>(parts));
  return os.str();
}
}  // namespace detail

/// Throws ember::Error with the parts streamed together.
template <class... Parts>
[[noreturn]] void fail(Parts&&... parts) {
  throw Error(detail::concat(std::forward<Parts>(parts)...));
}

}  // namespace ember

/// Throws ember::Error built from the message parts unless `cond` holds.
#define EMBER_CHECK(cond, ...)    \
  do {                            \
    if (!(cond)) {                \
      ::ember::fail(__VA_ARGS__); \
    }                             \
  } while (0)
