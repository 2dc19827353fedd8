// fuzz_replay TARGET PATH...: runs every file under the PATHs (files or folders, recursively,
// in name order) through the fuzz target TARGET, as the fuzzer would, without a fuzzer: the
// ordinary test build (ctest fuzz_replay_<target>) keeps the seed corpus and every input that
// once crashed a reader (tests/fuzz/regressions/) passing. A reader that crashes, or fails with
// anything but ember::Error, ends this program with that crash or exception.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_target.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const auto& all = ember::fuzz::targets();
  if (argc < 3 || !all.contains(argv[1])) {
    std::fprintf(stderr, "usage: %s TARGET PATH...\ntargets:", argv[0]);
    for (const auto& [name, target] : all) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  const ember::fuzz::Target target = all.at(argv[1]);
  std::vector<fs::path> files;
  for (int i = 2; i < argc; ++i) {
    if (fs::is_directory(argv[i])) {
      for (const auto& e : fs::recursive_directory_iterator(argv[i])) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (fs::is_regular_file(argv[i])) {
      files.emplace_back(argv[i]);
    } else {
      std::fprintf(stderr, "fuzz_replay: no file or folder '%s'\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "fuzz_replay: no input files under the paths given\n");
    return 2;
  }
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("fuzz_replay %s: %zu inputs, none crashed\n", argv[1], files.size());
  return 0;
}
