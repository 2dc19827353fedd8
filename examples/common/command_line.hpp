// The trainers' command lines, read with CLI11. Each trainer parses its options in a translation
// unit of its own (examples/resnet50/options.cpp, examples/bert/options.cpp): CLI11 is a large
// header-only library, and the trainer's unit, which instantiates the model for every precision,
// is the build's longest (docs/benchmarks.md, "the trainers' command lines in units of their
// own": 0.2 MB of code, a sixth of the trainer's build).
#pragma once

#include <optional>

#include <CLI/CLI.hpp>

#include "common/exit_status.hpp"

namespace trainer {

/// Parses the command line: --help prints and gives 0, a bad option prints CLI11's line and
/// gives kExitBadOption; nothing when the program goes on.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitBadOption;
  }
  return std::nullopt;
}

}  // namespace trainer
