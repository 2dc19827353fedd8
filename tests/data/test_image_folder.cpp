// JPEG image folders: the tests write real JPEGs (Fashion-MNIST images as RGB, some upscaled to
// 80x64 so crops matter) into a temporary ImageNet-style tree, with a corrupt and a truncated
// file, then check the class mapping, decoding, the transforms (against numbers computed once
// with Pillow 13), the random draws, and the loader: skipping, prefetching, shutting down.
//
// Needs the Debian packages libturbojpeg0-dev and dataset-fashion-mnist (CI installs both).
#include <catch2/catch.hpp>

#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ember/data/batches.hpp>
#include <ember/data/fashion_mnist.hpp>
#include <ember/data/image_folder.hpp>
#include <ember/ember.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
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
namespace test_data_image_folder {

// A JPEG of `pixels` (packed, `format` TJPF_RGB or TJPF_CMYK) with 4:4:4 chroma.
std::string encode_jpeg(const std::vector<std::uint8_t>& pixels, int width, int height,
                        int format = TJPF_RGB, int quality = 95) {
  tjhandle c = tjInitCompress();
  REQUIRE(c != nullptr);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int rc =
      tjCompress2(c, pixels.data(), width, 0, height, format, &buf, &size, TJSAMP_444, quality, 0);
  INFO(tjGetErrorStr2(c));
  REQUIRE(rc == 0);
  std::string out(reinterpret_cast<const char*>(buf), size);
  tjFree(buf);
  tjDestroy(c);
  return out;
}

// Fashion-MNIST test image i as an RGB picture of width x height (nearest-neighbour upscaling):
// red the grey value, green its inverse, blue half of it, so a channel mix-up shows.
data::Image fashion_rgb(std::int64_t i, int width = 28, int height = 28) {
  const float* src = ember::testing::fashion_mnist_test_split().images().data() + i * 784;
  data::Image img;
  img.width = width;
  img.height = height;
  img.rgb.resize(static_cast<std::size_t>(width * height * 3));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const int v = static_cast<int>(src[(y * 28 / height) * 28 + x * 28 / width] * 255.0f + 0.5f);
      std::uint8_t* p = img.rgb.data() + (y * width + x) * 3;
      p[0] = static_cast<std::uint8_t>(v);
      p[1] = static_cast<std::uint8_t>(255 - v);
      p[2] = static_cast<std::uint8_t>(v / 2);
    }
  }
  return img;
}

std::string fashion_jpeg(std::int64_t i, int width = 28, int height = 28) {
  const data::Image img = fashion_rgb(i, width, height);
  return encode_jpeg(img.rgb, width, height);
}

// The first `count` Fashion-MNIST test images of `label`.
std::vector<std::int64_t> images_of(std::int64_t label, int count) {
  std::vector<std::int64_t> out;
  const std::int64_t* labels = ember::testing::fashion_mnist_test_split().labels().data();
  for (std::int64_t i = 0; i < ember::testing::fashion_mnist_test_split().size() &&
                           static_cast<int>(out.size()) < count;
       ++i) {
    if (labels[i] == label) out.push_back(i);
  }
  return out;
}

// The tree of the tests: classes "Trouser", "bag", "sneaker" (byte order puts the capital
// first), 6 good training images each (4 of 28x28, 2 of 80x64, one in a sub-folder of
// Trouser), a corrupt bag/x.JPEG and a truncated sneaker/truncated.jpg; 2 validation images
// each; and files that are not JPEGs, which are ignored.
struct Tree {
  TempDir dir;
  std::map<fs::path, std::int64_t> source;  // file -> Fashion-MNIST index
  std::map<fs::path, std::pair<int, int>> size;

  Tree() {
    const std::vector<std::pair<std::string, std::int64_t>> classes = {
        {"Trouser", 1}, {"bag", 8}, {"sneaker", 7}};
    for (const auto& [name, label] : classes) {
      const std::vector<std::int64_t> idx = images_of(label, 8);
      for (int k = 0; k < 6; ++k) {
        const bool big = k >= 4;
        const std::string ext = k % 3 == 0 ? ".JPEG" : (k % 3 == 1 ? ".jpg" : ".jpeg");
        std::string rel = "train/" + name + "/img_" + std::to_string(k) + ext;
        if (name == "Trouser" && k == 2) rel = "train/Trouser/more/img_2.jpeg";
        add(rel, idx[static_cast<std::size_t>(k)], big ? 80 : 28, big ? 64 : 28);
      }
      for (int k = 6; k < 8; ++k) {
        add("val/" + name + "/v_" + std::to_string(k) + ".JPEG", idx[static_cast<std::size_t>(k)],
            28, 28);
      }
    }
    // Random bytes named like a JPEG.
    std::string junk(3000, '\0');
    std::uint32_t x = 12345;
    for (char& c : junk) {
      x = x * 1664525u + 1013904223u;
      c = static_cast<char>(x >> 24);
    }
    write_bytes(dir / "train/bag/x.JPEG", junk);
    // A real JPEG cut at 60%.
    const std::string whole = fashion_jpeg(images_of(7, 9)[8], 80, 64);
    write_bytes(dir / "train/sneaker/truncated.jpg", whole.substr(0, whole.size() * 6 / 10));
    // Not JPEGs: ignored.
    write_bytes(dir / "train/Trouser/notes.txt", "not an image");
    write_bytes(dir / "train/bag/image.png", "not listed either");
  }

  void add(const std::string& rel, std::int64_t index, int width, int height) {
    write_bytes(dir / rel, fashion_jpeg(index, width, height));
    source[dir / rel] = index;
    size[dir / rel] = {width, height};
  }

  fs::path train() const { return dir / "train"; }
  fs::path val() const { return dir / "val"; }
};

const Tree& tree() {
  static const Tree t;
  return t;
}

std::uint8_t to_byte(float v) { return static_cast<std::uint8_t>(std::lround(v * 255.0f)); }

// Byte checksums of a [3, S, S] transform output with mean 0 and std 1: the plain sum and the
// sum of byte[i] * (i % 997) over the flat CHW index.
std::pair<std::int64_t, std::int64_t> checksum(const Tensor<float>& t) {
  std::int64_t sum = 0, weighted = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const std::int64_t v = to_byte(t.data()[i]);
    sum += v;
    weighted += v * (i % 997);
  }
  return {sum, weighted};
}

// The synthetic 100x60 pattern of the Pillow checks: R = (7x + 3y) mod 256, G = (x^2 + y) mod
// 256, B = 255 on a checkerboard of 5x3 cells.
data::Image pattern() {
  data::Image img;
  img.width = 100;
  img.height = 60;
  img.rgb.resize(100 * 60 * 3);
  for (int y = 0; y < 60; ++y) {
    for (int x = 0; x < 100; ++x) {
      std::uint8_t* p = img.rgb.data() + (y * 100 + x) * 3;
      p[0] = static_cast<std::uint8_t>((x * 7 + y * 3) % 256);
      p[1] = static_cast<std::uint8_t>((x * x + y) % 256);
      p[2] = static_cast<std::uint8_t>(((x / 5 + y / 3) % 2) * 255);
    }
  }
  return img;
}

constexpr std::array<float, 3> kZero = {0.0f, 0.0f, 0.0f};
constexpr std::array<float, 3> kOne = {1.0f, 1.0f, 1.0f};

bool same(const Tensor<float>& a, const Tensor<float>& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.numel()) * sizeof(float)) == 0;
}

TEST_CASE("ImageFolder numbers the sorted class folders and lists JPEGs as torchvision does",
          "[data]") {
  const Tree& t = tree();
  const data::ImageFolder train(t.train());
  CHECK(train.classes() == std::vector<std::string>{"Trouser", "bag", "sneaker"});
  CHECK(train.class_index("bag") == 1);
  CHECK_THROWS_WITH(train.class_index("Bag"), Contains("no class 'Bag'"));
  // 18 good images, the corrupt and the truncated one; no .txt or .png.
  REQUIRE(train.size() == 20);
  std::map<std::int64_t, int> per_class;
  for (std::int64_t i = 0; i < train.size(); ++i) {
    ++per_class[train.label(i)];
    CHECK(data::ImageFolder::is_jpeg_name(train.path(i)));
    CHECK(train.path(i).string().find(train.classes()[static_cast<std::size_t>(train.label(i))]) !=
          std::string::npos);
  }
  CHECK(per_class == std::map<std::int64_t, int>{{0, 6}, {1, 7}, {2, 7}});
  // Class by class; within a class folder by folder, then by name (os.walk order, sorted).
  CHECK(train.path(0) == t.train() / "Trouser/img_0.JPEG");
  CHECK(train.path(1) == t.train() / "Trouser/img_1.jpg");
  CHECK(train.path(4) == t.train() / "Trouser/img_5.jpeg");
  CHECK(train.path(5) == t.train() / "Trouser/more/img_2.jpeg");
  CHECK(train.path(6) == t.train() / "bag/img_0.JPEG");
  CHECK(train.path(12) == t.train() / "bag/x.JPEG");
  CHECK(train.path(19) == t.train() / "sneaker/truncated.jpg");
  CHECK(train.labels().size() == 20);

  const data::ImageFolder val(t.val());
  CHECK(val.classes() == train.classes());
  CHECK(val.size() == 6);
  CHECK(val.label(5) == 2);
}

TEST_CASE("ImageFolder refuses a missing root, no classes and an empty class folder", "[data]") {
  TempDir dir;
  CHECK_THROWS_WITH(data::ImageFolder(dir / "missing"), Contains("missing"));
  fs::create_directories(dir / "root");
  write_bytes(dir / "root/loose.JPEG", fashion_jpeg(0));
  CHECK_THROWS_WITH(data::ImageFolder(dir / "root"), Contains("no class folders"));
  write_bytes(dir / "root/cat/a.jpg", fashion_jpeg(0));
  fs::create_directories(dir / "root/dog");
  write_bytes(dir / "root/dog/readme.txt", "no images here");
  CHECK_THROWS_AS(data::ImageFolder(dir / "root"), Error);
  CHECK_THROWS_WITH(data::ImageFolder(dir / "root"),
                    Contains("class folder 'dog' holds no JPEG file"));
  fs::remove_all(dir / "root/dog");
  CHECK(data::ImageFolder(dir / "root").size() == 1);
}

TEST_CASE("JPEGs decode to the source pixels within JPEG tolerance; bad files are refused",
          "[data]") {
  const Tree& t = tree();
  int checked = 0;
  for (const auto& [path, index] : t.source) {
    const data::Image img = data::read_jpeg(path);
    const auto [w, h] = t.size.at(path);
    REQUIRE(img.width == w);
    REQUIRE(img.height == h);
    const data::Image src = fashion_rgb(index, w, h);
    double sum = 0;
    int worst = 0;
    for (std::size_t i = 0; i < src.rgb.size(); ++i) {
      const int d = std::abs(static_cast<int>(img.rgb[i]) - static_cast<int>(src.rgb[i]));
      sum += d;
      worst = std::max(worst, d);
    }
    INFO(path.string());
    // Quality 95, 4:4:4: 1 to 2.5 levels on average for these small, sharp-edged pictures,
    // whose edges ring by up to about 40.
    CHECK(sum / static_cast<double>(src.rgb.size()) < 3.0);
    CHECK(worst <= 40);
    ++checked;
  }
  CHECK(checked == 24);

  CHECK_THROWS_WITH(data::read_jpeg(t.train() / "bag/x.JPEG"),
                    Contains("x.JPEG") && Contains("not a readable JPEG"));
  CHECK_THROWS_WITH(data::read_jpeg(t.train() / "sneaker/truncated.jpg"),
                    Contains("truncated.jpg") && Contains("truncated JPEG"));
  CHECK_THROWS_WITH(data::read_jpeg(t.dir / "nothing.jpg"), Contains("cannot open the file"));

  data::JpegDecoder decoder;
  data::Image out;
  std::string why;
  CHECK_FALSE(decoder.decode(nullptr, 0, out, why));
  CHECK(why == "the file is empty");
}

TEST_CASE("JPEG decoding accepts extraneous bytes, converts CMYK as PIL does", "[data]") {
  // Bytes before the end marker: libjpeg warns, the image is whole, PIL reads it: accepted.
  std::string jpeg = fashion_jpeg(3);
  REQUIRE(jpeg.substr(jpeg.size() - 2) == "\xFF\xD9");
  std::string padded =
      jpeg.substr(0, jpeg.size() - 2) + std::string("\x01\x02\x03", 3) + "\xFF\xD9";
  data::JpegDecoder decoder;
  data::Image a, b;
  std::string why;
  REQUIRE(decoder.decode(reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(), a, why));
  REQUIRE(
      decoder.decode(reinterpret_cast<const unsigned char*>(padded.data()), padded.size(), b, why));
  CHECK(a.rgb == b.rgb);

  // An Adobe CMYK JPEG (stored inverted, as Photoshop writes them) of one colour.
  const std::array<int, 4> cmyk = {200, 100, 50, 180};
  std::vector<std::uint8_t> px;
  for (int i = 0; i < 16 * 16; ++i) px.insert(px.end(), cmyk.begin(), cmyk.end());
  const std::string cj = encode_jpeg(px, 16, 16, TJPF_CMYK);
  data::Image c;
  REQUIRE(decoder.decode(reinterpret_cast<const unsigned char*>(cj.data()), cj.size(), c, why));
  REQUIRE(c.width == 16);
  // PIL: R = (255 - K) - C (255 - K) / 255 with C = 255 - stored: stored C * stored K / 255.
  for (int ch = 0; ch < 3; ++ch) {
    const double want = cmyk[static_cast<std::size_t>(ch)] * cmyk[3] / 255.0;
    CHECK(std::abs(c.at(8, 8, ch) - want) <= 3.0);
  }
}

TEST_CASE("Evaluation resizes the shorter side and crops the centre, as torchvision", "[data]") {
  // Landscape 100x60: Resize(37) gives 61x37; CenterCrop(32) starts at round(2.5) = 2 (half to
  // even) and round(14.5) = 14.
  const data::EvalGeometry g = data::eval_geometry(60, 100, 37, 32);
  CHECK(g.resized_height == 37);
  CHECK(g.resized_width == 61);
  CHECK(g.crop == data::CropBox{2, 14, 32, 32});
  // Portrait, and the default 256 for 224.
  const data::EvalGeometry p = data::eval_geometry(500, 375, 256, 224);
  CHECK(p.resized_width == 256);
  CHECK(p.resized_height == 341);
  CHECK(p.crop == data::CropBox{58, 16, 224, 224});
  CHECK(data::ImageTransform::evaluation(224).eval_resize() == 256);
  CHECK(data::ImageTransform::evaluation(32).eval_resize() == 36);
  CHECK_THROWS_WITH(data::eval_geometry(60, 100, 31, 32), Contains("at least the crop size"));

  // A linear gradient: R = 2x, G = 4y. Bilinear (even antialiased) reproduces a linear ramp at
  // each output pixel's centre, so every output pixel says where in the source it came from.
  data::Image grad;
  grad.width = 100;
  grad.height = 60;
  grad.rgb.resize(100 * 60 * 3);
  for (int y = 0; y < 60; ++y) {
    for (int x = 0; x < 100; ++x) {
      std::uint8_t* q = grad.rgb.data() + (y * 100 + x) * 3;
      q[0] = static_cast<std::uint8_t>(2 * x);
      q[1] = static_cast<std::uint8_t>(4 * y);
      q[2] = 77;
    }
  }
  data::ImageTransform t = data::ImageTransform::evaluation(32);
  t.resize = 37;
  t.mean = kZero;
  t.std = kOne;
  const Tensor<float> out = data::transform_image(grad, t);
  REQUIRE(out.shape() == Shape{3, 32, 32});
  const double sx = 100.0 / 61.0, sy = 60.0 / 37.0;
  for (int oy = 0; oy < 32; ++oy) {
    for (int ox = 0; ox < 32; ++ox) {
      const double cx = (ox + 14 + 0.5) * sx - 0.5;  // source pixel coordinates of the centre
      const double cy = (oy + 2 + 0.5) * sy - 0.5;
      const float* o = out.data();
      INFO("output pixel (" << oy << ", " << ox << ")");
      CHECK(std::abs(o[oy * 32 + ox] * 255.0 - 2 * cx) <= 1.0);
      CHECK(std::abs(o[1024 + oy * 32 + ox] * 255.0 - 4 * cy) <= 1.0);
      CHECK(to_byte(o[2048 + oy * 32 + ox]) == 77);
    }
  }
}

TEST_CASE("Resampling reproduces Pillow's bilinear resize to the bit", "[data]") {
  // Checksums computed once with Pillow 13.0 and numpy:
  //   im = Image.fromarray(pattern)   # the 100x60 pattern of pattern()
  //   im.resize((61, 37), BILINEAR).crop((14, 2, 46, 34))
  //   im.crop((7, 5, 27, 55)).resize((24, 24), BILINEAR).transpose(FLIP_LEFT_RIGHT)
  //   im.crop((10, 3, 90, 23)).resize((16, 16), BILINEAR)
  // and the sums of the CHW bytes b[i] and of b[i] * (i % 997). The Pillow 12 figure of the
  // tall crop (horizontal pass first) comes from a Python model of Pillow's Resample.c that
  // matches Pillow 13 wherever its passes run in that order.
  const data::Image img = pattern();
  Tensor<float> out = empty<float>(Shape{3, 32, 32});
  data::resize_center_crop_into(img, 37, 32, kZero, kOne, out.data());
  CHECK(checksum(out) == std::pair<std::int64_t, std::int64_t>{378917, 182936465});

  Tensor<float> tall = empty<float>(Shape{3, 24, 24});
  data::resized_crop_into(img, {5, 7, 50, 20}, 24, true, kZero, kOne, tall.data());
  CHECK(checksum(tall) == std::pair<std::int64_t, std::int64_t>{235058, 100357447});
  data::resized_crop_into(img, {5, 7, 50, 20}, 24, true, kZero, kOne, tall.data(),
                          data::PassOrder::horizontal_first);
  CHECK(checksum(tall) == std::pair<std::int64_t, std::int64_t>{235062, 100360493});

  Tensor<float> wide = empty<float>(Shape{3, 16, 16});
  data::resized_crop_into(img, {3, 10, 20, 80}, 16, false, kZero, kOne, wide.data());
  CHECK(checksum(wide) == std::pair<std::int64_t, std::int64_t>{97227, 37325965});

  // A crop of the output size is copied as it is.
  Tensor<float> same_size = empty<float>(Shape{3, 8, 8});
  data::resized_crop_into(img, {10, 20, 8, 8}, 8, false, kZero, kOne, same_size.data());
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 8; ++x) {
      for (int c = 0; c < 3; ++c) {
        CHECK(to_byte(same_size.data()[(c * 8 + y) * 8 + x]) == img.at(10 + y, 20 + x, c));
      }
    }
  }
  CHECK_THROWS_WITH(
      data::resized_crop_into(img, {50, 0, 20, 20}, 8, false, kZero, kOne, same_size.data()),
      Contains("not inside the 100x60 image"));
}

TEST_CASE("RandomResizedCrop and the flip are drawn per (seed, epoch, index)", "[data]") {
  const data::ImageTransform t = data::ImageTransform::training(32);
  // Determinism, and independence of epoch, seed and index.
  int epoch_differs = 0, seed_differs = 0;
  for (std::int64_t i = 0; i < 50; ++i) {
    const data::Augmentation a = data::draw_augmentation(64, 80, t, 7, 3, i);
    const data::Augmentation b = data::draw_augmentation(64, 80, t, 7, 3, i);
    CHECK(a.crop == b.crop);
    CHECK(a.flip == b.flip);
    epoch_differs += data::draw_augmentation(64, 80, t, 7, 4, i).crop != a.crop;
    seed_differs += data::draw_augmentation(64, 80, t, 8, 3, i).crop != a.crop;
  }
  CHECK(epoch_differs >= 45);
  CHECK(seed_differs >= 45);

  // The crops obey scale and ratio (up to the rounding of w and h) and lie inside the image;
  // half the samples are flipped.
  int flips = 0;
  for (std::int64_t i = 0; i < 2000; ++i) {
    const data::Augmentation a = data::draw_augmentation(300, 200, t, 1, 0, i);
    const data::CropBox& c = a.crop;
    flips += a.flip;
    REQUIRE(c.top >= 0);
    REQUIRE(c.left >= 0);
    REQUIRE(c.top + c.height <= 300);
    REQUIRE(c.left + c.width <= 200);
    const double area = static_cast<double>(c.width) * c.height / (300.0 * 200.0);
    CHECK(area >= 0.08 * 0.97);
    CHECK(area <= 1.0);
    const double ratio = static_cast<double>(c.width) / c.height;
    CHECK(ratio >= 0.75 * 0.97);
    CHECK(ratio <= 4.0 / 3.0 * 1.03);
  }
  CHECK(flips > 900);
  CHECK(flips < 1100);

  // No attempt fits a 1000x10 strip: torchvision's fallback, the centre crop clamped to the
  // ratio range (h = 10, w = round(10 * 4/3) = 13), and its transpose.
  data::AugmentRng wide(5, 0, 0);
  CHECK(data::random_resized_crop_box(10, 1000, wide) == data::CropBox{0, 493, 10, 13});
  data::AugmentRng tall(5, 0, 0);
  CHECK(data::random_resized_crop_box(1000, 10, tall) == data::CropBox{493, 0, 13, 10});

  // The whole training transform is a pure function of (image, seed, epoch, index).
  const data::Image img = fashion_rgb(10, 80, 64);
  CHECK(same(data::transform_image(img, t, 7, 2, 5), data::transform_image(img, t, 7, 2, 5)));
  CHECK_FALSE(same(data::transform_image(img, t, 7, 2, 5), data::transform_image(img, t, 7, 3, 5)));
}

TEST_CASE("The flip mirrors the resized crop; normalisation is torchvision's", "[data]") {
  const data::Image img = fashion_rgb(20, 80, 64);
  data::ImageTransform t = data::ImageTransform::training(24);
  // Find a flipped and an unflipped sample.
  std::int64_t flipped = -1, plain = -1;
  for (std::int64_t i = 0; i < 100 && (flipped < 0 || plain < 0); ++i) {
    (data::draw_augmentation(64, 80, t, 3, 0, i).flip ? flipped : plain) = i;
  }
  REQUIRE(flipped >= 0);
  REQUIRE(plain >= 0);
  for (const std::int64_t i : {flipped, plain}) {
    const data::Augmentation a = data::draw_augmentation(64, 80, t, 3, 0, i);
    const Tensor<float> got = data::transform_image(img, t, 3, 0, i);
    Tensor<float> unflipped = empty<float>(Shape{3, 24, 24});
    data::resized_crop_into(img, a.crop, 24, false, t.mean, t.std, unflipped.data());
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 24; ++y) {
        for (int x = 0; x < 24; ++x) {
          const int sx = a.flip ? 23 - x : x;
          REQUIRE(got.data()[(c * 24 + y) * 24 + x] == unflipped.data()[(c * 24 + y) * 24 + sx]);
        }
      }
    }
  }

  // One colour: every output value is (v / 255 - mean) / std with ImageNet's figures, computed
  // in float as ToTensor and Normalize compute it.
  data::Image solid;
  solid.width = 50;
  solid.height = 40;
  for (int i = 0; i < 50 * 40; ++i) solid.rgb.insert(solid.rgb.end(), {255, 0, 128});
  const Tensor<float> n = data::transform_image(solid, data::ImageTransform::evaluation(16));
  const std::array<int, 3> v = {255, 0, 128};
  for (int c = 0; c < 3; ++c) {
    const auto cc = static_cast<std::size_t>(c);
    const float want =
        (static_cast<float>(v[cc]) / 255.0f - data::kImageNetMean[cc]) / data::kImageNetStd[cc];
    for (int k = 0; k < 256; ++k) REQUIRE(n.data()[c * 256 + k] == want);
  }
  CHECK(n.data()[0] == Approx((1.0 - 0.485) / 0.229));
}

TEST_CASE("ImageFolderLoader skips and counts bad files, replacing them with the next good one",
          "[data]") {
  const Tree& t = tree();
  data::ImageFolder folder(t.train());
  const std::int64_t bad_x = 12, bad_trunc = 19;  // bag/x.JPEG, sneaker/truncated.jpg
  REQUIRE(folder.path(bad_x).filename() == "x.JPEG");
  REQUIRE(folder.path(bad_trunc).filename() == "truncated.jpg");

  data::LoaderOptions opts;
  opts.transform = data::ImageTransform::evaluation(24);
  opts.workers = 0;
  data::ImageFolderLoader loader(folder, data::Batches(20, 8, {.shuffle = false}), opts);
  CHECK(loader.skipped() == 0);
  std::vector<std::int64_t> samples;
  std::vector<std::int64_t> sizes;
  while (loader.has_next()) {
    const data::ImageBatch b = loader.next();
    sizes.push_back(b.images.size(0));
    CHECK(b.images.shape() == Shape{b.images.size(0), 3, 24, 24});
    for (std::int64_t k = 0; k < b.labels.size(0); ++k) {
      CHECK(b.labels.data()[k] == folder.label(b.samples[static_cast<std::size_t>(k)]));
    }
    samples.insert(samples.end(), b.samples.begin(), b.samples.end());
  }
  CHECK(sizes == std::vector<std::int64_t>{8, 8, 4});
  // In order; x.JPEG's row holds sample 13, the truncated file's (the last) wraps to sample 0.
  std::vector<std::int64_t> want(20);
  for (std::int64_t i = 0; i < 20; ++i) want[static_cast<std::size_t>(i)] = i;
  want[bad_x] = 13;
  want[bad_trunc] = 0;
  CHECK(samples == want);
  CHECK(loader.skipped() == 2);
  const std::vector<std::string> files = loader.skipped_files();
  REQUIRE(files.size() == 2);
  CHECK_THAT(files[0], Contains("x.JPEG") && Contains("not a readable JPEG"));
  CHECK_THAT(files[1], Contains("truncated.jpg") && Contains("truncated JPEG"));
  CHECK_THROWS_WITH(loader.next(), Contains("no batches left"));

  // A second epoch counts nothing again: bad files are remembered.
  loader.next_epoch();
  while (loader.has_next()) loader.next();
  CHECK(loader.skipped() == 2);

  // The replacement's image is that sample's own.
  loader.restore(0, 1);
  const data::ImageBatch b = loader.next();
  REQUIRE(b.samples[4] == 13);
  CHECK(std::memcmp(b.images.data() + 4 * 3 * 24 * 24, b.images.data() + 5 * 3 * 24 * 24,
                    3 * 24 * 24 * sizeof(float)) == 0);
}

TEST_CASE("Prefetching on worker threads serves the batches synchronous loading serves", "[data]") {
  const data::ImageFolder folder(tree().train());
  auto run = [&](int workers, int prefetch) {
    data::LoaderOptions opts;
    opts.transform = data::ImageTransform::training(32);
    opts.workers = workers;
    opts.prefetch = prefetch;
    opts.seed = 11;
    data::ImageFolderLoader loader(folder, data::Batches(20, 6, {.seed = 5}), opts);
    CHECK(loader.workers() == workers);
    std::vector<data::ImageBatch> out;
    for (; loader.epoch() < 2; loader.next_epoch()) {
      while (loader.has_next()) out.push_back(loader.next());
    }
    CHECK(loader.skipped() == 2);
    // Resuming mid-epoch serves the same batch again.
    loader.restore(1, 2);
    out.push_back(loader.next());
    return out;
  };
  const std::vector<data::ImageBatch> sync = run(0, 0);
  REQUIRE(sync.size() == 9);
  for (const auto& [workers, prefetch] : std::vector<std::pair<int, int>>{{1, 0}, {2, 3}, {3, 8}}) {
    INFO("workers " << workers << ", prefetch " << prefetch);
    const std::vector<data::ImageBatch> async = run(workers, prefetch);
    REQUIRE(async.size() == sync.size());
    for (std::size_t i = 0; i < sync.size(); ++i) {
      CHECK(async[i].epoch == sync[i].epoch);
      CHECK(async[i].position == sync[i].position);
      CHECK(async[i].samples == sync[i].samples);
      CHECK(async[i].labels.to_vector() == sync[i].labels.to_vector());
      CHECK(same(async[i].images, sync[i].images));
    }
  }
  CHECK(sync[8].samples == sync[6].samples);
  CHECK(same(sync[8].images, sync[6].images));
  // Epochs differ: another order and other crops.
  CHECK(sync[0].samples != sync[4].samples);
}

TEST_CASE("With pin_memory the loader serves the same batches in page-locked memory", "[data]") {
  const data::ImageFolder folder(tree().train());
  data::LoaderOptions opts;
  opts.transform = data::ImageTransform::training(32);
  opts.workers = 2;
  opts.seed = 11;
  opts.pin_memory = true;
  if (!memory::pinned_memory_available()) {
    CHECK_THROWS_WITH(data::ImageFolderLoader(folder, data::Batches(20, 6, {.seed = 5}), opts),
                      Contains("pin_memory needs a CUDA device"));
    return;
  }
  data::ImageFolderLoader pinned(folder, data::Batches(20, 6, {.seed = 5}), opts);
  opts.pin_memory = false;
  data::ImageFolderLoader plain(folder, data::Batches(20, 6, {.seed = 5}), opts);
  while (plain.has_next()) {
    const data::ImageBatch a = pinned.next(), b = plain.next();
    CHECK(a.images.is_pinned());
    CHECK(a.labels.is_pinned());
    CHECK_FALSE(b.images.is_pinned());
    CHECK(a.labels.to_vector() == b.labels.to_vector());
    CHECK(same(a.images, b.images));
  }
}

TEST_CASE("ImageFolderLoader shuts down promptly at any point of an epoch", "[data]") {
  const data::ImageFolder folder(tree().train());
  data::LoaderOptions opts;
  opts.transform = data::ImageTransform::training(64);
  opts.workers = 3;
  opts.prefetch = 4;
  const auto start = std::chrono::steady_clock::now();
  { data::ImageFolderLoader untouched(folder, data::Batches(20, 2), opts); }
  {
    data::ImageFolderLoader loader(folder, data::Batches(20, 2), opts);
    const data::ImageBatch b = loader.next();
    CHECK(b.images.size(0) == 2);
    // The consumer stops here, with batches queued and in flight.
  }
  {
    data::ImageFolderLoader loader(folder, data::Batches(20, 2), opts);
    while (loader.has_next()) loader.next();
    loader.next_epoch();
    loader.next();
    loader.restore(0, 7);  // the prefetched batches are now the wrong ones
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 30.0);
}

TEST_CASE("ImageFolderLoader refuses a mismatched Batches and a folder of unreadable files",
          "[data]") {
  const data::ImageFolder folder(tree().train());
  CHECK_THROWS_WITH(data::ImageFolderLoader(folder, data::Batches(19, 4)),
                    Contains("cover 19 samples") && Contains("holds 20"));
  data::LoaderOptions bad_opts;
  bad_opts.transform.size = 0;
  CHECK_THROWS_WITH(data::ImageFolderLoader(folder, data::Batches(20, 4), bad_opts),
                    Contains("size must be positive"));

  TempDir dir;
  write_bytes(dir / "a/1.jpg", "junk");
  write_bytes(dir / "b/2.jpg", "more junk");
  const data::ImageFolder junk(dir.path);
  for (const int workers : {0, 2}) {
    data::LoaderOptions opts;
    opts.workers = workers;
    data::ImageFolderLoader loader(junk, data::Batches(2, 2), opts);
    CHECK_THROWS_WITH(loader.next(),
                      Contains("none of the 2 images") && Contains(".jpg: not a readable JPEG"));
    CHECK(loader.skipped() == 2);
  }
}

}  // namespace test_data_image_folder
}  // namespace
