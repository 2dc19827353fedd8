// ember::Error: the one exception type ember throws for bad input and failed resources.
#pragma once

#include <initializer_list>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ember {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
/// One part of an error message, with its type erased: the message is built by one function
/// compiled once, not once per list of argument types (each string literal's length is a type of
/// its own, so a program's checks would otherwise instantiate a stream builder apiece).
class MessagePart {
 public:
  template <class T>
  MessagePart(const T& value) : value_(&value), write_(&write_value<T>) {}  // NOLINT(implicit)
  MessagePart(const char* text) : value_(text), write_(&write_text) {}      // NOLINT(implicit)

  void write_to(std::ostream& os) const { write_(os, value_); }

 private:
  template <class T>
  static void write_value(std::ostream& os, const void* value) {
    os << *static_cast<const T*>(value);
  }
  static void write_text(std::ostream& os, const void* text) {
    os << static_cast<const char*>(text);
  }

  const void* value_;
  void (*write_)(std::ostream&, const void*);
};

inline std::string concat_parts(std::initializer_list<MessagePart> parts) {
  std::ostringstream os;
  for (const MessagePart& part : parts) part.write_to(os);
  return os.str();
}

/// The parts streamed together into one string.
template <class... Parts>
std::string concat(const Parts&... parts) {
  return concat_parts({MessagePart(parts)...});
}

[[noreturn]] inline void throw_error(std::initializer_list<MessagePart> parts) {
  throw Error(concat_parts(parts));
}
}  // namespace detail

/// Throws ember::Error with the parts streamed together.
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  detail::throw_error({detail::MessagePart(parts)...});
}

}  // namespace ember

/// Throws ember::Error built from the message parts unless `cond` holds.
#define EMBER_CHECK(cond, ...)    \
  do {                            \
    if (!(cond)) {                \
      ::ember::fail(__VA_ARGS__); \
    }                             \
  } while (0)
