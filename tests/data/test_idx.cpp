// The IDX reader and Fashion-MNIST: the real Debian files (gzip and a plain copy), a hand-made
// file of every element type, and refusal of missing, truncated, corrupt and wrong-size files.
//
// The Fashion-MNIST tests need the Debian package dataset-fashion-mnist (CI installs it): without
// it they fail, saying so.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ember/data/fashion_mnist.hpp>
#include <ember/data/idx.hpp>
#include <ember/ember.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "support/files.hpp"

using namespace ember;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

using ember::testing::read_bytes;
using ember::testing::TempDir;
using ember::testing::write_bytes;

namespace {
namespace test_data_idx {

// The decompressed content of a gzip file (zlib's gz* API, independent of the reader's buffering).
std::string gunzip(const fs::path& p) {
  gzFile f = gzopen(p.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  REQUIRE(n == 0);
  gzclose(f);
  return out;
}

void write_gzip(const fs::path& p, const std::string& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}
std::string be64(std::uint64_t v) {
  return be32(static_cast<std::uint32_t>(v >> 32)) + be32(static_cast<std::uint32_t>(v));
}

// An IDX header: two zero bytes, the type code, the number of dimensions, the extents.
std::string idx_header(unsigned type, const std::vector<std::uint32_t>& dims) {
  std::string s{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (std::uint32_t d : dims) s += be32(d);
  return s;
}

// The Debian package's directory (or EMBER_FASHION_MNIST_DIR); fails the test when the files are
// missing, saying what to install.
fs::path dataset_dir() {
  const fs::path dir = data::FashionMnist::default_dir();
  if (!fs::exists(dir / "train-images-idx3-ubyte.gz") ||
      !fs::exists(dir / "t10k-labels-idx1-ubyte.gz")) {
    FAIL("Fashion-MNIST is not in '" << dir.string()
                                     << "': install the Debian package dataset-fashion-mnist "
                                        "(apt-get install dataset-fashion-mnist; CI installs it)"
                                        " or set EMBER_FASHION_MNIST_DIR");
  }
  return dir;
}

// Pixel checksums: the plain sum, and the sum of pixel[i] * (i % 997) over the flat index i,
// which also catches reordered pixels.
struct Checksum {
  std::uint64_t sum = 0;
  std::uint64_t weighted = 0;
};
Checksum checksum(const Tensor<std::uint8_t>& t) {
  REQUIRE(t.is_contiguous());
  Checksum c;
  const std::uint8_t* p = t.data();
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    c.sum += p[i];
    c.weighted += std::uint64_t{p[i]} * static_cast<std::uint64_t>(i % 997);
  }
  return c;
}

// Computed once from the Debian files with Python:
//   raw = gzip.open('/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz').read()
//   x = numpy.frombuffer(raw, dtype=numpy.uint8, offset=16).astype(numpy.int64)
//   i = numpy.arange(x.size, dtype=numpy.int64)
//   print(x.sum(), (x * (i % 997)).sum())                      # and the same for t10k-images
constexpr std::uint64_t kTrainSum = 3431114169u;
constexpr std::uint64_t kTrainWeighted = 1708901694491u;
constexpr std::uint64_t kTestSum = 573469082u;
constexpr std::uint64_t kTestWeighted = 286034809707u;

TEST_CASE("read_idx reads the Fashion-MNIST training split from the Debian package", "[data]") {
  const fs::path dir = dataset_dir();
  const AnyTensor any = data::read_idx(dir / "train-images-idx3-ubyte.gz");
  REQUIRE(any.dtype() == DType::u8);
  REQUIRE(any.shape() == Shape{60000, 28, 28});
  const Checksum c = checksum(any.as<std::uint8_t>());
  CHECK(c.sum == kTrainSum);
  CHECK(c.weighted == kTrainWeighted);

  const Tensor<std::uint8_t> labels = data::read_idx_u8(dir / "train-labels-idx1-ubyte.gz");
  REQUIRE(labels.shape() == Shape{60000});
  const std::uint8_t* l = labels.data();
  CHECK(std::vector<int>(l, l + 5) == std::vector<int>{9, 0, 0, 3, 0});
  std::vector<int> per_class(10, 0);
  for (std::int64_t i = 0; i < labels.numel(); ++i) {
    REQUIRE(l[i] < 10);
    ++per_class[l[i]];
  }
  CHECK(per_class == std::vector<int>(10, 6000));
}

TEST_CASE("read_idx reads the test split, gzip-compressed and plain alike", "[data]") {
  const fs::path dir = dataset_dir();
  const TempDir tmp;
  for (const std::string name : {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    write_bytes(tmp / name, gunzip(dir / (name + ".gz")));
  }
  const Tensor<std::uint8_t> gz = data::read_idx_u8(dir / "t10k-images-idx3-ubyte.gz");
  const Tensor<std::uint8_t> plain = data::read_idx_u8(tmp / "t10k-images-idx3-ubyte");
  REQUIRE(gz.shape() == Shape{10000, 28, 28});
  REQUIRE(plain.shape() == gz.shape());
  const Checksum c = checksum(plain);
  CHECK(c.sum == kTestSum);
  CHECK(c.weighted == kTestWeighted);
  CHECK(gz.to_vector() == plain.to_vector());

  const Tensor<std::uint8_t> labels = data::read_idx_u8(tmp / "t10k-labels-idx1-ubyte");
  REQUIRE(labels.shape() == Shape{10000});
  CHECK(labels.to_vector() == data::read_idx_u8(dir / "t10k-labels-idx1-ubyte.gz").to_vector());
  const std::uint8_t* l = labels.data();
  CHECK(std::vector<int>(l, l + 5) == std::vector<int>{9, 2, 1, 1, 6});
}

TEST_CASE("FashionMnist gives float images in [0, 1] and int64 labels", "[data]") {
  const fs::path dir = dataset_dir();
  const data::FashionMnist train(data::Split::train);
  REQUIRE(train.size() == 60000);
  REQUIRE(train.images().shape() == Shape{60000, 1, 28, 28});
  REQUIRE(train.labels().shape() == Shape{60000});
  const float* x = train.images().data();
  // Pixel (14, 14) of the first image is 217 (numpy: x.reshape(-1, 28, 28)[0, 14, 14]).
  CHECK(x[14 * 28 + 14] == 217.0f / 255.0f);
  double sum = 0, lo = 1, hi = 0;
  for (std::int64_t i = 0; i < train.images().numel(); ++i) {
    sum += x[i];
    lo = std::min<double>(lo, x[i]);
    hi = std::max<double>(hi, x[i]);
  }
  CHECK(lo == 0.0);
  CHECK(hi == 1.0);
  CHECK(sum / static_cast<double>(train.images().numel()) ==
        Approx(data::FashionMnist::kMean).epsilon(1e-5));
  const std::int64_t* y = train.labels().data();
  CHECK(std::vector<std::int64_t>(y, y + 5) == std::vector<std::int64_t>{9, 0, 0, 3, 0});
  CHECK(data::FashionMnist::class_names()[0] == "T-shirt/top");
  CHECK(data::FashionMnist::class_names()[y[0]] == "Ankle boot");

  const data::FashionMnist test(data::Split::test, data::FashionMnist::kMean,
                                data::FashionMnist::kStd, dir);
  REQUIRE(test.images().shape() == Shape{10000, 1, 28, 28});
  REQUIRE(test.split() == data::Split::test);
  CHECK(test.images().data()[14 * 28 + 14] ==
        (110.0f / 255.0f - data::FashionMnist::kMean) / data::FashionMnist::kStd);
  double s = 0, s2 = 0;
  const float* t = test.images().data();
  const auto n = static_cast<double>(test.images().numel());
  for (std::int64_t i = 0; i < test.images().numel(); ++i) {
    s += t[i];
    s2 += static_cast<double>(t[i]) * t[i];
  }
  // The test split's statistics are close to, not equal to, the training split's.
  CHECK(std::abs(s / n) < 0.01);
  CHECK(std::sqrt(s2 / n - (s / n) * (s / n)) == Approx(1.0).epsilon(0.01));
}

TEST_CASE(
    "FashionMnist finds plain files, follows EMBER_FASHION_MNIST_DIR, and says what to "
    "install when the files are missing",
    "[data]") {
  const fs::path dir = dataset_dir();
  const TempDir tmp;
  for (const std::string name : {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    write_bytes(tmp / name, gunzip(dir / (name + ".gz")));
  }
  const char* old = std::getenv("EMBER_FASHION_MNIST_DIR");
  const std::string saved = old ? old : "";
  REQUIRE(::setenv("EMBER_FASHION_MNIST_DIR", tmp.path.c_str(), 1) == 0);
  CHECK(data::FashionMnist::default_dir() == tmp.path);
  const data::FashionMnist test(data::Split::test);
  CHECK(test.size() == 10000);
  CHECK(test.labels().data()[1] == 2);
  // The training files are not in the directory.
  CHECK_THROWS_WITH(data::FashionMnist(data::Split::train),
                    Contains("train-images-idx3-ubyte.gz") &&
                        Contains("install the Debian package dataset-fashion-mnist") &&
                        Contains("EMBER_FASHION_MNIST_DIR"));
  if (old) {
    ::setenv("EMBER_FASHION_MNIST_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("EMBER_FASHION_MNIST_DIR");
  }
  CHECK_THROWS_WITH(data::FashionMnist(data::Split::test, tmp / "nowhere"),
                    Contains("not found") && Contains("dataset-fashion-mnist"));
  // Images and labels that disagree.
  const TempDir bad;
  fs::copy_file(tmp / "t10k-images-idx3-ubyte", bad / "t10k-images-idx3-ubyte");
  write_bytes(bad / "t10k-labels-idx1-ubyte", idx_header(0x08, {3}) + std::string{1, 2, 3});
  CHECK_THROWS_WITH(data::FashionMnist(data::Split::test, bad.path),
                    Contains("have shape [3] for 10000 images"));
  write_bytes(bad / "t10k-labels-idx1-ubyte",
              idx_header(0x08, {10000}) + std::string(9999, '\1') + std::string(1, '\12'));
  CHECK_THROWS_WITH(data::FashionMnist(data::Split::test, bad.path),
                    Contains("label 9999") && Contains("is 10, outside [0, 10)"));
}

TEST_CASE("read_idx reads a hand-made file of every element type", "[data]") {
  const TempDir tmp;
  SECTION("0x08 unsigned byte") {
    write_bytes(tmp / "u8", idx_header(0x08, {2, 3}) + std::string{0, 1, 2, 127, '\x80', '\xff'});
    const AnyTensor t = data::read_idx(tmp / "u8");
    REQUIRE(t.holds<std::uint8_t>());
    REQUIRE(t.shape() == Shape{2, 3});
    CHECK(t.as<std::uint8_t>().to_vector() == std::vector<std::uint8_t>{0, 1, 2, 127, 128, 255});
  }
  SECTION("0x09 signed byte, widened to int32") {
    write_bytes(tmp / "i8", idx_header(0x09, {4}) + std::string{'\x80', '\xff', 0, 127});
    const AnyTensor t = data::read_idx(tmp / "i8");
    REQUIRE(t.holds<std::int32_t>());
    CHECK(t.as<std::int32_t>().to_vector() == std::vector<std::int32_t>{-128, -1, 0, 127});
    CHECK_THROWS_WITH(data::read_idx_u8(tmp / "i8"),
                      Contains("read as int32") && Contains("not unsigned bytes"));
  }
  SECTION("0x0B short, widened to int32") {
    std::string body;
    for (std::uint16_t v : {0x8000, 0xFFFE, 300, 0x7FFF}) {
      body += static_cast<char>(v >> 8);
      body += static_cast<char>(v & 0xFF);
    }
    write_bytes(tmp / "i16", idx_header(0x0B, {2, 2}) + body);
    const AnyTensor t = data::read_idx(tmp / "i16");
    REQUIRE(t.holds<std::int32_t>());
    REQUIRE(t.shape() == Shape{2, 2});
    CHECK(t.as<std::int32_t>().to_vector() == std::vector<std::int32_t>{-32768, -2, 300, 32767});
  }
  SECTION("0x0C int") {
    std::string body;
    for (std::int32_t v : {std::numeric_limits<std::int32_t>::min(), -5, 1 << 30}) {
      body += be32(static_cast<std::uint32_t>(v));
    }
    write_bytes(tmp / "i32", idx_header(0x0C, {1, 3, 1}) + body);
    const AnyTensor t = data::read_idx(tmp / "i32");
    REQUIRE(t.holds<std::int32_t>());
    REQUIRE(t.shape() == Shape{1, 3, 1});
    CHECK(t.as<std::int32_t>().to_vector() ==
          std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min(), -5, 1 << 30});
  }
  SECTION("0x0D float") {
    std::string body;
    for (float v : {1.5f, -0.0f, 3.0e38f, -1.0e-40f}) body += be32(std::bit_cast<std::uint32_t>(v));
    write_bytes(tmp / "f32", idx_header(0x0D, {4}) + body);
    const AnyTensor t = data::read_idx(tmp / "f32");
    REQUIRE(t.holds<float>());
    const std::vector<float> v = t.as<float>().to_vector();
    CHECK(v[0] == 1.5f);
    CHECK((v[1] == 0.0f && std::signbit(v[1])));
    CHECK(v[2] == 3.0e38f);
    CHECK(v[3] == -1.0e-40f);
  }
  SECTION("0x0E double") {
    std::string body;
    for (double v : {3.141592653589793, -1e300}) body += be64(std::bit_cast<std::uint64_t>(v));
    write_bytes(tmp / "f64", idx_header(0x0E, {1, 2}) + body);
    const AnyTensor t = data::read_idx(tmp / "f64");
    REQUIRE(t.holds<double>());
    REQUIRE(t.shape() == Shape{1, 2});
    CHECK(t.as<double>().to_vector() == std::vector<double>{3.141592653589793, -1e300});
  }
  SECTION("a gzip-compressed file, whatever its name") {
    write_gzip(tmp / "short.idx", idx_header(0x0B, {3}) + std::string{0, 1, 0, 2, '\xff', '\xff'});
    const AnyTensor t = data::read_idx(tmp / "short.idx");
    CHECK(t.as<std::int32_t>().to_vector() == std::vector<std::int32_t>{1, 2, -1});
  }
  SECTION("a zero extent and eight dimensions") {
    write_bytes(tmp / "empty", idx_header(0x0D, {0, 5}));
    CHECK(data::read_idx(tmp / "empty").shape() == Shape{0, 5});
    write_bytes(tmp / "rank8", idx_header(0x08, {1, 2, 1, 1, 1, 1, 1, 2}) + "abcd");
    CHECK(data::read_idx(tmp / "rank8").shape() == Shape{1, 2, 1, 1, 1, 1, 1, 2});
  }
}

TEST_CASE("read_idx refuses missing, truncated, corrupt and wrong-size files", "[data]") {
  const TempDir tmp;
  const std::string good = idx_header(0x08, {2, 5}) + "0123456789";
  write_bytes(tmp / "good", good);
  REQUIRE(data::read_idx(tmp / "good").shape() == Shape{2, 5});

  SECTION("missing, a directory, empty") {
    CHECK_THROWS_WITH(data::read_idx(tmp / "missing.gz"),
                      Contains("missing.gz") && Contains("No such file or directory"));
    CHECK_THROWS_WITH(data::read_idx(tmp.path), Contains("not a regular file"));
    write_bytes(tmp / "empty", "");
    CHECK_THROWS_WITH(data::read_idx(tmp / "empty"),
                      Contains("'" + (tmp / "empty").string() + "': the file is empty"));
  }
  SECTION("truncated") {
    write_bytes(tmp / "t", good.substr(0, 3));
    CHECK_THROWS_WITH(data::read_idx(tmp / "t"),
                      Contains("truncated") && Contains("inside the 4-byte magic number"));
    write_bytes(tmp / "t", good.substr(0, 9));
    CHECK_THROWS_WITH(data::read_idx(tmp / "t"),
                      Contains("truncated") && Contains("inside the 2 dimensions (5 of 8 bytes)"));
    write_bytes(tmp / "t", good.substr(0, good.size() - 3));
    CHECK_THROWS_WITH(data::read_idx(tmp / "t"),
                      Contains("truncated: the dimensions [2, 5] of type ubyte need 10 bytes of "
                               "data, the file holds 7"));
    write_gzip(tmp / "t.gz", good.substr(0, good.size() - 1));
    CHECK_THROWS_WITH(data::read_idx(tmp / "t.gz"), Contains("the file holds 9"));
  }
  SECTION("bad magic number") {
    write_bytes(tmp / "m", "\x12\x34" + good.substr(2));
    CHECK_THROWS_WITH(data::read_idx(tmp / "m"),
                      Contains("bad magic number 0x12340802") && Contains("is this an IDX file?"));
    write_bytes(tmp / "m", idx_header(0x07, {2, 5}) + "0123456789");
    CHECK_THROWS_WITH(data::read_idx(tmp / "m"), Contains("unknown type code 0x07"));
    write_bytes(tmp / "m", idx_header(0x08, {}));
    CHECK_THROWS_WITH(data::read_idx(tmp / "m"), Contains("zero dimensions"));
    write_bytes(tmp / "m", idx_header(0x08, {1, 1, 1, 1, 1, 1, 1, 1, 1}) + "x");
    CHECK_THROWS_WITH(data::read_idx(tmp / "m"),
                      Contains("9 dimensions; ember tensors have at most 8"));
  }
  SECTION("dimensions that disagree with the file size") {
    write_bytes(tmp / "w", idx_header(0x08, {2, 4}) + "0123456789");
    CHECK_THROWS_WITH(
        data::read_idx(tmp / "w"),
        Contains("2 bytes of trailing garbage after the 8 bytes of data") && Contains("[2, 4]"));
    write_bytes(tmp / "w", idx_header(0x0C, {2, 5}) + "0123456789");  // 4-byte ints
    CHECK_THROWS_WITH(data::read_idx(tmp / "w"),
                      Contains("of type int need 40 bytes of data, the file holds 10"));
    write_gzip(tmp / "w.gz", good + "junk");
    CHECK_THROWS_WITH(data::read_idx(tmp / "w.gz"), Contains("4 bytes of trailing garbage"));
  }
  SECTION("dimensions whose size overflows, or is huge, cost no memory") {
    write_bytes(tmp / "h", idx_header(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}));
    CHECK_THROWS_WITH(data::read_idx(tmp / "h"), Contains("more than 2^56 bytes"));
    write_bytes(tmp / "h", idx_header(0x0E, {0xFFFFFFFF, 0x01000000}) + "x");
    CHECK_THROWS_WITH(data::read_idx(tmp / "h"), Contains("more than 2^56 bytes"));
    // 2^48 bytes claimed, 4 present: refused as truncated without allocating 2^48 bytes.
    write_bytes(tmp / "h", idx_header(0x08, {65536, 65536, 65536}) + "abcd");
    CHECK_THROWS_WITH(data::read_idx(tmp / "h"),
                      Contains("need 281474976710656 bytes of data, the file holds 4"));
  }
  SECTION("a corrupt or truncated gzip stream") {
    write_gzip(tmp / "g.gz", good);
    std::string gz = read_bytes(tmp / "g.gz");
    std::string crc = gz;
    crc[crc.size() - 8] = static_cast<char>(crc[crc.size() - 8] ^ 0x55);  // the CRC-32 trailer
    write_bytes(tmp / "crc.gz", crc);
    CHECK_THROWS_WITH(data::read_idx(tmp / "crc.gz"),
                      Contains("crc.gz") && Contains("gzip stream is corrupt"));
    write_bytes(tmp / "cut.gz", gz.substr(0, gz.size() - 10));
    CHECK_THROWS_WITH(data::read_idx(tmp / "cut.gz"), Contains("gzip stream is truncated"));
  }
}

TEST_CASE("read_idx never crashes on damaged files: it reads them or throws ember::Error",
          "[data]") {
  const TempDir tmp;
  const std::string good = idx_header(0x0B, {3, 4}) + std::string(24, '\x11');
  write_gzip(tmp / "g.gz", good);
  const std::string gz = read_bytes(tmp / "g.gz");
  std::uint64_t state = 12345;
  const auto next = [&state] {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return static_cast<std::size_t>(state >> 33);
  };
  int refused = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string bytes = trial % 2 ? gz : good;
    switch (trial % 4) {
      case 0:
      case 1:
        bytes.resize(next() % bytes.size());
        break;
      default:
        for (int k = 0; k < 3; ++k) {
          bytes[next() % bytes.size()] = static_cast<char>(next());
        }
    }
    write_bytes(tmp / "f", bytes);
    try {
      (void)data::read_idx(tmp / "f");
    } catch (const Error&) {
      ++refused;
    }
  }
  CHECK(refused > 200);  // every truncation is refused; most bit flips too
}

}  // namespace test_data_idx
}  // namespace
