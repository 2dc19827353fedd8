// CIFAR-10's binary format: no CIFAR-10 download is possible here, so the tests write files in
// the format themselves (Fashion-MNIST images padded to 32x32 with a different picture in each
// colour plane, so a plane read in the wrong order or place shows) and read them back; then
// refusal of missing, empty, wrong-size and bad-label files.
//
// Needs the Debian package dataset-fashion-mnist (CI installs it): without it the tests fail,
// saying so.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <ember/data/cifar10.hpp>
#include <ember/data/fashion_mnist.hpp>
#include <ember/ember.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/fashion_mnist.hpp"
#include "support/files.hpp"

using namespace ember;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

using ember::testing::read_bytes;
using ember::testing::TempDir;
using ember::testing::write_bytes;

namespace {
namespace test_data_cifar10 {

// The expected byte of channel c at (y, x) of the picture made from Fashion-MNIST image i: the
// 28x28 image centred in 32x32 (2 pixels of border), red as it is, green inverted, blue halved.
std::uint8_t expected_pixel(const data::FashionMnist& fm, std::int64_t i, int c, int y, int x) {
  int v = 0;
  if (y >= 2 && y < 30 && x >= 2 && x < 30) {
    // The Fashion-MNIST images are pixel / 255 exactly, so the byte comes back by rounding.
    const float f = fm.images().data()[i * 784 + (y - 2) * 28 + (x - 2)];
    v = static_cast<int>(f * 255.0f + 0.5f);
  }
  if (c == 1) v = 255 - v;
  if (c == 2) v = v / 2;
  return static_cast<std::uint8_t>(v);
}

// Records for Fashion-MNIST test images [first, first + count).
std::string cifar_records(const data::FashionMnist& fm, std::int64_t first, std::int64_t count) {
  std::string out;
  for (std::int64_t i = first; i < first + count; ++i) {
    out += static_cast<char>(fm.labels().data()[i]);
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) out += static_cast<char>(expected_pixel(fm, i, c, y, x));
      }
    }
  }
  return out;
}

// A training split of 5 files of 3, 4, 5, 6, 7 records (25 images from 0) and a test split of 8
// (images 100 to 107).
void write_splits(const TempDir& dir, const data::FashionMnist& fm) {
  std::int64_t at = 0;
  for (int f = 1; f <= 5; ++f) {
    write_bytes(dir / ("data_batch_" + std::to_string(f) + ".bin"), cifar_records(fm, at, f + 2));
    at += f + 2;
  }
  write_bytes(dir / "test_batch.bin", cifar_records(fm, 100, 8));
}

TEST_CASE("Cifar10 reads the training files in order, planes R, G, B, scaled to [0, 1]", "[data]") {
  const data::FashionMnist& fm = ember::testing::fashion_mnist_test_split();
  TempDir dir;
  write_splits(dir, fm);

  const data::Cifar10 train(dir.path, data::Split::train);
  REQUIRE(train.size() == 25);
  CHECK(train.split() == data::Split::train);
  CHECK(train.images().shape() == Shape{25, 3, 32, 32});
  CHECK(train.labels().shape() == Shape{25});
  const float* img = train.images().data();
  for (std::int64_t i = 0; i < 25; ++i) {
    CHECK(train.labels().data()[i] == fm.labels().data()[i]);
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) {
          const float want = static_cast<float>(expected_pixel(fm, i, c, y, x)) / 255.0f;
          const float got = img[((i * 3 + c) * 32 + y) * 32 + x];
          if (got != want) {
            FAIL("image " << i << " channel " << c << " (" << y << ", " << x << "): " << got
                          << " != " << want);
          }
        }
      }
    }
  }

  const data::Cifar10 test(dir.path, data::Split::test);
  REQUIRE(test.size() == 8);
  for (std::int64_t i = 0; i < 8; ++i)
    CHECK(test.labels().data()[i] == fm.labels().data()[100 + i]);
  CHECK(test.images().data()[(3 * 3 + 1) * 1024 + 0] ==
        static_cast<float>(expected_pixel(fm, 103, 1, 0, 0)) / 255.0f);
}

TEST_CASE("Cifar10 normalises each channel with its own mean and std", "[data]") {
  const data::FashionMnist& fm = ember::testing::fashion_mnist_test_split();
  TempDir dir;
  write_splits(dir, fm);
  const data::Cifar10 plain(dir.path, data::Split::test);
  const data::Cifar10 norm(dir.path, data::Split::test, data::Cifar10::kMean, data::Cifar10::kStd);
  const float* a = plain.images().data();
  const float* b = norm.images().data();
  for (std::int64_t i = 0; i < plain.images().numel(); ++i) {
    const auto c = static_cast<std::size_t>((i / 1024) % 3);
    const float want = (a[i] - data::Cifar10::kMean[c]) / data::Cifar10::kStd[c];
    if (b[i] != want) FAIL("element " << i << ": " << b[i] << " != " << want);
  }
  CHECK_THROWS_WITH(
      data::Cifar10(dir.path, data::Split::test, {0.5f, 0.5f, 0.5f}, {0.2f, 0.0f, 0.2f}),
      Contains("std[1] must be positive"));
}

TEST_CASE("Cifar10 class names are the ten of batches.meta.txt", "[data]") {
  const auto& names = data::Cifar10::class_names();
  CHECK(names[0] == "airplane");
  CHECK(names[1] == "automobile");
  CHECK(names[3] == "cat");
  CHECK(names[9] == "truck");
  CHECK(data::Cifar10::file_names(data::Split::train).size() == 5);
  CHECK(data::Cifar10::file_names(data::Split::test) == std::vector<std::string>{"test_batch.bin"});
}

TEST_CASE("Cifar10 refuses missing, empty, wrong-size and bad-label files, naming them", "[data]") {
  const data::FashionMnist& fm = ember::testing::fashion_mnist_test_split();
  TempDir dir;
  write_splits(dir, fm);

  SECTION("a missing file") {
    fs::remove(dir / "data_batch_3.bin");
    CHECK_THROWS_AS(data::Cifar10(dir.path, data::Split::train), Error);
    CHECK_THROWS_WITH(data::Cifar10(dir.path, data::Split::train),
                      Contains("data_batch_3.bin") && Contains("cannot open the file") &&
                          Contains("cifar-10-binary.tar.gz"));
  }
  SECTION("a missing folder") {
    CHECK_THROWS_WITH(data::Cifar10(dir / "nowhere", data::Split::test),
                      Contains("nowhere/test_batch.bin"));
  }
  SECTION("an empty file") {
    write_bytes(dir / "test_batch.bin", "");
    CHECK_THROWS_WITH(data::Cifar10(dir.path, data::Split::test),
                      Contains("test_batch.bin") && Contains("empty"));
  }
  SECTION("a size that is not a multiple of 3073") {
    std::string bytes = cifar_records(fm, 0, 2);
    bytes.pop_back();
    write_bytes(dir / "data_batch_5.bin", bytes);
    CHECK_THROWS_WITH(
        data::Cifar10(dir.path, data::Split::train),
        Contains("data_batch_5.bin") && Contains("6145 bytes") && Contains("3073-byte records"));
    // CIFAR-100's records (2 label bytes) do not fit either.
    write_bytes(dir / "data_batch_5.bin", bytes + std::string(3, '\0'));
    CHECK_THROWS_WITH(data::Cifar10(dir.path, data::Split::train), Contains("6148 bytes"));
  }
  SECTION("a label above 9") {
    std::string bytes = cifar_records(fm, 0, 3);
    bytes[2 * 3073] = 10;
    write_bytes(dir / "test_batch.bin", bytes);
    CHECK_THROWS_WITH(data::Cifar10(dir.path, data::Split::test),
                      Contains("test_batch.bin") && Contains("record 2 has label 10"));
  }
  SECTION("a folder where a file should be") {
    fs::remove(dir / "test_batch.bin");
    fs::create_directory(dir / "test_batch.bin");
    CHECK_THROWS_WITH(data::Cifar10(dir.path, data::Split::test),
                      Contains("test_batch.bin") && Contains("not a regular file"));
  }
}

}  // namespace test_data_cifar10
}  // namespace
