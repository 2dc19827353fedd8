// The IDX format of MNIST and Fashion-MNIST: read a file, plain or gzip-compressed, into a tensor
// shaped as the file's dimensions. See docs/data.md.
//
// File layout (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT"):
//   bytes 0-1  zero
//   byte  2    the element type: 0x08 unsigned byte, 0x09 signed byte, 0x0B short (2 bytes),
//              0x0C int (4 bytes), 0x0D float (4 bytes), 0x0E double (8 bytes)
//   byte  3    the number of dimensions, d
//   then d unsigned 32-bit big-endian extents, then the elements, row-major and big-endian,
//   and nothing after them.
//
// This header needs zlib (Debian: zlib1g-dev; CMake: find_package(ZLIB) and ZLIB::ZLIB). It is not
// included by <ember/ember.hpp>, so the core keeps no zlib dependency: include
// <ember/data/idx.hpp>. Files are read through zlib's gz* functions, which read gzip streams and
// plain files alike.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"
#include "../tensor/any_tensor.hpp"
#include "../tensor/factories.hpp"
#include "../tensor/tensor.hpp"

namespace ember::data {

/// The element type codes of the IDX format (byte 2 of the magic number).
enum class IdxType : std::uint8_t {
  u8 = 0x08,   // unsigned byte -> Tensor<std::uint8_t>
  i8 = 0x09,   // signed byte   -> Tensor<std::int32_t> (ember has no 8-bit signed type)
  i16 = 0x0B,  // short         -> Tensor<std::int32_t> (ember has no 16-bit type)
  i32 = 0x0C,  // int           -> Tensor<std::int32_t>
  f32 = 0x0D,  // float         -> Tensor<float>
  f64 = 0x0E,  // double        -> Tensor<double>
};

/// What an IDX header says: the element type and the extents.
struct IdxHeader {
  IdxType type{};
  std::vector<std::int64_t> dims;
};

namespace detail {

/// Bytes per element of an IDX type.
inline constexpr std::size_t idx_itemsize(IdxType t) {
  switch (t) {
    case IdxType::u8:
    case IdxType::i8:
      return 1;
    case IdxType::i16:
      return 2;
    case IdxType::i32:
    case IdxType::f32:
      return 4;
    case IdxType::f64:
      return 8;
  }
  return 0;
}

/// The format's name for an IDX type ("ubyte", "sbyte", ...).
inline constexpr std::string_view idx_type_name(IdxType t) {
  switch (t) {
    case IdxType::u8:
      return "ubyte";
    case IdxType::i8:
      return "sbyte";
    case IdxType::i16:
      return "short";
    case IdxType::i32:
      return "int";
    case IdxType::f32:
      return "float";
    case IdxType::f64:
      return "double";
  }
  return "?";
}

inline bool idx_type_known(unsigned code) {
  return code == 0x08 || code == 0x09 || code == 0x0B || code == 0x0C || code == 0x0D ||
         code == 0x0E;
}

inline std::string idx_errno_text(int err) { return std::system_category().message(err); }

inline std::string idx_hex(std::uint64_t v, int digits) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string s(static_cast<std::size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = kHex[v & 15];
  return "0x" + s;
}

inline std::string idx_dims_str(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

// A file read through zlib's gz* API: a gzip stream is decompressed, any other file is read as it
// is. Opened with open(2) first so a missing or unreadable file reports the errno cause.
class GzFile {
 public:
  explicit GzFile(const std::filesystem::path& path, std::string where) : where_(std::move(where)) {
    int fd = -1;
    do {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) fail(where_, ": cannot open the file: ", idx_errno_text(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      fail(where_, ": cannot stat the file: ", idx_errno_text(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      fail(where_, ": not a regular file");
    }
    file_ = ::gzdopen(fd, "rb");
    if (file_ == nullptr) {
      ::close(fd);
      fail(where_, ": zlib could not open the file (out of memory)");
    }
    ::gzbuffer(file_, 1u << 17);
  }
  ~GzFile() { ::gzclose_r(file_); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  /// Reads up to `n` bytes into `dst`; fewer only at the end of the data. Throws on a read error
  /// and on a corrupt or truncated gzip stream.
  std::size_t read(void* dst, std::size_t n) {
    auto* p = static_cast<unsigned char*>(dst);
    std::size_t done = 0;
    while (done < n) {
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      const int got = ::gzread(file_, p + done, chunk);
      if (got < 0) throw_stream_error();
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    if (done < n) {
      // zlib reports a gzip stream cut short (Z_BUF_ERROR) only through gzerror.
      int code = Z_OK;
      ::gzerror(file_, &code);
      if (code != Z_OK) throw_stream_error();
    }
    return done;
  }

  /// True when the file is read as it is (not a gzip stream). Valid after the first read.
  bool plain() const { return ::gzdirect(file_) != 0; }

 private:
  [[noreturn]] void throw_stream_error() {
    const int saved_errno = errno;
    int code = Z_OK;
    const char* msg = ::gzerror(file_, &code);
    if (code == Z_ERRNO) fail(where_, ": cannot read the file: ", idx_errno_text(saved_errno));
    if (code == Z_BUF_ERROR) {
      fail(where_, ": the gzip stream is truncated (", msg ? msg : "unexpected end of file", ")");
    }
    fail(where_, ": the gzip stream is corrupt (zlib: ", msg ? msg : "unknown error", ")");
  }

  std::string where_;
  gzFile file_ = nullptr;
};

inline std::uint32_t idx_be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}
inline std::uint64_t idx_be64(const unsigned char* p) {
  return (std::uint64_t{idx_be32(p)} << 32) | idx_be32(p + 4);
}

// Reads and checks the magic number and the dimensions; returns the header and the number of
// data bytes the dimensions describe.
inline IdxHeader idx_read_header(GzFile& file, const std::string& where,
                                 std::uint64_t* data_bytes) {
  unsigned char magic[4];
  const std::size_t got = file.read(magic, 4);
  EMBER_CHECK(got > 0, where, ": the file is empty");
  EMBER_CHECK(got == 4, where, ": truncated: the file ends inside the 4-byte magic number (", got,
              " bytes)");
  const std::uint32_t m = idx_be32(magic);
  EMBER_CHECK(magic[0] == 0 && magic[1] == 0, where, ": bad magic number ", idx_hex(m, 8),
              ": an IDX file starts with two zero bytes, a type code and the number of dimensions"
              " (is this an IDX file?)");
  EMBER_CHECK(idx_type_known(magic[2]), where, ": bad magic number ", idx_hex(m, 8),
              ": unknown type code ", idx_hex(magic[2], 2),
              " (IDX knows 0x08 ubyte, 0x09 sbyte, 0x0B short, 0x0C int, 0x0D float, 0x0E double)");
  const int ndim = magic[3];
  EMBER_CHECK(ndim > 0, where, ": bad magic number ", idx_hex(m, 8), ": zero dimensions");
  EMBER_CHECK(ndim <= kMaxRank, where, ": the file has ", ndim,
              " dimensions; ember tensors have at most ", kMaxRank);

  IdxHeader h;
  h.type = static_cast<IdxType>(magic[2]);
  unsigned char raw[4 * kMaxRank];
  const std::size_t want = 4 * static_cast<std::size_t>(ndim);
  const std::size_t got_dims = file.read(raw, want);
  EMBER_CHECK(got_dims == want, where, ": truncated: the file ends inside the ", ndim,
              " dimensions (", got_dims, " of ", want, " bytes)");
  // Extents are below 2^32 and at most 8 of them: the product of bytes can overflow 64 bits, so
  // it is checked against a bound no real file reaches (and no allocation could satisfy). Zero
  // extents count as 1 there: an empty tensor's strides are still the products of the others.
  constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 56;
  std::uint64_t bound = idx_itemsize(h.type);
  bool too_big = false, empty = false;
  for (int i = 0; i < ndim; ++i) {
    const std::uint32_t d = idx_be32(raw + 4 * i);
    h.dims.push_back(static_cast<std::int64_t>(d));
    empty = empty || d == 0;
    if (d != 0 && bound > kMaxBytes / d) too_big = true;
    if (!too_big && d != 0) bound *= d;
  }
  const std::uint64_t bytes = empty ? 0 : bound;
  EMBER_CHECK(!too_big, where, ": the dimensions ", idx_dims_str(h.dims), " of type ",
              idx_type_name(h.type),
              " describe more than 2^56 bytes of data: the header is corrupt");
  *data_bytes = bytes;
  return h;
}

// Reads exactly `n` bytes of data (growing the buffer only as data arrives, so a corrupt header
// that claims a huge size costs no more memory than the file holds), then checks that nothing
// follows them.
inline std::vector<unsigned char> idx_read_data(GzFile& file, std::uint64_t n,
                                                const std::string& where, const IdxHeader& h) {
  std::vector<unsigned char> buf;
  constexpr std::uint64_t kFirst = std::uint64_t{1} << 24;  // 16 MiB, then doubling
  std::uint64_t have = 0;
  while (have < n) {
    const std::uint64_t target = std::min(n, std::max(kFirst, 2 * have));
    buf.resize(static_cast<std::size_t>(target));
    const std::size_t got = file.read(buf.data() + have, static_cast<std::size_t>(target - have));
    have += got;
    if (have < target) break;
  }
  EMBER_CHECK(have == n, where, ": truncated: the dimensions ", idx_dims_str(h.dims), " of type ",
              idx_type_name(h.type), " need ", n, " bytes of data, the file holds ", have);
  unsigned char extra[1 << 16];
  std::uint64_t trailing = 0;
  for (;;) {
    const std::size_t got = file.read(extra, sizeof extra);
    trailing += got;
    if (got < sizeof extra) break;
  }
  EMBER_CHECK(trailing == 0, where, ": ", trailing, " bytes of trailing garbage after the ", n,
              " bytes of data that the dimensions ", idx_dims_str(h.dims), " of type ",
              idx_type_name(h.type), " describe");
  return buf;
}

template <class T, class Decode>
Tensor<T> idx_decode(const std::vector<unsigned char>& bytes, const Shape& shape,
                     std::size_t itemsize, Decode decode) {
  Tensor<T> t = empty<T>(shape);
  T* out = t.data();
  const std::size_t n = static_cast<std::size_t>(shape.numel());
  for (std::size_t i = 0; i < n; ++i) out[i] = decode(bytes.data() + i * itemsize);
  return t;
}

}  // namespace detail

/// Reads the IDX file at `path` (plain, or gzip-compressed: detected from the content, not the
/// name) into a CPU tensor shaped as the file's dimensions: ubyte as Tensor<std::uint8_t>, sbyte,
/// short and int as Tensor<std::int32_t>, float as Tensor<float>, double as Tensor<double>.
/// Throws ember::Error naming the file and the cause when it is missing, unreadable, not a
/// regular file, truncated, a corrupt gzip stream, has a bad magic number, more than 8
/// dimensions, or bytes after the data its dimensions describe.
inline AnyTensor read_idx(const std::filesystem::path& path) {
  const std::string where = ::ember::detail::concat("ember: read_idx: '", path.string(), "'");
  detail::GzFile file(path, where);
  std::uint64_t data_bytes = 0;
  const IdxHeader h = detail::idx_read_header(file, where, &data_bytes);
  const std::vector<unsigned char> bytes = detail::idx_read_data(file, data_bytes, where, h);
  const Shape shape(h.dims);
  switch (h.type) {
    case IdxType::u8: {
      Tensor<std::uint8_t> t = empty<std::uint8_t>(shape);
      if (!bytes.empty()) std::memcpy(t.data(), bytes.data(), bytes.size());
      return t;
    }
    case IdxType::i8:
      return detail::idx_decode<std::int32_t>(bytes, shape, 1, [](const unsigned char* p) {
        return static_cast<std::int32_t>(static_cast<std::int8_t>(p[0]));
      });
    case IdxType::i16:
      return detail::idx_decode<std::int32_t>(bytes, shape, 2, [](const unsigned char* p) {
        return static_cast<std::int32_t>(
            static_cast<std::int16_t>(static_cast<std::uint16_t>((p[0] << 8) | p[1])));
      });
    case IdxType::i32:
      return detail::idx_decode<std::int32_t>(bytes, shape, 4, [](const unsigned char* p) {
        return std::bit_cast<std::int32_t>(detail::idx_be32(p));
      });
    case IdxType::f32:
      return detail::idx_decode<float>(bytes, shape, 4, [](const unsigned char* p) {
        return std::bit_cast<float>(detail::idx_be32(p));
      });
    case IdxType::f64:
      return detail::idx_decode<double>(bytes, shape, 8, [](const unsigned char* p) {
        return std::bit_cast<double>(detail::idx_be64(p));
      });
  }
  fail(where, ": unknown type code");  // unreachable: the header check refuses other codes
}

/// Reads an IDX file of unsigned bytes (MNIST's images and labels) as a Tensor<std::uint8_t>.
/// Throws ember::Error, as read_idx does, and also when the file holds another element type.
inline Tensor<std::uint8_t> read_idx_u8(const std::filesystem::path& path) {
  AnyTensor t = read_idx(path);
  EMBER_CHECK(t.holds<std::uint8_t>(), "ember: read_idx_u8: '", path.string(),
              "' holds IDX elements read as ", t.dtype_name(), ", not unsigned bytes (type 0x08)");
  return t.as<std::uint8_t>();
}

}  // namespace ember::data
