// CIFAR-10 (60,000 32x32 colour images in 10 classes, Krizhevsky 2009) from its binary version:
// the train or test split as a float image tensor and an int64 label tensor. See docs/data.md.
//
// The binary version (cifar-10-binary.tar.gz, which unpacks to cifar-10-batches-bin/) holds
// data_batch_1.bin ... data_batch_5.bin (10,000 images each, the training split) and
// test_batch.bin (10,000, the test split). Each file is a run of 3073-byte records and nothing
// else: one label byte in [0, 10), then the 1024 red, the 1024 green and the 1024 blue bytes of
// the image, each plane row-major. So a record is already CHW and is read without reordering.
//
// Needs nothing beyond ember and the standard library. (It includes fashion_mnist.hpp for the
// Split enum it shares with FashionMnist, which pulls <zlib.h> in: see docs/data.md.)
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "../core/error.hpp"
#include "../tensor/factories.hpp"
#include "../tensor/tensor.hpp"
#include "fashion_mnist.hpp"  // Split

namespace ember::data {

class Cifar10 {
 public:
  static constexpr std::int64_t kRecordBytes = 1 + 3 * 32 * 32;  // label + RGB planes
  /// Per-channel mean and standard deviation (population) of the 50,000 training images' pixels
  /// scaled to [0, 1], for `Cifar10(dir, split, kMean, kStd)`.
  static constexpr std::array<float, 3> kMean = {0.49139968f, 0.48215841f, 0.44653091f};
  static constexpr std::array<float, 3> kStd = {0.24703223f, 0.24348513f, 0.26158784f};

  /// The ten class names, indexed by label (batches.meta.txt of the binary version).
  static const std::array<std::string_view, 10>& class_names() {
    static constexpr std::array<std::string_view, 10> kNames = {
        "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
    return kNames;
  }

  /// The files of a split, in the order their records are concatenated.
  static std::vector<std::string> file_names(Split split) {
    if (split == Split::test) return {"test_batch.bin"};
    return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
            "data_batch_5.bin"};
  }

  /// Loads `split` from `dir` (the folder holding the .bin files, e.g. cifar-10-batches-bin):
  /// images as [N, 3, 32, 32] floats in [0, 1] (pixel / 255), labels as [N] int64 in [0, 10).
  /// Throws ember::Error naming the file when one is missing or unreadable, empty, not a whole
  /// number of 3073-byte records, or holds a label above 9.
  Cifar10(const std::filesystem::path& dir, Split split)
      : Cifar10(dir, split, {0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 1.0f}) {}

  /// As above, with channel c of every pixel normalised: (pixel / 255 - mean[c]) / std[c]
  /// (torchvision's ToTensor then Normalize(mean, std)); e.g. kMean, kStd.
  Cifar10(const std::filesystem::path& dir, Split split, const std::array<float, 3>& mean,
          const std::array<float, 3>& std)
      : split_(split) {
    for (int c = 0; c < 3; ++c) {
      EMBER_CHECK(std[static_cast<std::size_t>(c)] > 0.0f, "ember: Cifar10: std[", c,
                  "] must be positive, got ", std[static_cast<std::size_t>(c)]);
    }
    // Read every file first: the tensors are allocated once, at their final size.
    std::vector<std::vector<unsigned char>> files;
    std::vector<std::string> names;
    std::int64_t n = 0;
    for (const std::string& name : file_names(split)) {
      const std::filesystem::path path = dir / name;
      const std::string where = ::ember::detail::concat("ember: Cifar10: '", path.string(), "'");
      files.push_back(read_file(path, where));
      const auto bytes = static_cast<std::int64_t>(files.back().size());
      EMBER_CHECK(bytes > 0, where, ": the file is empty");
      EMBER_CHECK(bytes % kRecordBytes == 0, where, ": ", bytes,
                  " bytes is not a whole number of 3073-byte records (1 label byte + 3x32x32 "
                  "pixel bytes): the file is truncated or not CIFAR-10's binary version");
      names.push_back(where);
      n += bytes / kRecordBytes;
    }

    images_ = empty<float>(Shape{n, 3, 32, 32});
    labels_ = empty<std::int64_t>(Shape{n});
    // 256-entry tables per channel: the division and normalisation are done once per value.
    std::array<std::array<float, 256>, 3> lut{};
    for (std::size_t c = 0; c < 3; ++c) {
      for (int v = 0; v < 256; ++v) {
        lut[c][static_cast<std::size_t>(v)] = (static_cast<float>(v) / 255.0f - mean[c]) / std[c];
      }
    }
    float* img = images_.data();
    std::int64_t* lab = labels_.data();
    std::int64_t at = 0;
    for (std::size_t f = 0; f < files.size(); ++f) {
      const unsigned char* p = files[f].data();
      const auto records = static_cast<std::int64_t>(files[f].size()) / kRecordBytes;
      for (std::int64_t r = 0; r < records; ++r, ++at, p += kRecordBytes) {
        EMBER_CHECK(p[0] < 10, names[f], ": record ", r, " has label ", static_cast<int>(p[0]),
                    ", outside [0, 10) (is this CIFAR-100, whose records are 3074 bytes?)");
        lab[at] = p[0];
        float* dst = img + at * 3 * 1024;
        for (std::size_t c = 0; c < 3; ++c) {
          const unsigned char* plane = p + 1 + c * 1024;
          for (std::size_t i = 0; i < 1024; ++i) dst[c * 1024 + i] = lut[c][plane[i]];
        }
      }
    }
  }

  /// [N, 3, 32, 32] floats on the CPU, channels R, G, B.
  const Tensor<float>& images() const { return images_; }
  /// [N] int64 class indices on the CPU.
  const Tensor<std::int64_t>& labels() const { return labels_; }
  /// N: the number of records in the split's files (50,000 and 10,000 for the real ones).
  std::int64_t size() const { return labels_.size(0); }
  Split split() const { return split_; }

 private:
  // The whole file. open(2) rather than a stream, so a missing or unreadable file reports the
  // errno cause.
  static std::vector<unsigned char> read_file(const std::filesystem::path& path,
                                              const std::string& where) {
    int fd = -1;
    do {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      const int err = errno;
      fail(where, ": cannot open the file: ", std::system_category().message(err),
           err == ENOENT ? " (the folder should hold data_batch_1.bin ... data_batch_5.bin and "
                           "test_batch.bin from cifar-10-binary.tar.gz)"
                         : "");
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      fail(where, ": not a regular file");
    }
    std::vector<unsigned char> buf(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (done < buf.size()) {
      const ssize_t got = ::read(fd, buf.data() + done, buf.size() - done);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        const int err = errno;
        ::close(fd);
        if (got == 0) fail(where, ": the file shrank while it was read");
        fail(where, ": cannot read the file: ", std::system_category().message(err));
      }
      done += static_cast<std::size_t>(got);
    }
    ::close(fd);
    return buf;
  }

  Split split_;
  Tensor<float> images_;
  Tensor<std::int64_t> labels_;
};

}  // namespace ember::data
