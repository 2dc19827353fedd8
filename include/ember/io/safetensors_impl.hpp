// The definitions of io/safetensors.hpp's reader and writer: included by that header in
// header-only use, compiled once by src/kernels/io.cpp into ember::kernels (EMBER_IO_COMPILED).
// Include io/safetensors.hpp, not this file.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"
#include "../exec/assign.hpp"
#include "../tensor/any_tensor.hpp"
#include "../tensor/copy.hpp"
#include "../tensor/factories.hpp"
#include "../tensor/tensor.hpp"
#include "temp_file.hpp"

#include "safetensors.hpp"

namespace ember::io {

namespace detail {

template <class F>
decltype(auto) with_dtype(DType d, F&& f) {
  switch (d) {
    case DType::f64:
      return f(double{});
    case DType::f32:
      return f(float{});
    case DType::f16:
      return f(half{});
    case DType::bf16:
      return f(bf16{});
    case DType::i64:
      return f(std::int64_t{});
    case DType::i32:
      return f(std::int32_t{});
    case DType::u8:
      return f(std::uint8_t{});
    case DType::boolean:
      return f(bool{});
  }
  fail("ember: unknown dtype");
}

inline std::string errno_text(int err) { return std::system_category().message(err); }

inline void byteswap_elements(unsigned char* p, std::size_t bytes, std::size_t itemsize) {
  if (itemsize < 2) return;
  for (std::size_t i = 0; i + itemsize <= bytes; i += itemsize)
    std::reverse(p + i, p + i + itemsize);
}

// A JSON string literal for `s` (escaped as serde_json does); throws on invalid UTF-8.
inline std::string json_quote(const std::string& s, std::string_view what) {
  try {
    return nlohmann::json(s).dump();
  } catch (const nlohmann::json::exception&) {
    fail("ember: save_safetensors: ", what, " is not valid UTF-8");
  }
}

// ---- reading ------------------------------------------------------------------------------------

class ReadFile {
 public:
  explicit ReadFile(const std::filesystem::path& path) : path_(path) {
    do {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0)
      fail("ember: cannot open safetensors file '", path.string(), "': ", errno_text(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      fail("ember: cannot stat safetensors file '", path.string(), "': ", errno_text(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      fail("ember: safetensors file '", path.string(), "' is not a regular file");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~ReadFile() { ::close(fd_); }
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;

  std::uint64_t size() const { return size_; }

  void read(std::uint64_t offset, void* dst, std::uint64_t bytes) const {
    auto* p = static_cast<unsigned char*>(dst);
    while (bytes > 0) {
      const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, 1u << 30));
      const ssize_t got = ::pread(fd_, p, chunk, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        fail("ember: cannot read safetensors file '", path_.string(), "': ", errno_text(errno));
      }
      if (got == 0)
        fail("ember: safetensors file '", path_.string(), "' ended early while reading");
      p += got;
      offset += static_cast<std::uint64_t>(got);
      bytes -= static_cast<std::uint64_t>(got);
    }
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

struct StEntry {
  std::string name;
  DType dtype{};
  Shape shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

struct StHeader {
  std::vector<StEntry> entries;  // in data-offset order
  std::map<std::string, std::string> metadata;
  std::uint64_t data_start = 0;  // 8 + N
};

// Reads and checks the header of the file at `path`; `op` names the caller in errors.
inline StHeader read_header(const ReadFile& file, const std::filesystem::path& path,
                            std::string_view op) {
  const std::string where = ::ember::detail::concat("ember: ", op, ": '", path.string(), "'");
  const std::uint64_t size = file.size();
  EMBER_CHECK(size >= 8, where, " is ", size,
              " bytes long, too short for the 8-byte header length");
  unsigned char len_bytes[8];
  file.read(0, len_bytes, 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  EMBER_CHECK(n <= kMaxHeaderBytes, where, ": the header length ", n,
              " is larger than the limit of ", kMaxHeaderBytes, " bytes");
  EMBER_CHECK(n <= size - 8, where, ": the header length ", n, " runs past the end of the file (",
              size, " bytes)");
  std::string text(static_cast<std::size_t>(n), '\0');
  file.read(8, text.data(), n);
  EMBER_CHECK(!text.empty() && text[0] == '{', where, ": the header does not start with '{'");
  // nlohmann/json stops at a NUL byte; JSON text never holds one.
  EMBER_CHECK(text.find('\0') == std::string::npos, where,
              ": the header is not valid JSON: it holds a NUL byte");

  // Duplicate keys are ambiguous (JSON parsers keep either one): refuse them.
  std::vector<std::set<std::string>> keys;
  std::optional<std::string> duplicate;
  const nlohmann::json::parser_callback_t on_event =
      [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        using E = nlohmann::json::parse_event_t;
        if (event == E::object_start) {
          keys.emplace_back();
        } else if (event == E::object_end) {
          if (!keys.empty()) keys.pop_back();
        } else if (event == E::key && !keys.empty() && parsed.is_string()) {
          if (!keys.back().insert(parsed.get<std::string>()).second && !duplicate) {
            duplicate = parsed.get<std::string>();
          }
        }
        return true;
      };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, on_event);
  } catch (const nlohmann::json::exception& e) {
    fail(where, ": the header is not valid JSON: ", e.what());
  }
  EMBER_CHECK(!duplicate, where, ": the header repeats the key '", duplicate.value_or(""), "'");
  EMBER_CHECK(header.is_object(), where, ": the header is not a JSON object");

  StHeader out;
  out.data_start = 8 + n;
  const std::uint64_t data_size = size - out.data_start;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      EMBER_CHECK(value.is_object(), where, ": __metadata__ is not a JSON object");
      for (const auto& [mk, mv] : value.items()) {
        EMBER_CHECK(mv.is_string(), where, ": __metadata__ value of '", mk, "' is not a string");
        out.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    const std::string tw = ::ember::detail::concat(where, ": tensor '", key, "'");
    EMBER_CHECK(value.is_object(), tw, ": its entry is not a JSON object");
    EMBER_CHECK(value.contains("dtype") && value.at("dtype").is_string(), tw,
                ": missing or non-string \"dtype\"");
    EMBER_CHECK(value.contains("shape") && value.at("shape").is_array(), tw,
                ": missing or non-array \"shape\"");
    EMBER_CHECK(value.contains("data_offsets") && value.at("data_offsets").is_array(), tw,
                ": missing or non-array \"data_offsets\"");
    StEntry e;
    e.name = key;
    const std::string code = value.at("dtype").get<std::string>();
    const auto dt = st_parse(code);
    if (!dt) {
      static constexpr std::string_view known[] = {"I8",      "I16",     "U16",     "U32",
                                                   "U64",     "F8_E5M2", "F8_E4M3", "F8_E8M0",
                                                   "F6_E2M3", "F6_E3M2", "F4",      "C64"};
      const bool is_known = std::find(std::begin(known), std::end(known), code) != std::end(known);
      fail(tw, ": ", is_known ? "unsupported" : "unknown", " dtype ", code,
           " (ember reads F64, F32, F16, BF16, I64, I32, U8 and BOOL)");
    }
    e.dtype = *dt;
    const auto& shape = value.at("shape");
    EMBER_CHECK(shape.size() <= static_cast<std::size_t>(kMaxRank), tw, ": rank ", shape.size(),
                " exceeds ember's maximum rank ", kMaxRank);
    std::uint64_t numel = 1;
    bool overflow = false;
    for (const auto& d : shape) {
      // (No dump() of the value in these messages: it recurses, and the JSON may nest deeply.)
      EMBER_CHECK(d.is_number_unsigned(), tw,
                  ": shape holds something other than a non-negative integer");
      const auto extent = d.get<std::uint64_t>();
      EMBER_CHECK(extent <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                  tw, ": shape has an extent too large");
      if (extent != 0 &&
          numel > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / extent) {
        overflow = true;
      }
      numel *= extent;
      e.shape.push_back(static_cast<std::int64_t>(extent));
    }
    const std::uint64_t itemsize = st_itemsize(e.dtype);
    overflow = overflow || (numel > std::numeric_limits<std::uint64_t>::max() / itemsize);
    EMBER_CHECK(
        !overflow && numel <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
        tw, ": shape ", shape.dump(), " has too many elements");
    const auto& offsets = value.at("data_offsets");
    EMBER_CHECK(
        offsets.size() == 2 && offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned(),
        tw, ": data_offsets is not a pair of non-negative integers");
    e.begin = offsets[0].get<std::uint64_t>();
    e.end = offsets[1].get<std::uint64_t>();
    EMBER_CHECK(e.begin <= e.end, tw, ": data_offsets [", e.begin, ", ", e.end,
                "] end before they begin");
    EMBER_CHECK(e.end - e.begin == numel * itemsize, tw, ": data_offsets [", e.begin, ", ", e.end,
                "] hold ", e.end - e.begin, " bytes, but shape ", e.shape.str(), " of ", code,
                " needs ", numel * itemsize);
    EMBER_CHECK(e.end <= data_size, tw, ": data_offsets [", e.begin, ", ", e.end,
                "] run past the end of the data buffer (", data_size, " bytes)");
    out.entries.push_back(std::move(e));
  }

  // The tensors must tile the data buffer: no overlap, no gap, nothing after the last one.
  std::stable_sort(out.entries.begin(), out.entries.end(), [](const StEntry& a, const StEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t pos = 0;
  const StEntry* prev = nullptr;
  for (const StEntry& e : out.entries) {
    if (e.begin < pos) {
      fail(where, ": tensor '", e.name, "': data_offsets [", e.begin, ", ", e.end,
           "] overlap those of tensor '", prev->name, "' [", prev->begin, ", ", prev->end, "]");
    }
    if (e.begin > pos) {
      fail(where, ": tensor '", e.name, "': data_offsets [", e.begin, ", ", e.end,
           "] leave a gap of ", e.begin - pos, " bytes before them");
    }
    pos = e.end;
    prev = &e;
  }
  EMBER_CHECK(pos == data_size, where, ": ", data_size - pos,
              " bytes of trailing data after the last tensor (the data buffer is ", data_size,
              " bytes, the tensors cover ", pos, ")");
  return out;
}

// ---- writing ------------------------------------------------------------------------------------

using io::TempFile;  // io/temp_file.hpp

// Test hook (tests/io/test_safetensors.cpp): EMBER_TEST_SAVE_DELAY_MS=<ms> makes the writer
// sleep after writing the header and before the tensor data, so a test can kill it mid-write.
inline void test_save_delay() {
  if (const char* ms = std::getenv("EMBER_TEST_SAVE_DELAY_MS")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::strtol(ms, nullptr, 10)));
  }
}

// Writes the dense host copy of `t` (row-major, little-endian). One symbol for both kinds of unit
// by design (it is compiled once, with the writer): it brings the bytes to the host first, which
// any unit can (tests/CMakeLists.txt allows it in check_unit_kinds).
template <Storable T>
void write_tensor_data(TempFile& out, const Tensor<T>& t) {
  if (t.numel() == 0) return;
  const Tensor<T> host = t.to(Device::cpu()).contiguous();
  const auto bytes = static_cast<std::uint64_t>(host.numel()) * sizeof(T);
  if constexpr (std::endian::native == std::endian::big && sizeof(T) > 1) {
    std::vector<unsigned char> buf(reinterpret_cast<const unsigned char*>(host.data()),
                                   reinterpret_cast<const unsigned char*>(host.data()) + bytes);
    byteswap_elements(buf.data(), buf.size(), sizeof(T));
    out.write(buf.data(), bytes);
  } else {
    out.write(host.data(), bytes);
  }
}

}  // namespace detail

EMBER_IO_INLINE void save_safetensors(const NamedTensors& tensors,
                                      const std::filesystem::path& path,
                                      const std::map<std::string, std::string>& metadata) {
  struct Entry {
    const std::string* name;
    const AnyTensor* tensor;
    DType dtype;
    std::uint64_t bytes;
  };
  std::vector<Entry> entries;
  entries.reserve(tensors.size());
  std::set<std::string_view> names;
  for (const auto& [name, t] : tensors) {
    EMBER_CHECK(!name.empty(), "ember: save_safetensors: a tensor has an empty name");
    EMBER_CHECK(name != "__metadata__",
                "ember: save_safetensors: \"__metadata__\" is reserved and cannot name a tensor");
    EMBER_CHECK(names.insert(name).second, "ember: save_safetensors: two tensors are named '", name,
                "'");
    EMBER_CHECK(t.defined(), "ember: save_safetensors: tensor '", name, "' is undefined");
    const DType d = t.dtype();
    entries.push_back(
        {&name, &t, d, static_cast<std::uint64_t>(t.numel()) * detail::st_itemsize(d)});
  }
  // As the reference implementation: larger element types first (so every tensor's data is
  // aligned to its element size), then by name.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    const int oa = detail::st_order(a.dtype), ob = detail::st_order(b.dtype);
    return oa != ob ? oa > ob : *a.name < *b.name;
  });

  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ',';
      first = false;
      header += detail::json_quote(k, "a metadata key") + ":" +
                detail::json_quote(v, ::ember::detail::concat("the metadata value of '", k, "'"));
    }
    header += "}";
  }
  std::uint64_t offset = 0;
  for (const Entry& e : entries) {
    if (header.size() > 1) header += ',';
    header += detail::json_quote(*e.name, ::ember::detail::concat("tensor name '", *e.name, "'"));
    header += ":{\"dtype\":\"";
    header += detail::st_code(e.dtype);
    header += "\",\"shape\":[";
    const Shape shape = e.tensor->shape();
    for (int i = 0; i < shape.rank(); ++i) {
      if (i) header += ',';
      header += std::to_string(shape[i]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + e.bytes) + "]}";
    offset += e.bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  EMBER_CHECK(header.size() <= detail::kMaxHeaderBytes, "ember: save_safetensors: the header (",
              header.size(), " bytes) exceeds the ", detail::kMaxHeaderBytes,
              "-byte limit readers apply");

  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<unsigned char>(header.size() >> (8 * i));

  TempFile tmp(path, "ember: save_safetensors");
  tmp.write(len_bytes, 8);
  tmp.write(header.data(), header.size());
  detail::test_save_delay();
  for (const Entry& e : entries) {
    e.tensor->visit([&](const auto& t) { detail::write_tensor_data(tmp, t); });
  }
  tmp.commit(path);

  // Make the rename itself durable.
  const std::filesystem::path dir =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  int dfd;
  do {
    dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (dfd < 0 && errno == EINTR);
  if (dfd < 0) {
    fail("ember: save_safetensors: '", path.string(), "' was written, but its directory '",
         dir.string(), "' cannot be opened to fsync it: ", detail::errno_text(errno));
  }
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL && err != ENOTSUP) {  // some file systems cannot fsync directories
    fail("ember: save_safetensors: '", path.string(), "' was written, but fsync of its directory '",
         dir.string(), "' failed: ", detail::errno_text(err));
  }
}

EMBER_IO_INLINE NamedTensors load_safetensors(const std::filesystem::path& path, Device device) {
  const detail::ReadFile file(path);
  const detail::StHeader header = detail::read_header(file, path, "load_safetensors");
  NamedTensors out;
  out.reserve(header.entries.size());
  for (const detail::StEntry& e : header.entries) {
    detail::with_dtype(e.dtype, [&](auto tag) {
      using T = decltype(tag);
      static_assert(sizeof(T) == detail::st_itemsize(dtype_of<T>));
      Tensor<T> t = empty<T>(e.shape, Device::cpu());
      if (e.end > e.begin) {
        auto* bytes = reinterpret_cast<unsigned char*>(t.data());
        file.read(header.data_start + e.begin, bytes, e.end - e.begin);
        if constexpr (std::same_as<T, bool>) {
          for (std::uint64_t i = 0; i < e.end - e.begin; ++i) bytes[i] = bytes[i] != 0;
        } else if constexpr (std::endian::native == std::endian::big) {
          detail::byteswap_elements(bytes, e.end - e.begin, sizeof(T));
        }
      }
      out.emplace_back(e.name, AnyTensor(device.is_cpu() ? t : t.to(device)));
    });
  }
  return out;
}

EMBER_IO_INLINE std::map<std::string, std::string> read_safetensors_metadata(
    const std::filesystem::path& path) {
  const detail::ReadFile file(path);
  return detail::read_header(file, path, "read_safetensors_metadata").metadata;
}

}  // namespace ember::io
