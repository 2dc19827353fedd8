// Folders of JPEG images in ImageNet's layout, the transforms ResNet-50 trains and evaluates
// with, and a loader that decodes batches on worker threads ahead of the training loop. See
// docs/data.md.
//
//   DIR/train/<class>/*.JPEG        data::ImageFolder train(DIR / "train");
//   DIR/val/<class>/*.JPEG          data::ImageFolder val(DIR / "val");
//
// Classes are the sub-folders sorted by name and numbered from 0, as torchvision's ImageFolder
// numbers them. The transforms reproduce torchvision's on PIL images (then ToTensor, Normalize):
//   training    RandomResizedCrop(size), RandomHorizontalFlip()
//   evaluation  Resize(size * 256 / 224), CenterCrop(size)
// with PIL's bilinear resampling emulated to the bit (its 8-bit fixed-point arithmetic, an
// antialiasing triangle filter when shrinking) and the random crop and flip drawn from ember's
// Philox keyed by (seed, epoch, sample index), so every run, thread count and prefetch depth
// gives the same batches.
//
// Needs libjpeg-turbo's TurboJPEG API (Debian: libturbojpeg0-dev; link -lturbojpeg). Not included
// by <ember/ember.hpp>: include <ember/data/image_folder.hpp>.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/philox.hpp"
#include "../tensor/factories.hpp"
#include "../tensor/tensor.hpp"
#include "batches.hpp"

namespace ember::data {

/// ImageNet's per-channel pixel mean and standard deviation on the [0, 1] scale (torchvision's).
inline constexpr std::array<float, 3> kImageNetMean = {0.485f, 0.456f, 0.406f};
inline constexpr std::array<float, 3> kImageNetStd = {0.229f, 0.224f, 0.225f};

/// Images with more pixels than this (268 million) are refused as corrupt: a forged header must
/// not make a worker allocate gigabytes. Photographs, ImageNet's included, stay far below.
inline constexpr std::int64_t kMaxImagePixels = std::int64_t{1} << 28;

/// An 8-bit RGB image: rows top to bottom, the three channels of a pixel together (HWC).
struct Image {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  // height * width * 3 bytes

  /// Channel c of the pixel in row y, column x.
  std::uint8_t at(int y, int x, int c) const {
    const auto pixel =
        static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x);
    return rgb[pixel * 3 + static_cast<std::size_t>(c)];
  }
};

// ---- Reading and decoding --------------------------------------------------------------------

namespace detail {

inline bool contains_ci(std::string_view text, std::string_view word) {
  auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
  for (std::size_t i = 0; i + word.size() <= text.size(); ++i) {
    std::size_t j = 0;
    while (j < word.size() && lower(text[i + j]) == lower(word[j])) ++j;
    if (j == word.size()) return true;
  }
  return false;
}

// PIL's MULDIV255: a * b / 255, rounded, for a, b in [0, 255].
inline int muldiv255(int a, int b) {
  const int t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

}  // namespace detail

/// Reads the whole file at `path` into `out`. On failure returns false and says why in `why`
/// (missing, unreadable, not a regular file), never throws for a bad file.
inline bool read_file_bytes(const std::filesystem::path& path, std::vector<unsigned char>& out,
                            std::string& why) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    why = "cannot open the file: " + std::system_category().message(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    why = "not a regular file";
    return false;
  }
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t got = ::read(fd, out.data() + done, out.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      why = got == 0 ? std::string("the file shrank while it was read")
                     : "cannot read the file: " + std::system_category().message(errno);
      ::close(fd);
      return false;
    }
    done += static_cast<std::size_t>(got);
  }
  ::close(fd);
  return true;
}

/// A TurboJPEG decompressor. One per thread: a handle must not be used by two threads at once.
class JpegDecoder {
 public:
  JpegDecoder() : handle_(tjInitDecompress()) {
    EMBER_CHECK(handle_ != nullptr,
                "ember: JpegDecoder: tjInitDecompress failed: ", tjGetErrorStr2(nullptr));
  }
  ~JpegDecoder() {
    if (handle_ != nullptr) tjDestroy(handle_);
  }
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;
  JpegDecoder(JpegDecoder&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  JpegDecoder& operator=(JpegDecoder&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }

  /// Decodes the JPEG in data[0, size) into `out` as RGB. On failure returns false and says why
  /// in `why`; never throws for bad data. Refused: anything libjpeg cannot parse, images of more
  /// than kMaxImagePixels, and truncated files (libjpeg's "Premature end of JPEG file", which it
  /// only warns about while filling the rest grey: PIL refuses them too). libjpeg's other
  /// warnings, such as extraneous bytes before a marker (a few ImageNet files have them), leave
  /// the image whole and are ignored, as PIL ignores them. Grey JPEGs become R = G = B; CMYK and
  /// YCCK ones (22 in ImageNet's training set) are converted as PIL converts Adobe CMYK.
  bool decode(const unsigned char* data, std::size_t size, Image& out, std::string& why) {
    if (size == 0) {
      why = "the file is empty";
      return false;
    }
    int width = 0, height = 0, subsamp = 0, colorspace = 0;
    if (tjDecompressHeader3(handle_, data, static_cast<unsigned long>(size), &width, &height,
                            &subsamp, &colorspace) != 0) {
      why = std::string("not a readable JPEG (") + tjGetErrorStr2(handle_) + ")";
      return false;
    }
    if (width <= 0 || height <= 0 || static_cast<std::int64_t>(width) * height > kMaxImagePixels) {
      why = ::ember::detail::concat("the JPEG header claims ", width, "x", height,
                                    " pixels (at most ", kMaxImagePixels, " accepted)");
      return false;
    }
    const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
    const std::size_t pixels = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
    std::vector<unsigned char> cmyk_buf;
    out.width = width;
    out.height = height;
    out.rgb.resize(pixels * 3);
    unsigned char* dst = out.rgb.data();
    if (cmyk) {
      cmyk_buf.resize(pixels * 4);
      dst = cmyk_buf.data();
    }
    if (tjDecompress2(handle_, data, static_cast<unsigned long>(size), dst, width, 0, height,
                      cmyk ? TJPF_CMYK : TJPF_RGB, 0) != 0) {
      const std::string msg = tjGetErrorStr2(handle_);
      if (tjGetErrorCode(handle_) != TJERR_WARNING || detail::contains_ci(msg, "premature end")) {
        why = tjGetErrorCode(handle_) == TJERR_WARNING ? "truncated JPEG (" + msg + ")"
                                                       : "corrupt JPEG (" + msg + ")";
        return false;
      }
    }
    if (cmyk) {
      // libjpeg hands Adobe's inverted CMYK through as stored; PIL reads it as "CMYK;I" and
      // converts with R = (255 - K) - C (255 - K) / 255, C being the un-inverted value.
      const unsigned char* src = cmyk_buf.data();
      for (std::size_t i = 0; i < pixels; ++i, src += 4) {
        const int nk = src[3];
        for (int c = 0; c < 3; ++c) {
          const int v = nk - detail::muldiv255(255 - src[c], nk);
          out.rgb[i * 3 + static_cast<std::size_t>(c)] =
              static_cast<std::uint8_t>(std::clamp(v, 0, 255));
        }
      }
    }
    return true;
  }

 private:
  tjhandle handle_ = nullptr;
};

/// Reads and decodes the JPEG file at `path` as RGB. Throws ember::Error naming the file and
/// the cause when it cannot be read or decoded.
inline Image read_jpeg(const std::filesystem::path& path) {
  std::vector<unsigned char> bytes;
  std::string why;
  Image image;
  JpegDecoder decoder;
  if (!read_file_bytes(path, bytes, why) ||
      !decoder.decode(bytes.data(), bytes.size(), image, why)) {
    fail("ember: read_jpeg: '", path.string(), "': ", why);
  }
  return image;
}

// ---- Random draws and crop geometry -----------------------------------------------------------

/// The random numbers of one sample's augmentation: a pure function of (seed, epoch, index).
/// Draw k uses 64 bits: words 2(k % 2) and 2(k % 2) + 1 of the Philox4x32-10 block keyed by
/// `seed` at counter (lo = index, hi = 3 * 2^62 + epoch * 2^8 + k / 2). The top bits 11 keep
/// these blocks apart from shuffles (10) and from ember's other draws (00).
class AugmentRng {
 public:
  static constexpr std::uint64_t kCounterTag = std::uint64_t{3} << 62;

  AugmentRng(std::uint64_t seed, std::int64_t epoch, std::int64_t index)
      : seed_(seed), index_(static_cast<std::uint64_t>(index)) {
    EMBER_CHECK(epoch >= 0 && epoch < (std::int64_t{1} << 54), "ember: AugmentRng: epoch ", epoch,
                " is outside [0, 2^54)");
    EMBER_CHECK(index >= 0, "ember: AugmentRng: negative sample index ", index);
    hi_ = kCounterTag | (static_cast<std::uint64_t>(epoch) << 8);
  }

  /// The next 64 random bits.
  std::uint64_t next_u64() {
    if (word_ == 4) {
      // 256 blocks hold 512 draws; RandomResizedCrop and the flip take at most 41.
      EMBER_CHECK(block_ < 256, "ember: AugmentRng: more than 512 draws for one sample");
      current_ = philox4x32(seed_, index_, hi_ | block_++);
      word_ = 0;
    }
    const std::uint64_t r = (std::uint64_t{current_.v[word_ + 1]} << 32) | current_.v[word_];
    word_ += 2;
    return r;
  }
  /// Uniform in [0, 1): the top 53 bits of a draw, as a double.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1p-53; }
  /// Uniform in [a, b): a + (b - a) * uniform(), as torch's uniform_(a, b).
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
  /// Uniform integer in [0, n), n > 0: floor(r * n / 2^64) (bias below n / 2^64).
  std::int64_t randint(std::int64_t n) {
    return static_cast<std::int64_t>(detail::mulhi64(next_u64(), static_cast<std::uint64_t>(n)));
  }

 private:
  std::uint64_t seed_;
  std::uint64_t index_;
  std::uint64_t hi_ = 0;
  std::uint64_t block_ = 0;
  PhiloxBlock current_{};
  unsigned word_ = 4;
};

/// A rectangle of an image: rows [top, top + height), columns [left, left + width).
struct CropBox {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
  friend bool operator==(const CropBox&, const CropBox&) = default;
};

/// The crop of torchvision's RandomResizedCrop.get_params for a height x width image: up to 10
/// attempts at an area fraction uniform in `scale` and an aspect ratio (w / h) log-uniform in
/// `ratio`, w = round(sqrt(area * ratio)), h = round(sqrt(area / ratio)) (round half to even, as
/// Python's round); the first that fits is placed uniformly. Then the fallback: the centre crop
/// of the whole image clamped to the ratio range. Draws from `rng` in torchvision's order.
inline CropBox random_resized_crop_box(int height, int width, AugmentRng& rng,
                                       std::array<double, 2> scale = {0.08, 1.0},
                                       std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0}) {
  EMBER_CHECK(height > 0 && width > 0, "ember: random_resized_crop_box: empty image ", width, "x",
              height);
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_lo = std::log(ratio[0]);
  const double log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.uniform(scale[0], scale[1]);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    // std::nearbyint rounds half to even in the default rounding mode, as Python's round.
    const double w = std::nearbyint(std::sqrt(target_area * aspect));
    const double h = std::nearbyint(std::sqrt(target_area / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const auto hi = static_cast<int>(h);
      const auto wi = static_cast<int>(w);
      const auto top = static_cast<int>(rng.randint(height - hi + 1));
      const auto left = static_cast<int>(rng.randint(width - wi + 1));
      return {top, left, hi, wi};
    }
  }
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int w = width, h = height;
  if (in_ratio < std::min(ratio[0], ratio[1])) {
    h = static_cast<int>(std::nearbyint(w / std::min(ratio[0], ratio[1])));
  } else if (in_ratio > std::max(ratio[0], ratio[1])) {
    w = static_cast<int>(std::nearbyint(h * std::max(ratio[0], ratio[1])));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

/// Where evaluation's Resize(resize) + CenterCrop(size) lands on a height x width image: the
/// resized image's extent (shorter side `resize`, longer side floor(resize * long / short), as
/// torchvision computes it) and the crop in its coordinates (top = round((H' - size) / 2), half
/// to even, likewise left).
struct EvalGeometry {
  int resized_height = 0;
  int resized_width = 0;
  CropBox crop;
};

inline EvalGeometry eval_geometry(int height, int width, int resize, int size) {
  EMBER_CHECK(height > 0 && width > 0, "ember: eval_geometry: empty image ", width, "x", height);
  EMBER_CHECK(size > 0 && resize >= size, "ember: eval_geometry: the resize (", resize,
              ") must be at least the crop size (", size, "), which must be positive");
  EvalGeometry g;
  const std::int64_t r = resize;
  if (width <= height) {
    g.resized_width = resize;
    g.resized_height = static_cast<int>(r * height / width);
  } else {
    g.resized_height = resize;
    g.resized_width = static_cast<int>(r * width / height);
  }
  g.crop.height = size;
  g.crop.width = size;
  g.crop.top = static_cast<int>(std::nearbyint((g.resized_height - size) / 2.0));
  g.crop.left = static_cast<int>(std::nearbyint((g.resized_width - size) / 2.0));
  return g;
}

// ---- Resampling -------------------------------------------------------------------------------

/// Which of PIL's two resampling passes runs first. Pillow up to 12 always resamples rows (the
/// horizontal pass) first; Pillow 13 (python-pillow/Pillow#9549) runs the vertical pass first
/// when the height shrinks much more than the width: exactly when H' < H and H - H' > 2 (W - W'),
/// a rule found by matching Pillow 13.0's output over hundreds of random sizes. The 8-bit
/// rounding between the passes makes the two orders differ by 1 in a few pixels.
enum class PassOrder {
  pillow13,          // Pillow >= 13
  horizontal_first,  // Pillow <= 12
};

namespace detail {

// PIL's 8-bit resampling (libImaging/Resample.c): coefficients computed in double, normalised,
// then turned into 22-bit fixed point; each pass sums in 32-bit integers from 2^21 (rounding) and
// clips to [0, 255]. Bilinear is the triangle filter of support 1, widened by the scale factor
// when shrinking (antialiasing).
inline constexpr int kResamplePrecision = 32 - 8 - 2;

struct Taps {
  int ksize = 0;
  std::vector<int> first;       // first source pixel of output i
  std::vector<int> count;       // number of source pixels of output i
  std::vector<std::int32_t> k;  // count[i] coefficients at k[i * ksize]
};

// The taps of outputs [out_first, out_first + out_count) of resizing `in_size` pixels to
// `out_size` (PIL's precompute_coeffs with the box [0, in_size), then normalize_coeffs_8bpc).
inline Taps bilinear_taps(int in_size, int out_size, int out_first, int out_count) {
  Taps t;
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<std::size_t>(out_count));
  t.count.resize(static_cast<std::size_t>(out_count));
  t.k.assign(static_cast<std::size_t>(out_count) * static_cast<std::size_t>(t.ksize), 0);
  std::vector<double> w(static_cast<std::size_t>(t.ksize));
  for (int i = 0; i < out_count; ++i) {
    const double center = (out_first + i + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    // (int) truncates toward zero, as PIL's cast does.
    int xmin = static_cast<int>(center - support + 0.5);
    xmin = std::max(xmin, 0);
    int xmax = static_cast<int>(center + support + 0.5);
    xmax = std::min(xmax, in_size) - xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      double d = (x + xmin - center + 0.5) * ss;
      d = d < 0.0 ? -d : d;
      const double v = d < 1.0 ? 1.0 - d : 0.0;
      w[static_cast<std::size_t>(x)] = v;
      ww += v;
    }
    std::int32_t* k = t.k.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(t.ksize);
    for (int x = 0; x < xmax; ++x) {
      double v = w[static_cast<std::size_t>(x)];
      if (ww != 0.0) v /= ww;
      k[x] = v < 0 ? static_cast<std::int32_t>(-0.5 + v * (1 << kResamplePrecision))
                   : static_cast<std::int32_t>(0.5 + v * (1 << kResamplePrecision));
    }
    t.first[static_cast<std::size_t>(i)] = xmin;
    t.count[static_cast<std::size_t>(i)] = std::max(xmax, 0);
  }
  return t;
}

inline std::uint8_t clip8(std::int32_t v) {
  if (v >= (1 << kResamplePrecision << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<std::uint8_t>(v >> kResamplePrecision);
}

inline bool vertical_pass_first(PassOrder order, int h, int w, int out_h, int out_w) {
  return order == PassOrder::pillow13 && out_h < h && (h - out_h) > 2 * (w - out_w);
}

// One 8-bit pass over three interleaved channels: dst = clip8(2^21 + sum_j src[first_i + j] *
// k_i[j]), where src[x] is at src + (x - origin) * step.
inline void resample_line(const std::uint8_t* src, std::size_t step, const Taps& t, int i,
                          int origin, std::uint8_t* dst) {
  const std::int32_t* k =
      t.k.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(t.ksize);
  const int n = t.count[static_cast<std::size_t>(i)];
  const std::uint8_t* p =
      src + static_cast<std::size_t>(t.first[static_cast<std::size_t>(i)] - origin) * step;
  std::int32_t s0 = 1 << (kResamplePrecision - 1), s1 = s0, s2 = s0;
  for (int j = 0; j < n; ++j, p += step) {
    s0 += p[0] * k[j];
    s1 += p[1] * k[j];
    s2 += p[2] * k[j];
  }
  dst[0] = clip8(s0);
  dst[1] = clip8(s1);
  dst[2] = clip8(s2);
}

// The source range [first, last) that outputs of `t` read.
inline std::pair<int, int> taps_span(const Taps& t) {
  int first = std::numeric_limits<int>::max(), last = 0;
  for (std::size_t i = 0; i < t.first.size(); ++i) {
    if (t.count[i] == 0) continue;
    first = std::min(first, t.first[i]);
    last = std::max(last, t.first[i] + t.count[i]);
  }
  return first < last ? std::pair{first, last} : std::pair{0, 0};
}

// The window [win_top, +size) x [win_left, +size) of the sub-image [y0, y0 + h) x [x0, x0 + w)
// of `img` resized to out_h x out_w with PIL's bilinear filter (passes in PIL's `order`),
// mirrored left-right when `flip`, written as float CHW planes through `lut` (per channel, 256
// entries: the normalised value of each byte). Only the window's output pixels and the
// intermediate pixels they read are computed; each equals PIL's.
inline void resample_window(const Image& img, int y0, int x0, int h, int w, int out_h, int out_w,
                            int win_top, int win_left, int size, bool flip, PassOrder order,
                            const std::array<std::array<float, 256>, 3>& lut, float* out) {
  const Taps th = bilinear_taps(w, out_w, win_left, size);
  const Taps tv = bilinear_taps(h, out_h, win_top, size);
  const auto sz = static_cast<std::size_t>(size);
  const std::size_t row_bytes = static_cast<std::size_t>(img.width) * 3;
  const std::uint8_t* base =
      img.rgb.data() + static_cast<std::size_t>(y0) * row_bytes + static_cast<std::size_t>(x0) * 3;
  std::vector<std::uint8_t> res(sz * sz * 3);  // the window, HWC
  if (!vertical_pass_first(order, h, w, out_h, out_w)) {
    // Rows [r0, r1) of the sub-image, resampled horizontally: tmp is (r1 - r0) x size.
    const auto [r0, r1] = taps_span(tv);
    std::vector<std::uint8_t> tmp(static_cast<std::size_t>(r1 - r0) * sz * 3);
    for (int r = r0; r < r1; ++r) {
      for (int ox = 0; ox < size; ++ox) {
        resample_line(
            base + static_cast<std::size_t>(r) * row_bytes, 3, th, ox, 0,
            tmp.data() +
                (static_cast<std::size_t>(r - r0) * sz + static_cast<std::size_t>(ox)) * 3);
      }
    }
    for (int oy = 0; oy < size; ++oy) {
      for (int ox = 0; ox < size; ++ox) {
        resample_line(
            tmp.data() + static_cast<std::size_t>(ox) * 3, sz * 3, tv, oy, r0,
            res.data() + (static_cast<std::size_t>(oy) * sz + static_cast<std::size_t>(ox)) * 3);
      }
    }
  } else {
    // Columns [c0, c1) of the sub-image, resampled vertically: tmp is size x (c1 - c0).
    const auto [c0, c1] = taps_span(th);
    const auto cols = static_cast<std::size_t>(c1 - c0);
    std::vector<std::uint8_t> tmp(sz * cols * 3);
    for (int oy = 0; oy < size; ++oy) {
      for (int c = c0; c < c1; ++c) {
        resample_line(
            base + static_cast<std::size_t>(c) * 3, row_bytes, tv, oy, 0,
            tmp.data() +
                (static_cast<std::size_t>(oy) * cols + static_cast<std::size_t>(c - c0)) * 3);
      }
    }
    for (int oy = 0; oy < size; ++oy) {
      const std::uint8_t* row = tmp.data() + static_cast<std::size_t>(oy) * cols * 3;
      for (int ox = 0; ox < size; ++ox) {
        resample_line(
            row, 3, th, ox, c0,
            res.data() + (static_cast<std::size_t>(oy) * sz + static_cast<std::size_t>(ox)) * 3);
      }
    }
  }
  // Normalisation, the flip and HWC -> CHW.
  const std::size_t plane = sz * sz;
  for (std::size_t oy = 0; oy < sz; ++oy) {
    for (std::size_t ox = 0; ox < sz; ++ox) {
      const std::uint8_t* p = res.data() + (oy * sz + ox) * 3;
      const std::size_t at = oy * sz + (flip ? sz - 1 - ox : ox);
      for (std::size_t c = 0; c < 3; ++c) out[c * plane + at] = lut[c][p[c]];
    }
  }
}

// (byte / 255 - mean[c]) / std[c] in float for every byte: torchvision's ToTensor (a float32
// division by 255) then Normalize (float32 subtract, then divide).
inline std::array<std::array<float, 256>, 3> normalize_lut(const std::array<float, 3>& mean,
                                                           const std::array<float, 3>& std) {
  std::array<std::array<float, 256>, 3> lut{};
  for (std::size_t c = 0; c < 3; ++c) {
    EMBER_CHECK(std[c] > 0.0f, "ember: image transform: std[", c, "] must be positive, got ",
                std[c]);
    for (int v = 0; v < 256; ++v) {
      lut[c][static_cast<std::size_t>(v)] = (static_cast<float>(v) / 255.0f - mean[c]) / std[c];
    }
  }
  return lut;
}

}  // namespace detail

/// The crop `box` of `img` resized to size x size (PIL's bilinear: torchvision's resized_crop),
/// mirrored left-right when `flip`, as float planes (pixel / 255 - mean[c]) / std[c]: writes
/// 3 * size * size floats to `out`.
inline void resized_crop_into(const Image& img, CropBox box, int size, bool flip,
                              const std::array<float, 3>& mean, const std::array<float, 3>& std,
                              float* out, PassOrder order = PassOrder::pillow13) {
  EMBER_CHECK(size > 0, "ember: resized_crop: the output size must be positive, got ", size);
  EMBER_CHECK(box.height > 0 && box.width > 0 && box.top >= 0 && box.left >= 0 &&
                  box.top + box.height <= img.height && box.left + box.width <= img.width,
              "ember: resized_crop: the box (top ", box.top, ", left ", box.left, ", ", box.width,
              "x", box.height, ") is not inside the ", img.width, "x", img.height, " image");
  detail::resample_window(img, box.top, box.left, box.height, box.width, size, size, 0, 0, size,
                          flip, order, detail::normalize_lut(mean, std), out);
}

/// Evaluation's Resize(resize) + CenterCrop(size) of `img` (see eval_geometry), as float planes
/// (pixel / 255 - mean[c]) / std[c]: writes 3 * size * size floats to `out`. Only the crop's
/// pixels are resampled; they equal those of resizing the whole image and then cropping.
inline void resize_center_crop_into(const Image& img, int resize, int size,
                                    const std::array<float, 3>& mean,
                                    const std::array<float, 3>& std, float* out,
                                    PassOrder order = PassOrder::pillow13) {
  const EvalGeometry g = eval_geometry(img.height, img.width, resize, size);
  detail::resample_window(img, 0, 0, img.height, img.width, g.resized_height, g.resized_width,
                          g.crop.top, g.crop.left, size, false, order,
                          detail::normalize_lut(mean, std), out);
}

/// What a loader does to each decoded image: training's random crop and flip, or evaluation's
/// resize and centre crop; then normalisation. Build with training(size) or evaluation(size).
struct ImageTransform {
  bool train = true;
  /// The output is size x size.
  int size = 224;
  /// Evaluation: the shorter side before the centre crop; 0 means size * 256 / 224 (floored).
  int resize = 0;
  /// Training: RandomResizedCrop's area fraction and aspect-ratio (w / h) ranges.
  std::array<double, 2> scale = {0.08, 1.0};
  std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0};
  /// Training: the probability of a horizontal flip.
  double flip_p = 0.5;
  std::array<float, 3> mean = kImageNetMean;
  std::array<float, 3> std = kImageNetStd;
  /// The Pillow version whose resampling is reproduced to the bit (see PassOrder).
  PassOrder pil_order = PassOrder::pillow13;

  static ImageTransform training(int size = 224) {
    ImageTransform t;
    t.train = true;
    t.size = size;
    return t;
  }
  static ImageTransform evaluation(int size = 224) {
    ImageTransform t;
    t.train = false;
    t.size = size;
    return t;
  }
  /// The shorter side evaluation resizes to.
  int eval_resize() const { return resize > 0 ? resize : size * 256 / 224; }
  /// Throws ember::Error when a field is out of range.
  void validate() const {
    EMBER_CHECK(size > 0, "ember: ImageTransform: size must be positive, got ", size);
    EMBER_CHECK(resize == 0 || resize >= size, "ember: ImageTransform: resize (", resize,
                ") must be 0 or at least size (", size, ")");
    EMBER_CHECK(scale[0] > 0 && scale[0] <= scale[1] && scale[1] <= 1.0,
                "ember: ImageTransform: scale must satisfy 0 < min <= max <= 1, got (", scale[0],
                ", ", scale[1], ")");
    EMBER_CHECK(ratio[0] > 0 && ratio[0] <= ratio[1],
                "ember: ImageTransform: ratio must satisfy 0 < min <= max, got (", ratio[0], ", ",
                ratio[1], ")");
    EMBER_CHECK(flip_p >= 0 && flip_p <= 1, "ember: ImageTransform: flip_p must be in [0, 1], got ",
                flip_p);
    for (std::size_t c = 0; c < 3; ++c) {
      EMBER_CHECK(std[c] > 0.0f, "ember: ImageTransform: std[", c, "] must be positive, got ",
                  std[c]);
    }
  }
};

/// The random part of training's transform for sample `index` of `epoch`: the flip (the first
/// draw, flip when uniform() < flip_p) and RandomResizedCrop's box (the draws after it).
struct Augmentation {
  CropBox crop;
  bool flip = false;
};

inline Augmentation draw_augmentation(int height, int width, const ImageTransform& t,
                                      std::uint64_t seed, std::int64_t epoch, std::int64_t index) {
  AugmentRng rng(seed, epoch, index);
  Augmentation a;
  a.flip = rng.uniform() < t.flip_p;
  a.crop = random_resized_crop_box(height, width, rng, t.scale, t.ratio);
  return a;
}

/// Applies `t` to `img` for sample `index` of `epoch` (the randomness of training keyed by
/// (seed, epoch, index)): writes 3 * t.size * t.size floats, CHW, to `out`.
inline void transform_into(const Image& img, const ImageTransform& t, std::uint64_t seed,
                           std::int64_t epoch, std::int64_t index, float* out) {
  if (t.train) {
    const Augmentation a = draw_augmentation(img.height, img.width, t, seed, epoch, index);
    resized_crop_into(img, a.crop, t.size, a.flip, t.mean, t.std, out, t.pil_order);
  } else {
    resize_center_crop_into(img, t.eval_resize(), t.size, t.mean, t.std, out, t.pil_order);
  }
}

/// transform_into as a new [3, size, size] tensor.
inline Tensor<float> transform_image(const Image& img, const ImageTransform& t,
                                     std::uint64_t seed = 0, std::int64_t epoch = 0,
                                     std::int64_t index = 0) {
  t.validate();
  Tensor<float> out = empty<float>(Shape{3, t.size, t.size});
  transform_into(img, t, seed, epoch, index, out.data());
  return out;
}

// ---- The folder -------------------------------------------------------------------------------

/// The JPEG files under root/<class>/ (any depth below the class folder, symbolic links
/// followed), classes being root's sub-folders sorted by name (byte order, as Python's sorted)
/// and numbered from 0. Files are ordered as torchvision's make_dataset orders them: class by
/// class, then by folder, then by name. Only names ending in .jpg or .jpeg (any case: ImageNet's
/// are .JPEG) are listed; other files are ignored.
class ImageFolder {
 public:
  explicit ImageFolder(const std::filesystem::path& root) : root_(root) {
    namespace fs = std::filesystem;
    const std::string where = ::ember::detail::concat("ember: ImageFolder: '", root.string(), "'");
    std::error_code ec;
    EMBER_CHECK(fs::is_directory(root, ec), where, ": ",
                ec ? ec.message() : std::string("not a directory"));
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code dir_ec;
      if (it->is_directory(dir_ec)) classes_.push_back(it->path().filename().string());
    }
    EMBER_CHECK(!ec, where, ": cannot list the folder: ", ec.message());
    EMBER_CHECK(!classes_.empty(), where,
                ": no class folders (expected root/<class>/<image>.JPEG, as ImageNet's train/ and "
                "val/ after the usual val reorganisation)");
    std::sort(classes_.begin(), classes_.end());

    for (std::size_t c = 0; c < classes_.size(); ++c) {
      const fs::path dir = root / classes_[c];
      std::vector<std::pair<std::string, std::string>> files;  // (folder, name)
      const auto opts = fs::directory_options::follow_directory_symlink;
      for (fs::recursive_directory_iterator it(dir, opts, ec), end; !ec && it != end;
           it.increment(ec)) {
        std::error_code file_ec;
        if (!it->is_regular_file(file_ec) || !is_jpeg_name(it->path())) continue;
        files.emplace_back(it->path().parent_path().string(), it->path().filename().string());
      }
      EMBER_CHECK(!ec, where, ": cannot list the class folder '", dir.string(),
                  "': ", ec.message());
      EMBER_CHECK(!files.empty(), where, ": the class folder '", classes_[c],
                  "' holds no JPEG file (*.jpg, *.jpeg, any case); remove it or add images");
      std::sort(files.begin(), files.end());
      for (auto& [folder, name] : files) {
        paths_.push_back(fs::path(folder) / name);
        labels_.push_back(static_cast<std::int64_t>(c));
      }
    }
  }

  /// True for names ending in .jpg or .jpeg, in any case.
  static bool is_jpeg_name(const std::filesystem::path& p) {
    std::string ext = p.extension().string();
    for (char& ch : ext) ch = (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch - 'A' + 'a') : ch;
    return ext == ".jpg" || ext == ".jpeg";
  }

  const std::filesystem::path& root() const { return root_; }
  /// The class names, sorted; class i is classes()[i].
  const std::vector<std::string>& classes() const { return classes_; }
  /// The index of class `name`; throws ember::Error for an unknown name.
  std::int64_t class_index(std::string_view name) const {
    const auto it = std::lower_bound(classes_.begin(), classes_.end(), name);
    EMBER_CHECK(it != classes_.end() && *it == name, "ember: ImageFolder: '", root_.string(),
                "' has no class '", name, "'");
    return it - classes_.begin();
  }
  /// The number of files listed (readable or not).
  std::int64_t size() const { return static_cast<std::int64_t>(paths_.size()); }
  const std::filesystem::path& path(std::int64_t i) const { return paths_[checked(i)]; }
  std::int64_t label(std::int64_t i) const { return labels_[checked(i)]; }
  /// Every sample's label, in sample order.
  const std::vector<std::int64_t>& labels() const { return labels_; }

  /// Reads and decodes sample i into `out`. On failure returns false and says why in `why`.
  bool try_load(std::int64_t i, JpegDecoder& decoder, Image& out, std::string& why,
                std::vector<unsigned char>& scratch) const {
    const std::filesystem::path& p = path(i);
    return read_file_bytes(p, scratch, why) &&
           decoder.decode(scratch.data(), scratch.size(), out, why);
  }
  /// Reads and decodes sample i; throws ember::Error naming the file when it cannot.
  Image load(std::int64_t i) const { return read_jpeg(path(i)); }

 private:
  std::size_t checked(std::int64_t i) const {
    EMBER_CHECK(i >= 0 && i < size(), "ember: ImageFolder: sample ", i, " is outside [0, ", size(),
                ")");
    return static_cast<std::size_t>(i);
  }

  std::filesystem::path root_;
  std::vector<std::string> classes_;
  std::vector<std::filesystem::path> paths_;
  std::vector<std::int64_t> labels_;
};

// ---- The loader -------------------------------------------------------------------------------

/// One batch from an ImageFolderLoader.
struct ImageBatch {
  Tensor<float> images;               // [B, 3, size, size], CPU
  Tensor<std::int64_t> labels;        // [B], CPU
  std::vector<std::int64_t> samples;  // the sample behind each row (a replacement if skipped)
  std::int64_t epoch = 0;             // the Batches cursor this batch was served at
  std::int64_t position = 0;
};

struct LoaderOptions {
  ImageTransform transform = ImageTransform::training();
  /// Decoding threads; 0 decodes in the caller's thread inside next() (no prefetching); -1 uses
  /// std::thread::hardware_concurrency().
  int workers = -1;
  /// Batches decoded ahead of the one next() returns (with workers > 0).
  int prefetch = 2;
  /// Keys the augmentation's random draws (with the epoch and the sample index).
  std::uint64_t seed = 0;
  /// Decode into page-locked memory, so `batch.images.to(gpu, true)` is queued without the host
  /// waiting (Tensor::to). Needs a CUDA device.
  bool pin_memory = false;
};

/// Serves the batches of an ImageFolder in the order of a Batches, transformed, decoding on
/// worker threads. After next() returns batch (e, p), the workers already decode the `prefetch`
/// batches that follow it in the cursor's order, into the next epoch too, so the caller trains
/// while they work: the loader holds at most `prefetch` batches besides those it returned.
/// Moving the cursor elsewhere (restore, or next() after skipping an epoch's tail) drops the
/// prefetched batches.
///
/// A file that cannot be read or decoded is skipped, never fatal: its row gets the next good
/// sample of the epoch's order (wrapping around), and the file is counted once in skipped() and
/// not tried again. Only a folder with no decodable image at all throws.
///
/// Batches are CPU tensors, in page-locked memory with `pin_memory` (whose blocks are not reused
/// while a queued copy still reads them: memory/pinned_allocator.hpp).
class ImageFolderLoader {
 public:
  ImageFolderLoader(ImageFolder folder, Batches batches, const LoaderOptions& options = {})
      : folder_(std::move(folder)), batches_(std::move(batches)), opts_(options) {
    opts_.transform.validate();
    EMBER_CHECK(batches_.size() == folder_.size(), "ember: ImageFolderLoader: the Batches cover ",
                batches_.size(), " samples but '", folder_.root().string(), "' holds ",
                folder_.size());
    EMBER_CHECK(opts_.prefetch >= 0, "ember: ImageFolderLoader: prefetch must be >= 0, got ",
                opts_.prefetch);
    EMBER_CHECK(!opts_.pin_memory || memory::pinned_memory_available(),
                "ember: ImageFolderLoader: pin_memory needs a CUDA device, but ",
                cuda::unavailable_reason());
    EMBER_CHECK(opts_.workers >= -1, "ember: ImageFolderLoader: workers must be >= -1, got ",
                opts_.workers);
    int workers = opts_.workers;
    if (workers < 0) workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    bad_ = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(folder_.size()));
    if (workers == 0) {
      sync_ = std::make_unique<WorkerState>();
      return;
    }
    // Decoders are made here, so a TurboJPEG failure throws to the caller, not in a thread.
    std::vector<std::unique_ptr<WorkerState>> states;
    for (int i = 0; i < workers; ++i) states.push_back(std::make_unique<WorkerState>());
    try {
      for (int i = 0; i < workers; ++i) {
        threads_.emplace_back(
            [this, st = std::move(states[static_cast<std::size_t>(i)])] { work(*st); });
      }
    } catch (...) {
      shutdown();
      throw;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    fill_locked(batches_.epoch(), batches_.position(), opts_.prefetch);
  }

  /// Stops the workers (each finishes at most the image it is decoding) and drops what they
  /// prefetched. Safe at any point of an epoch.
  ~ImageFolderLoader() { shutdown(); }

  ImageFolderLoader(const ImageFolderLoader&) = delete;
  ImageFolderLoader& operator=(const ImageFolderLoader&) = delete;

  /// True while the current epoch has batches left.
  bool has_next() const { return batches_.has_next(); }

  /// The next batch of the cursor's epoch; advances the cursor. Throws ember::Error when the
  /// epoch is done (call next_epoch()), and rethrows a worker's failure other than a bad image.
  ImageBatch next() {
    EMBER_CHECK(batches_.has_next(), "ember: ImageFolderLoader: epoch ", batches_.epoch(),
                " has no batches left (", batches_.batches_per_epoch(),
                " served); call next_epoch()");
    const std::int64_t e = batches_.epoch(), p = batches_.position();
    std::shared_ptr<Job> job;
    if (sync_) {
      job = make_job(e, p);
      for (std::int64_t k = 0; k < job->count; ++k) run_slot(*job, k, *sync_);
    } else {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!pipeline_.empty() &&
          (pipeline_.front()->epoch != e || pipeline_.front()->position != p)) {
        cancel_locked();
      }
      fill_locked(e, p, opts_.prefetch + 1);
      job = pipeline_.front();
      done_cv_.wait(lock, [&] { return job->remaining == 0; });
      pipeline_.pop_front();
      if (!job->error) {
        const auto [ne, np] = successor(e, p);
        fill_locked(ne, np, opts_.prefetch);
      }
      lock.unlock();
      if (job->error) {
        std::lock_guard<std::mutex> relock(mutex_);
        cancel_locked();
        std::rethrow_exception(job->error);
      }
    }
    batches_.next();
    return ImageBatch{job->images, job->labels, std::move(job->samples), e, p};
  }

  /// Moves the cursor to the start of the next epoch (its batches may already be prefetched).
  void next_epoch() { batches_.next_epoch(); }
  /// Returns to a saved cursor state (see Batches::restore).
  void restore(std::int64_t epoch, std::int64_t position) { batches_.restore(epoch, position); }
  std::int64_t epoch() const { return batches_.epoch(); }
  std::int64_t position() const { return batches_.position(); }
  const Batches& batches() const { return batches_; }
  const ImageFolder& folder() const { return folder_; }
  const LoaderOptions& options() const { return opts_; }
  /// Worker threads (0: decoding happens inside next()).
  int workers() const { return static_cast<int>(threads_.size()); }

  /// The number of distinct files found unreadable or corrupt so far.
  std::int64_t skipped() const { return skipped_.load(); }
  /// "path: reason" for each skipped file, in the order they were found.
  std::vector<std::string> skipped_files() const {
    std::lock_guard<std::mutex> lock(skip_mutex_);
    return skipped_files_;
  }

 private:
  // Each thread's decoder and buffers, reused from image to image.
  struct WorkerState {
    JpegDecoder decoder;
    Image image;
    std::vector<unsigned char> bytes;
    std::string why;
  };

  struct Job {
    std::int64_t epoch = 0;
    std::int64_t position = 0;
    std::int64_t first = 0;  // where the batch starts in the epoch's order
    std::int64_t count = 0;
    std::shared_ptr<const std::vector<std::int64_t>> order;  // the epoch's permutation
    Tensor<float> images;
    Tensor<std::int64_t> labels;
    std::vector<std::int64_t> samples;
    std::int64_t remaining = 0;  // slots not finished (guarded by mutex_)
    std::exception_ptr error;    // guarded by mutex_
    std::atomic<bool> cancelled{false};
  };

  struct Task {
    std::shared_ptr<Job> job;
    std::int64_t slot = 0;
  };

  std::pair<std::int64_t, std::int64_t> successor(std::int64_t e, std::int64_t p) const {
    return p + 1 < batches_.batches_per_epoch() ? std::pair{e, p + 1}
                                                : std::pair{e + 1, std::int64_t{0}};
  }

  // The permutation of `epoch`; the latest two are cached (prefetching crosses one boundary).
  std::shared_ptr<const std::vector<std::int64_t>> order_of(std::int64_t epoch) {
    for (auto& [e, order] : orders_) {
      if (e == epoch && order) return order;
    }
    auto order = std::make_shared<const std::vector<std::int64_t>>(batches_.permutation(epoch));
    orders_[1] = std::move(orders_[0]);
    orders_[0] = {epoch, order};
    return order;
  }

  std::shared_ptr<Job> make_job(std::int64_t epoch, std::int64_t position) {
    auto job = std::make_shared<Job>();
    job->epoch = epoch;
    job->position = position;
    job->order = order_of(epoch);
    const std::int64_t n = batches_.size(), b = batches_.batch_size();
    job->first = position * b;
    job->count = std::min(n, job->first + b) - job->first;
    const std::int64_t s = opts_.transform.size;
    const Shape image_shape{job->count, 3, s, s}, label_shape{job->count};
    job->images = opts_.pin_memory ? empty_pinned<float>(image_shape) : empty<float>(image_shape);
    job->labels = opts_.pin_memory ? empty_pinned<std::int64_t>(label_shape)
                                   : empty<std::int64_t>(label_shape);
    job->samples.assign(static_cast<std::size_t>(job->count), -1);
    job->remaining = job->count;
    return job;
  }

  // Queues the batches from (e, p) on, in the cursor's order, until `cap` are queued or in
  // flight: prefetch + 1 while next() waits for the first, prefetch while the caller trains.
  void fill_locked(std::int64_t e, std::int64_t p, int cap) {
    if (batches_.batches_per_epoch() == 0) return;
    while (pipeline_.size() < static_cast<std::size_t>(cap)) {
      if (!pipeline_.empty())
        std::tie(e, p) = successor(pipeline_.back()->epoch, pipeline_.back()->position);
      std::shared_ptr<Job> job = make_job(e, p);
      for (std::int64_t k = 0; k < job->count; ++k) tasks_.push_back({job, k});
      pipeline_.push_back(std::move(job));
    }
    work_cv_.notify_all();
  }

  // Drops every queued batch; workers finish (and discard) the images they hold.
  void cancel_locked() {
    for (auto& job : pipeline_) job->cancelled = true;
    pipeline_.clear();
    tasks_.clear();
  }

  // Fills row `slot` of the job: its sample, or the next good one in the epoch's order.
  void run_slot(Job& job, std::int64_t slot, WorkerState& st) {
    const std::vector<std::int64_t>& order = *job.order;
    const auto n = static_cast<std::int64_t>(order.size());
    const std::int64_t pos = job.first + slot;  // workers never read batches_: next() moves it
    const std::int64_t s = opts_.transform.size;
    for (std::int64_t attempt = 0; attempt < n; ++attempt) {
      if (job.cancelled.load(std::memory_order_relaxed)) return;
      const std::int64_t idx = order[static_cast<std::size_t>((pos + attempt) % n)];
      std::atomic<bool>& bad = bad_[static_cast<std::size_t>(idx)];
      if (bad.load(std::memory_order_relaxed)) continue;
      if (!folder_.try_load(idx, st.decoder, st.image, st.why, st.bytes)) {
        if (!bad.exchange(true)) {
          skipped_.fetch_add(1);
          std::lock_guard<std::mutex> lock(skip_mutex_);
          skipped_files_.push_back(folder_.path(idx).string() + ": " + st.why);
        }
        continue;
      }
      transform_into(st.image, opts_.transform, opts_.seed, job.epoch, idx,
                     job.images.data() + slot * 3 * s * s);
      job.labels.data()[slot] = folder_.label(idx);
      job.samples[static_cast<std::size_t>(slot)] = idx;
      return;
    }
    fail("ember: ImageFolderLoader: none of the ", n, " images under '", folder_.root().string(),
         "' could be decoded (", skipped(), " skipped); the first: ",
         skipped_files().empty() ? std::string("?") : skipped_files().front());
  }

  void work(WorkerState& st) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      work_cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (stop_) return;
      Task task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      std::exception_ptr error;
      try {
        run_slot(*task.job, task.slot, st);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error && !task.job->error) task.job->error = error;
      if (--task.job->remaining == 0) done_cv_.notify_all();
    }
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      cancel_locked();
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
  }

  ImageFolder folder_;
  Batches batches_;
  LoaderOptions opts_;
  std::unique_ptr<std::atomic<bool>[]> bad_;  // per sample: found unreadable
  std::atomic<std::int64_t> skipped_{0};
  mutable std::mutex skip_mutex_;
  std::vector<std::string> skipped_files_;
  std::unique_ptr<WorkerState> sync_;  // the decoder of a loader without workers
  std::array<std::pair<std::int64_t, std::shared_ptr<const std::vector<std::int64_t>>>, 2>
      orders_{};

  std::mutex mutex_;
  std::condition_variable work_cv_;  // workers wait for tasks
  std::condition_variable done_cv_;  // next() waits for its batch
  std::deque<Task> tasks_;
  std::deque<std::shared_ptr<Job>> pipeline_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ember::data
