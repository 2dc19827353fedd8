// Fashion-MNIST (Zalando's 70,000 28x28 grey images of clothes in 10 classes, a drop-in
// replacement for MNIST): the train or test split as a float image tensor and an int64 label
// tensor. See docs/data.md.
//
// The files come from the Debian package dataset-fashion-mnist, in /usr/share/datasets/
// fashion-mnist; the environment variable EMBER_FASHION_MNIST_DIR, or a directory given to the
// constructor, points elsewhere. Needs zlib, as data/idx.hpp does.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "../core/error.hpp"
#include "../tensor/factories.hpp"
#include "../tensor/tensor.hpp"
#include "idx.hpp"

namespace ember::data {

/// The training split (60,000 images) or the test split (10,000).
enum class Split { train, test };

class FashionMnist {
 public:
  /// Where the Debian package dataset-fashion-mnist puts the files.
  static constexpr std::string_view kDebianDir = "/usr/share/datasets/fashion-mnist";
  /// Mean and standard deviation of the training images' pixels scaled to [0, 1] (computed in
  /// float64 over all 47,040,000 pixels), for `FashionMnist(split, kMean, kStd)`.
  static constexpr float kMean = 0.28604060f;
  static constexpr float kStd = 0.35302424f;

  /// $EMBER_FASHION_MNIST_DIR when set and not empty, else kDebianDir.
  static std::filesystem::path default_dir() {
    const char* env = std::getenv("EMBER_FASHION_MNIST_DIR");
    if (env != nullptr && *env != '\0') return env;
    return std::filesystem::path(kDebianDir);
  }

  /// The ten class names, indexed by label: "T-shirt/top", "Trouser", ..., "Ankle boot".
  static const std::array<std::string_view, 10>& class_names() {
    static constexpr std::array<std::string_view, 10> kNames = {
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
        "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
    return kNames;
  }

  /// Loads `split` from `dir`: images as [N, 1, 28, 28] floats in [0, 1], labels as [N] int64 in
  /// [0, 10). Each file is looked for gzip-compressed (train-images-idx3-ubyte.gz, ...) and then
  /// plain (train-images-idx3-ubyte). Throws ember::Error when a file is missing (saying how to
  /// install it), corrupt, or does not match the other (counts, 28x28 images, labels above 9).
  explicit FashionMnist(Split split, const std::filesystem::path& dir = default_dir())
      : FashionMnist(split, 0.0f, 1.0f, dir) {}

  /// As above, with every pixel normalised: (pixel / 255 - mean) / std (e.g. kMean, kStd).
  FashionMnist(Split split, float mean, float std, const std::filesystem::path& dir = default_dir())
      : split_(split) {
    EMBER_CHECK(std > 0.0f, "ember: FashionMnist: std must be positive, got ", std);
    const std::string prefix = split == Split::train ? "train" : "t10k";
    const Tensor<std::uint8_t> raw = read_idx_u8(find(dir, prefix + "-images-idx3-ubyte"));
    const Tensor<std::uint8_t> lab = read_idx_u8(find(dir, prefix + "-labels-idx1-ubyte"));
    EMBER_CHECK(raw.rank() == 3 && raw.size(1) == 28 && raw.size(2) == 28,
                "ember: FashionMnist: the ", prefix, " images in '", dir.string(), "' have shape ",
                raw.shape().str(), ", not [N, 28, 28]");
    EMBER_CHECK(lab.rank() == 1 && lab.size(0) == raw.size(0), "ember: FashionMnist: the ", prefix,
                " labels in '", dir.string(), "' have shape ", lab.shape().str(), " for ",
                raw.size(0), " images");
    const std::int64_t n = raw.size(0);

    images_ = empty<float>(Shape{n, 1, 28, 28});
    const std::uint8_t* src = raw.data();
    float* dst = images_.data();
    for (std::int64_t i = 0; i < n * 28 * 28; ++i) {
      dst[i] = (static_cast<float>(src[i]) / 255.0f - mean) / std;
    }

    labels_ = empty<std::int64_t>(Shape{n});
    const std::uint8_t* ls = lab.data();
    std::int64_t* ld = labels_.data();
    for (std::int64_t i = 0; i < n; ++i) {
      EMBER_CHECK(ls[i] < 10, "ember: FashionMnist: label ", i, " of the ", prefix, " split in '",
                  dir.string(), "' is ", static_cast<int>(ls[i]), ", outside [0, 10)");
      ld[i] = ls[i];
    }
  }

  /// [N, 1, 28, 28] floats on the CPU.
  const Tensor<float>& images() const { return images_; }
  /// [N] int64 class indices on the CPU.
  const Tensor<std::int64_t>& labels() const { return labels_; }
  /// N: 60,000 for the training split, 10,000 for the test split.
  std::int64_t size() const { return labels_.size(0); }
  Split split() const { return split_; }

 private:
  static std::filesystem::path find(const std::filesystem::path& dir, const std::string& name) {
    std::error_code ec;
    const std::filesystem::path gz = dir / (name + ".gz");
    if (std::filesystem::exists(gz, ec)) return gz;
    const std::filesystem::path plain = dir / name;
    if (std::filesystem::exists(plain, ec)) return plain;
    fail("ember: FashionMnist: '", gz.string(), "' not found (nor '", plain.string(),
         "'): install the Debian package dataset-fashion-mnist (apt-get install "
         "dataset-fashion-mnist), or set EMBER_FASHION_MNIST_DIR to a directory holding "
         "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and "
         "t10k-labels-idx1-ubyte.gz");
  }

  Split split_;
  Tensor<float> images_;
  Tensor<std::int64_t> labels_;
};

}  // namespace ember::data
