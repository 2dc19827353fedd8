// The trainers' command lines, read with CLI11. Each trainer parses its options in a translation
// unit of its own (examples/resnet50/options.cpp, examples/bert/options.cpp): CLI11 is a large
// header-only library, and the trainer's unit, which instantiates the model for every precision,
// is the build's longest (docs/benchmarks.md, "the trainers' command lines in units of their
// own": 0.2 MB of code, a sixth of the trainer's build).
#pragma once

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/exit_status.hpp"

namespace trainer {

// Paths are checked while the command line is parsed, so that a missing file or directory is a
// bad option like any other (exit status 2, one line, before any work), not a failure later.

/// --resume: `auto`, or a checkpoint file that exists.
inline CLI::Validator checkpoint_or_auto() {
  return CLI::Validator(
      [](std::string& v) {
        return v == "auto" || std::filesystem::is_regular_file(v)
                   ? std::string()
                   : "no checkpoint file '" + v + "' (give a file, or auto)";
      },
      "FILE|auto");
}

/// A choice among `names` (`synthetic`...), or NAME=DIR for the names in `with_directory`, whose
/// DIR must be a directory that exists (--data cifar10=DIR).
inline CLI::Validator name_or_directory(std::vector<std::string> names,
                                        std::vector<std::string> with_directory) {
  return CLI::Validator(
      [names = std::move(names), with_directory = std::move(with_directory)](std::string& v) {
        for (const std::string& n : names)
          if (v == n) return std::string();
        const auto eq = v.find('=');
        for (const std::string& n : with_directory) {
          if (eq == std::string::npos || v.compare(0, eq, n) != 0 || eq != n.size()) continue;
          const std::string dir = v.substr(eq + 1);
          return std::filesystem::is_directory(dir) ? std::string() : "no directory '" + dir + "'";
        }
        return std::string("unknown value '") + v + "'";
      },
      "");
}

/// One of `names` (`gcide`, `synthetic`), or comma-separated files that exist (--corpus).
inline CLI::Validator name_or_files(std::vector<std::string> names) {
  return CLI::Validator(
      [names = std::move(names)](std::string& v) {
        for (const std::string& n : names)
          if (v == n) return std::string();
        std::stringstream list(v);
        for (std::string file; std::getline(list, file, ',');) {
          if (!std::filesystem::is_regular_file(file)) return "no file '" + file + "'";
        }
        return std::string();
      },
      "");
}

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
