// Checkpoints in the safetensors format (https://github.com/huggingface/safetensors): read and
// write named tensors of any ember dtype, with a string-to-string metadata map. See docs/io.md.
//
// File layout: an 8-byte little-endian header length N, N bytes of JSON header
//   {"__metadata__": {"key": "value"}, "name": {"dtype": "F32", "shape": [2, 3],
//    "data_offsets": [begin, end]}, ...}
// padded with spaces to a multiple of 8, then the data buffer: every tensor dense, row-major and
// little-endian, at [begin, end) relative to the buffer's start, the tensors tiling the buffer.
//
// Its definitions need nlohmann/json (header-only; Debian: nlohmann-json3-dev; CMake:
// find_package(nlohmann_json 3 CONFIG) and nlohmann_json::nlohmann_json). It is not included by
// <ember/ember.hpp>, so the core keeps no JSON dependency: include <ember/io/safetensors.hpp>.
// Writing uses POSIX calls (open, fsync, rename).
//
// Compiled once where the program links ember::kernels built with nlohmann/json (CMake defines
// EMBER_IO_COMPILED): this header then declares the three functions and src/kernels/io.cpp holds
// them, so a program does not compile the JSON parser and the reader in each of its units.
// Otherwise their definitions (io/safetensors_impl.hpp) are included here, as in any header-only
// use.
#pragma once

#include <bit>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../core/dtype.hpp"
#include "../tensor/any_tensor.hpp"

namespace ember::io {

static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "ember::io: mixed-endian hosts are not supported");

// AnyTensor, NamedTensors and get_tensor live in tensor/any_tensor.hpp (no JSON needed there).
using ::ember::AnyTensor;
using ::ember::get_tensor;
using ::ember::NamedTensors;

namespace detail {

inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // as the reference implementation

// The safetensors dtype code of each ember dtype, its size, and its place in the reference
// implementation's dtype order (writers put larger ranks first so every tensor's data is
// aligned to its element size).
inline constexpr std::string_view st_code(DType d) {
  switch (d) {
    case DType::f64:
      return "F64";
    case DType::f32:
      return "F32";
    case DType::f16:
      return "F16";
    case DType::bf16:
      return "BF16";
    case DType::i64:
      return "I64";
    case DType::i32:
      return "I32";
    case DType::u8:
      return "U8";
    case DType::boolean:
      return "BOOL";
  }
  return "?";
}
inline constexpr std::uint64_t st_itemsize(DType d) {
  switch (d) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::u8:
    case DType::boolean:
      return 1;
  }
  return 0;
}
inline constexpr int st_order(DType d) {  // the reference's Dtype enum order
  switch (d) {
    case DType::boolean:
      return 0;
    case DType::u8:
      return 1;
    case DType::f16:
      return 7;
    case DType::bf16:
      return 8;
    case DType::i32:
      return 9;
    case DType::f32:
      return 11;
    case DType::f64:
      return 12;
    case DType::i64:
      return 13;
  }
  return -1;
}
inline std::optional<DType> st_parse(std::string_view code) {
  for (DType d : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32,
                  DType::u8, DType::boolean}) {
    if (st_code(d) == code) return d;
  }
  return std::nullopt;
}

}  // namespace detail

/// Writes `tensors` (any device, any layout; stored dense and row-major) and `metadata` to
/// `path` in the safetensors format, atomically: the bytes go to `<path>.tmp.<pid>.<n>` in the
/// same directory, which is fsynced, renamed over `path`, and the directory fsynced. On failure
/// the temporary file is removed, `path` is left as it was, and ember::Error says why. Names
/// must be non-empty, unique, valid UTF-8 and not "__metadata__".
EMBER_IO_INLINE void save_safetensors(const NamedTensors& tensors,
                                      const std::filesystem::path& path,
                                      const std::map<std::string, std::string>& metadata = {});

/// Reads every tensor of the safetensors file at `path` onto `device`, in the order of the file's
/// data buffer. Throws ember::Error, naming the file (and the tensor), on a file that is missing,
/// truncated, malformed, or holds a dtype ember does not store.
EMBER_IO_INLINE NamedTensors load_safetensors(const std::filesystem::path& path,
                                              Device device = Device::cpu());

/// The "__metadata__" map of the safetensors file at `path` (empty when it has none). Checks the
/// whole header as load_safetensors does, but reads no tensor data.
EMBER_IO_INLINE std::map<std::string, std::string> read_safetensors_metadata(
    const std::filesystem::path& path);

}  // namespace ember::io

#if !defined(EMBER_IO_COMPILED)
#include "safetensors_impl.hpp"
#endif
