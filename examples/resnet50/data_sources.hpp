// Where the trainer's images come from: one small interface and one class per `--data` choice.
//
//   synthetic          fixed random images, made once on the device: the raw-throughput mode
//   fashion-mnist      Debian's dataset-fashion-mnist, in memory
//   cifar10=DIR        the CIFAR-10 binary files, in memory
//   imagefolder=DIR    DIR/train/<class>/*.JPEG and DIR/val/<class>/*.JPEG, decoded on threads
//
// Batches come in a fixed order for a given seed and epoch (data::Batches), so a resumed run
// sees exactly the batches the uninterrupted one would have. In a data-parallel run every source
// serves this rank's part of each (global) batch, training and evaluation alike (Shard).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ember/data/batches.hpp>
#include <ember/data/cifar10.hpp>
#include <ember/data/fashion_mnist.hpp>
#include <ember/data/image_folder.hpp>
#include <ember/dist/world.hpp>
#include <ember/ember.hpp>

#include "options.hpp"

namespace resnet {

struct Batch {
  ember::Tensor<float> images;         // [B, C, S, S], on the CPU (synthetic: on the device)
  ember::Tensor<std::int64_t> labels;  // [B]
};

/// This process's part of the data: rank `rank` of `ranks` (one process: 0 of 1).
struct Shard {
  int rank = 0;
  int ranks = 1;
};

class ImageSource {
 public:
  virtual ~ImageSource() = default;
  virtual std::string name() const = 0;
  virtual std::int64_t channels() const = 0;
  virtual std::int64_t image_size() const = 0;
  virtual std::int64_t classes() const = 0;
  virtual std::int64_t train_size() const = 0;
  virtual std::int64_t eval_size() const = 0;
  /// Training batches per epoch.
  virtual std::int64_t batches_per_epoch() const = 0;
  /// Batch `index` of `epoch` (0 <= index < batches_per_epoch()), in a fixed order.
  virtual Batch train_batch(std::int64_t epoch, std::int64_t index) = 0;
  /// Evaluation batches in order; the last may be smaller.
  virtual std::int64_t eval_batches() const = 0;
  virtual Batch eval_batch(std::int64_t index) = 0;
  /// Images skipped as unreadable so far (image folders only).
  virtual std::int64_t skipped() const { return 0; }
};

/// A dataset held in memory as [N, C, S, S] images and [N] labels (Fashion-MNIST, CIFAR-10).
/// With `pin_memory` (training on a GPU) training batches are gathered into page-locked memory,
/// so their copies to the device are queued without the training loop waiting.
class InMemorySource : public ImageSource {
 public:
  InMemorySource(std::string name, ember::Tensor<float> train_x,
                 ember::Tensor<std::int64_t> train_y, ember::Tensor<float> eval_x,
                 ember::Tensor<std::int64_t> eval_y, std::int64_t classes, std::int64_t batch,
                 std::uint64_t seed, bool pin_memory = false, Shard shard = {})
      : pin_memory_(pin_memory),
        shard_(shard),
        name_(std::move(name)),
        train_x_(std::move(train_x)),
        train_y_(std::move(train_y)),
        eval_x_(std::move(eval_x)),
        eval_y_(std::move(eval_y)),
        classes_(classes),
        batch_(batch),
        order_(train_y_.numel(), batch, {.seed = seed, .drop_last = true}) {
    EMBER_CHECK(order_.batches_per_epoch() > 0, "resnet50: ", name_, " has ", train_y_.numel(),
                " training images, fewer than one batch of ", batch);
    order_.shard(shard.rank, shard.ranks);
  }
  std::string name() const override { return name_; }
  std::int64_t channels() const override { return train_x_.size(1); }
  std::int64_t image_size() const override { return train_x_.size(2); }
  std::int64_t classes() const override { return classes_; }
  std::int64_t train_size() const override { return train_y_.numel(); }
  std::int64_t eval_size() const override { return eval_y_.numel(); }
  std::int64_t batches_per_epoch() const override { return order_.batches_per_epoch(); }
  Batch train_batch(std::int64_t epoch, std::int64_t index) override {
    const std::vector<std::int64_t> rows = order_.batch(epoch, index);
    return {ember::data::gather_rows(train_x_, rows, pin_memory_),
            ember::data::gather_rows(train_y_, rows, pin_memory_)};
  }
  std::int64_t eval_batches() const override { return (eval_size() + batch_ - 1) / batch_; }
  Batch eval_batch(std::int64_t index) override {
    const std::int64_t begin = index * batch_, m = std::min(eval_size(), begin + batch_) - begin;
    // This rank's part of the batch, split as Batches::shard splits one.
    const std::int64_t b = begin + shard_.rank * m / shard_.ranks;
    const std::int64_t e = begin + (shard_.rank + 1) * m / shard_.ranks;
    return {eval_x_.slice(0, b, e).contiguous(), eval_y_.slice(0, b, e).contiguous()};
  }

 private:
  bool pin_memory_;
  Shard shard_;
  std::string name_;
  ember::Tensor<float> train_x_;
  ember::Tensor<std::int64_t> train_y_;
  ember::Tensor<float> eval_x_;
  ember::Tensor<std::int64_t> eval_y_;
  std::int64_t classes_, batch_;
  ember::data::Batches order_;
};

/// Fixed random images and labels, made once on `device`: every step trains on the same batch,
/// so the loop measures the model and nothing else. `eval` sees the same batch.
class SyntheticSource : public ImageSource {
 public:
  SyntheticSource(std::int64_t batch, std::int64_t size, std::int64_t classes,
                  std::int64_t steps_per_epoch, ember::Device device, std::uint64_t seed)
      : size_(size), classes_(classes), batch_(batch), steps_(steps_per_epoch) {
    images_ = ember::randn<float>(ember::Shape{batch, 3, size, size}, seed, device);
    labels_ = ember::Tensor<std::int64_t>(ember::cast<std::int64_t>(
        ember::rand<float>(ember::Shape{batch}, seed + 1, ember::Device::cpu(), 0.0,
                           static_cast<double>(classes) - 1e-3)));
  }
  std::string name() const override { return "synthetic"; }
  std::int64_t channels() const override { return 3; }
  std::int64_t image_size() const override { return size_; }
  std::int64_t classes() const override { return classes_; }
  std::int64_t train_size() const override { return batch_ * steps_; }
  std::int64_t eval_size() const override { return batch_; }
  std::int64_t batches_per_epoch() const override { return steps_; }
  Batch train_batch(std::int64_t, std::int64_t) override { return {images_, labels_}; }
  std::int64_t eval_batches() const override { return 1; }
  Batch eval_batch(std::int64_t) override { return {images_, labels_}; }

 private:
  std::int64_t size_, classes_, batch_, steps_;
  ember::Tensor<float> images_;
  ember::Tensor<std::int64_t> labels_;
};

/// Fashion-MNIST (Debian's dataset-fashion-mnist), normalised with its mean and std.
inline std::unique_ptr<ImageSource> fashion_mnist(std::int64_t batch, std::uint64_t seed,
                                                  bool pin_memory, Shard shard = {}) {
  using ember::data::FashionMnist;
  const FashionMnist train(ember::data::Split::train, FashionMnist::kMean, FashionMnist::kStd);
  const FashionMnist test(ember::data::Split::test, FashionMnist::kMean, FashionMnist::kStd);
  return std::make_unique<InMemorySource>("fashion-mnist", train.images(), train.labels(),
                                          test.images(), test.labels(), 10, batch, seed, pin_memory,
                                          shard);
}

/// CIFAR-10 from its binary files in `dir`, normalised per channel.
inline std::unique_ptr<ImageSource> cifar10(const std::string& dir, std::int64_t batch,
                                            std::uint64_t seed, bool pin_memory, Shard shard = {}) {
  using ember::data::Cifar10;
  const Cifar10 train(dir, ember::data::Split::train, Cifar10::kMean, Cifar10::kStd);
  const Cifar10 test(dir, ember::data::Split::test, Cifar10::kMean, Cifar10::kStd);
  return std::make_unique<InMemorySource>("cifar10", train.images(), train.labels(), test.images(),
                                          test.labels(), 10, batch, seed, pin_memory, shard);
}

/// ImageNet's layout: DIR/train/<class>/*.JPEG and DIR/val/<class>/*.JPEG, decoded by worker
/// threads ahead of the training loop (RandomResizedCrop + flip for training, resize + centre
/// crop for evaluation, ImageNet's normalisation). Unreadable images are skipped and counted.
/// With `pin_memory` (training on a GPU) batches are decoded into page-locked memory, so their
/// copies to the device are queued without the training loop waiting.
class ImageFolderSource : public ImageSource {
 public:
  ImageFolderSource(const std::filesystem::path& dir, std::int64_t batch, std::int64_t size,
                    std::uint64_t seed, int workers, bool pin_memory, Shard shard = {})
      : classes_(0), batch_(batch) {
    using namespace ember::data;
    ImageFolder train(dir / "train"), val(dir / "val");
    EMBER_CHECK(train.classes() == val.classes(), "resnet50: '", dir.string(),
                "': train/ and val/ have different class folders");
    classes_ = static_cast<std::int64_t>(train.classes().size());
    train_size_ = train.size();
    eval_size_ = val.size();
    const int threads = workers > 0 ? workers : -1;
    Batches train_order(train_size_, batch, {.seed = seed, .drop_last = true}),
        eval_order(eval_size_, batch, {.shuffle = false});
    train_order.shard(shard.rank, shard.ranks);
    eval_order.shard(shard.rank, shard.ranks);
    train_ = std::make_unique<ImageFolderLoader>(
        std::move(train), train_order,
        LoaderOptions{ImageTransform::training(static_cast<int>(size)), threads, 3, seed,
                      pin_memory});
    eval_ = std::make_unique<ImageFolderLoader>(
        std::move(val), eval_order,
        LoaderOptions{ImageTransform::evaluation(static_cast<int>(size)), threads, 3, seed,
                      pin_memory});
    size_ = size;
    EMBER_CHECK(train_size_ >= batch, "resnet50: '", dir.string(), "' has ", train_size_,
                " training images, fewer than one batch of ", batch);
  }
  std::string name() const override { return "imagefolder"; }
  std::int64_t channels() const override { return 3; }
  std::int64_t image_size() const override { return size_; }
  std::int64_t classes() const override { return classes_; }
  std::int64_t train_size() const override { return train_size_; }
  std::int64_t eval_size() const override { return eval_size_; }
  std::int64_t batches_per_epoch() const override { return train_size_ / batch_; }
  Batch train_batch(std::int64_t epoch, std::int64_t index) override {
    return take(*train_, epoch, index);
  }
  std::int64_t eval_batches() const override { return (eval_size_ + batch_ - 1) / batch_; }
  Batch eval_batch(std::int64_t index) override { return take(*eval_, 0, index); }
  std::int64_t skipped() const override { return train_->skipped() + eval_->skipped(); }

 private:
  // The loaders serve batches in cursor order and prefetch the following ones; a request out of
  // that order (a resumed run, an evaluation pass starting over) moves the cursor first.
  static Batch take(ember::data::ImageFolderLoader& loader, std::int64_t epoch,
                    std::int64_t index) {
    if (loader.epoch() != epoch || loader.position() != index) loader.restore(epoch, index);
    ember::data::ImageBatch b = loader.next();
    if (!loader.has_next()) loader.next_epoch();
    return {std::move(b.images), std::move(b.labels)};
  }

  std::int64_t classes_, batch_, size_ = 0, train_size_ = 0, eval_size_ = 0;
  std::unique_ptr<ember::data::ImageFolderLoader> train_, eval_;
};

inline std::unique_ptr<ImageSource> image_folder(const std::string& dir, std::int64_t batch,
                                                 std::int64_t size, std::uint64_t seed, int workers,
                                                 bool pin_memory, Shard shard = {}) {
  return std::make_unique<ImageFolderSource>(dir, batch, size, seed, workers, pin_memory, shard);
}

// ---- --data, read and opened ------------------------------------------------------------------

/// --data read into what it names; the only place that reads the text.
inline DataChoice read_data_choice(const std::string& d) {
  using Kind = DataChoice::Kind;
  if (d == "synthetic") return {Kind::synthetic, {}};
  if (d == "fashion-mnist") return {Kind::fashion_mnist, {}};
  if (d.rfind("cifar10=", 0) == 0 && d.size() > 8) return {Kind::cifar10, d.substr(8)};
  if (d.rfind("imagefolder=", 0) == 0 && d.size() > 12) return {Kind::image_folder, d.substr(12)};
  ember::fail(
      "resnet50: --data must be synthetic, fashion-mnist, cifar10=DIR or imagefolder=DIR, got '", d,
      "'");
}

/// This rank's part of the data (--batch-size is the global batch).
inline std::unique_ptr<ImageSource> open_data(const Config& c, ember::Device device) {
  const Shard shard{ember::dist::rank(), ember::dist::world_size()};
  // On a GPU the host-side batches are page-locked, so their copies do not block the step.
  const bool pin = device.is_cuda();
  switch (c.source.kind) {
    case DataChoice::Kind::synthetic:
      return std::make_unique<SyntheticSource>(c.batch / shard.ranks, c.image_size, 1000,
                                               c.steps_per_epoch > 0 ? c.steps_per_epoch : 50,
                                               device, c.seed);
    case DataChoice::Kind::fashion_mnist:
      return fashion_mnist(c.batch, c.seed, pin, shard);
    case DataChoice::Kind::cifar10:
      return cifar10(c.source.dir, c.batch, c.seed, pin, shard);
    case DataChoice::Kind::image_folder:
      return image_folder(c.source.dir, c.batch, c.image_size, c.seed, c.workers, pin, shard);
  }
  ember::fail("resnet50: unknown data source");
}

/// The images a model is built for: from the opened source, or (for --summary, which opens
/// nothing) what --data names: image folders are taken to have ImageNet's 1000 classes.
struct ImageShape {
  std::int64_t channels, size, classes;
};
inline ImageShape shape_of(const ImageSource& data) {
  return {data.channels(), data.image_size(), data.classes()};
}
inline ImageShape expected_shape(const Config& c) {
  switch (c.source.kind) {
    case DataChoice::Kind::fashion_mnist:
      return {1, 28, 10};
    case DataChoice::Kind::cifar10:
      return {3, 32, 10};
    default:
      return {3, c.image_size, 1000};
  }
}

}  // namespace resnet
