// What every fuzz target of tests/fuzz/ is written with. A target is a function of the fuzzer's
// bytes, declared by EMBER_FUZZ_TARGET(name):
//
//   EMBER_FUZZ_TARGET(idx)(const std::uint8_t* data, std::size_t size) {
//     const auto path = ember::fuzz::scratch_file("input.idx", data, size);
//     ember::fuzz::expect_file_errors([&] { (void)ember::data::read_idx(path); });
//     return 0;
//   }
//
// Built with EMBER_FUZZ_LIBFUZZER (scripts/fuzz.sh: clang, -fsanitize=fuzzer,address,undefined)
// it is the program's LLVMFuzzerTestOneInput; otherwise it is registered by name with
// tests/fuzz/replay_main.cpp, which runs the committed corpus and regression inputs through
// every target in the ordinary test build (ctest fuzz_replay_<name>).
//
// A reader of outside bytes may fail only with ember::Error naming the file (expect_file_errors):
// any other exception escapes the target, and the fuzzer (or the replay) reports it as a crash,
// as it does a sanitizer's report.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <ember/core/error.hpp>

namespace ember::fuzz {

using Target = int (*)(const std::uint8_t*, std::size_t);

/// The targets of this program by name (the replay program holds them all).
inline std::map<std::string, Target>& targets() {
  static std::map<std::string, Target> all;
  return all;
}

inline bool register_target(const char* name, Target target) {
  targets().emplace(name, target);
  return true;
}

/// A folder of this process's own for the files a target hands to a reader (on /dev/shm when
/// it exists: no disk writes per input), removed when the process ends normally.
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      const std::filesystem::path shm = "/dev/shm";
      std::error_code ec;
      const std::filesystem::path base =
          std::filesystem::is_directory(shm, ec) ? shm : std::filesystem::temp_directory_path();
      path = base / ("ember-fuzz-" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

/// `name` in the scratch folder, holding exactly `bytes`.
inline std::filesystem::path scratch_file(std::string_view name, const void* bytes,
                                          std::size_t size) {
  const std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(size));
  out.close();
  if (!out) throw std::runtime_error("fuzz: cannot write the scratch file " + path.string());
  return path;
}

/// Runs `f`; an ember::Error is the reader refusing bad bytes, which is what it should do.
template <class F>
void expect_errors(F&& f) {
  try {
    f();
  } catch (const ember::Error&) {
  }
}

/// The same for `f` reading files of the scratch folder, whose errors must also name the file
/// they failed on (hold the folder's path): a message without it escapes as a failure.
template <class F>
void expect_file_errors(F&& f) {
  try {
    f();
  } catch (const ember::Error& e) {
    if (std::string_view(e.what()).find(scratch_dir().string()) == std::string_view::npos) {
      throw std::logic_error(std::string("fuzz: this error does not name the file it read: ") +
                             e.what());
    }
  }
}

}  // namespace ember::fuzz

#if defined(EMBER_FUZZ_LIBFUZZER)
#define EMBER_FUZZ_TARGET(name)                                                       \
  static int ember_fuzz_##name(const std::uint8_t*, std::size_t);                     \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    return ember_fuzz_##name(data, size);                                             \
  }                                                                                   \
  static int ember_fuzz_##name
#else
#define EMBER_FUZZ_TARGET(name)                                     \
  static int ember_fuzz_##name(const std::uint8_t*, std::size_t);   \
  [[maybe_unused]] static const bool ember_fuzz_registered_##name = \
      ::ember::fuzz::register_target(#name, ember_fuzz_##name);     \
  static int ember_fuzz_##name
#endif
