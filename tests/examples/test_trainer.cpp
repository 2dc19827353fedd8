// The ResNet trainer (examples/resnet50/train_main.hpp) on a slice of the real Fashion-MNIST:
// a run interrupted after its first epoch and resumed from its checkpoint ends with the same
// weights, batch-norm statistics and optimizer state, bit for bit, as the uninterrupted run.
// And the trainer's other inputs end to end: CIFAR-10 binary files and a JPEG image folder
// (with an unreadable file), both written here from Fashion-MNIST images.
#include <catch2/catch.hpp>

#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "resnet50/predict.hpp"
#include "resnet50/train_main.hpp"
#include "support/checkpoints.hpp"
#include "support/files.hpp"
#include "support/step_footprint.hpp"
#include "trainer_recipe_cases.hpp"

namespace fs = std::filesystem;
using namespace ember;

using ember::testing::TempDir;
using ember::testing::write_bytes;

namespace {
namespace test_examples_trainer {

/// The first 256 training and 64 test images.
resnet::InMemorySource small_fashion_mnist(std::int64_t batch) {
  using data::FashionMnist;
  const FashionMnist train(data::Split::train, FashionMnist::kMean, FashionMnist::kStd);
  const FashionMnist test(data::Split::test, FashionMnist::kMean, FashionMnist::kStd);
  return resnet::InMemorySource(
      "fashion-mnist (slice)", train.images().slice(0, 0, 256).contiguous(),
      train.labels().slice(0, 0, 256).contiguous(), test.images().slice(0, 0, 64).contiguous(),
      test.labels().slice(0, 0, 64).contiguous(), 10, batch, 3);
}

resnet::Config small_config(const fs::path& out) {
  resnet::Config c;
  c.arch = "resnet18";
  c.width = 8;
  c.batch = 32;
  c.epochs = 3;
  c.lr = 0.05;
  c.log_every = 4;
  c.device = "cpu";
  c.out = out.string();
  resnet::settle_defaults(c, Device::cpu());
  return c;
}

TEST_CASE("the trainer's optimizer options are those of the command line", "[examples]") {
  check_optimizer_recipe();
}

TEST_CASE("the ResNet trainer resumes an interrupted run exactly", "[examples]") {
  const TempDir tmp("ember_trainer");
  const fs::path& dir = tmp.path;

  resnet::InMemorySource data = small_fashion_mnist(32);
  const resnet::RunResult straight =
      resnet::run(small_config(dir / "straight"), data, Device::cpu(), true);
  REQUIRE(straight.best_top1 > 0.1);  // it learns something in three short epochs

  resnet::Config first = small_config(dir / "resumed");
  first.stop_after = 1;
  resnet::run(first, data, Device::cpu(), true);
  resnet::Config rest = small_config(dir / "resumed");
  rest.resume = "auto";
  resnet::run(rest, data, Device::cpu(), true);

  const NamedTensors a = io::load_safetensors(dir / "straight" / "ckpt-last.safetensors");
  const NamedTensors b = io::load_safetensors(dir / "resumed" / "ckpt-last.safetensors");
  REQUIRE(a.size() > 100);  // weights, BN statistics, momentum buffers, steps
  ember::testing::require_identical(a, b);
}

TEST_CASE("the ResNet trainer's step takes no memory and makes no primitive once warm",
          "[examples]") {
  const TempDir tmp("ember_trainer_steady");
  resnet::Config c = small_config(tmp.path);
  c.width = 16;  // the CPU main job's network: activations of 1 MiB and more, from the cache
  resnet::InMemorySource data = small_fashion_mnist(c.batch);
  const Device cpu = Device::cpu();
  resnet::ResNet<float> model(
      resnet::model_options(c, resnet::shape_of(data), cpu, resnet::kFormat));
  const auto recipe = resnet::make_recipe<optim::SGD>(c, data.batches_per_epoch());
  optim::SGD opt(optim::decay_groups(model, recipe.main, recipe.excluded));
  const CrossEntropyOptions loss{.label_smoothing = c.label_smoothing};
  ember::testing::require_steady_steps([&](std::int64_t step) {
    resnet::train_step(model, opt, data.train_batch(0, step), recipe.schedule(step), step, cpu,
                       loss);
  });
}

namespace {

/// Fashion-MNIST image i as 32x32 RGB bytes (centred, grey replicated), row-major HWC.
std::vector<std::uint8_t> rgb32(const data::FashionMnist& fm, std::int64_t i) {
  std::vector<std::uint8_t> px(32 * 32 * 3, 0);
  const float* src = fm.images().data() + i * 28 * 28;
  for (int y = 0; y < 28; ++y) {
    for (int x = 0; x < 28; ++x) {
      const auto v = static_cast<std::uint8_t>(src[y * 28 + x] * 255.0f + 0.5f);
      for (int c = 0; c < 3; ++c) px[static_cast<std::size_t>(((y + 2) * 32 + x + 2) * 3 + c)] = v;
    }
  }
  return px;
}

std::string jpeg(const std::vector<std::uint8_t>& rgb) {
  tjhandle h = tjInitCompress();
  REQUIRE(h != nullptr);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  REQUIRE(tjCompress2(h, rgb.data(), 32, 0, 32, TJPF_RGB, &buf, &size, TJSAMP_444, 95, 0) == 0);
  std::string out(reinterpret_cast<const char*>(buf), size);
  tjFree(buf);
  tjDestroy(h);
  return out;
}

resnet::Config tiny_config(const std::string& data, const fs::path& out) {
  resnet::Config c;
  c.data = data;
  c.arch = "resnet18";
  c.width = 8;
  c.batch = 16;
  c.epochs = 1;
  c.image_size = 32;
  c.lr = 0.05;
  c.workers = 2;
  c.device = "cpu";
  c.out = out.string();
  resnet::settle_defaults(c, Device::cpu());
  return c;
}

}  // namespace

TEST_CASE("the ResNet trainer reads CIFAR-10 binaries and JPEG image folders", "[examples]") {
  const TempDir tmp("ember_trainer_data");
  const fs::path& dir = tmp.path;
  const data::FashionMnist fm(data::Split::test);  // pixels in [0, 1]

  SECTION("cifar10=DIR") {
    // Five training files of 16 records and a test file of 16: label byte, then R, G, B planes.
    auto records = [&](std::int64_t first) {
      std::string bytes;
      for (std::int64_t i = first; i < first + 16; ++i) {
        bytes += static_cast<char>(fm.labels().data()[i]);
        const auto px = rgb32(fm, i);
        for (int c = 0; c < 3; ++c) {
          for (int k = 0; k < 32 * 32; ++k) bytes += static_cast<char>(px[k * 3 + c]);
        }
      }
      return bytes;
    };
    for (int f = 1; f <= 5; ++f) {
      write_bytes(dir / "cifar" / ("data_batch_" + std::to_string(f) + ".bin"), records(16 * f));
    }
    write_bytes(dir / "cifar" / "test_batch.bin", records(0));
    resnet::Config c = tiny_config("cifar10=" + (dir / "cifar").string(), dir / "run-cifar");
    const auto source = resnet::open_data(c, Device::cpu());
    REQUIRE(source->train_size() == 80);
    REQUIRE(source->eval_size() == 16);
    REQUIRE(source->image_size() == 32);
    const resnet::RunResult r = resnet::run(c, *source, Device::cpu(), true);
    REQUIRE(r.items_per_second > 0);
    REQUIRE(fs::exists(dir / "run-cifar" / "ckpt-last.safetensors"));
  }
  SECTION("imagefolder=DIR, an unreadable file skipped and counted") {
    for (std::int64_t i = 0; i < 48; ++i) {
      const std::int64_t label = fm.labels().data()[i] % 3;  // three classes
      const std::string split = i < 36 ? "train" : "val";
      write_bytes(dir / "folder" / split / ("class" + std::to_string(label)) /
                      ("img" + std::to_string(i) + ".JPEG"),
                  jpeg(rgb32(fm, i)));
    }
    for (const char* split : {"train", "val"}) {
      for (int k = 0; k < 3; ++k) {
        write_bytes(dir / "folder" / split / ("class" + std::to_string(k)) / "pad.JPEG",
                    jpeg(rgb32(fm, 100 + k)));
      }
    }
    write_bytes(dir / "folder" / "train" / "class0" / "broken.JPEG", "not a jpeg at all");
    resnet::Config c = tiny_config("imagefolder=" + (dir / "folder").string(), dir / "run-folder");
    const auto source = resnet::open_data(c, Device::cpu());
    REQUIRE(source->classes() == 3);
    REQUIRE(source->train_size() == 36 + 3 + 1);
    const resnet::RunResult r = resnet::run(c, *source, Device::cpu(), true);
    REQUIRE(r.items_per_second > 0);
    REQUIRE(source->skipped() == 1);
  }
}

TEST_CASE("the ResNet trainer checks its options before reading data", "[examples]") {
  const auto fails = [](auto change, const char* words) {
    resnet::Config c;
    change(c);
    INFO(words);
    // --data is read by settle_defaults, the other options checked by validate_options: main
    // runs both before any work.
    REQUIRE_THROWS_WITH((resnet::settle_defaults(c, Device::cpu()), resnet::validate_options(c)),
                        Catch::Contains(words));
  };
  resnet::Config good;
  resnet::settle_defaults(good, Device::cpu());
  REQUIRE_NOTHROW(resnet::validate_options(good));
  fails([](resnet::Config& c) { c.arch = "resnet51"; }, "unknown architecture 'resnet51'");
  fails([](resnet::Config& c) { c.data = "mnist"; }, "--data must be");
  fails([](resnet::Config& c) { c.data = "cifar10="; }, "--data must be");
  fails([](resnet::Config& c) { c.optimizer = "adam"; }, "--optimizer must be sgd or lars");
  fails([](resnet::Config& c) { c.precision = "fp8"; }, "--precision must be");
  fails([](resnet::Config& c) { c.batch = -4; }, "--batch-size must be positive");
  fails([](resnet::Config& c) { c.lr = -0.1; }, "--lr must be positive");
  fails([](resnet::Config& c) { c.label_smoothing = 1.5; }, "--label-smoothing");
  fails([](resnet::Config& c) { c.target_accuracy = 90; }, "--target-accuracy is a fraction");
  fails([](resnet::Config& c) { c.log_every = 0; }, "--log-every must be positive");
  fails([](resnet::Config& c) { c.eval_only = true; }, "--eval-only needs the weights");
  fails([](resnet::Config& c) { c.init_checkpoint = "/nonexistent.safetensors"; },
        "--init-checkpoint: no file");
}

TEST_CASE("the ResNet trainer stops at a non-finite loss, naming the step or the operation",
          "[examples]") {
  const TempDir tmp("ember_trainer_nan");
  resnet::InMemorySource data = small_fashion_mnist(32);
  resnet::Config c = small_config(tmp.path / "run");
  c.epochs = 1;
  c.lr = 1e30;  // the first updates take the weights past float's range
  REQUIRE_THROWS_WITH(resnet::run(c, data, Device::cpu(), true),
                      Catch::Contains("resnet50: step ") && Catch::Contains("the loss is"));
  // --detect-anomaly: the first operation whose output is not finite, in the forward pass.
  c.detect_anomaly = true;
  c.out = (tmp.path / "anomaly").string();
  REQUIRE_THROWS_WITH(resnet::run(c, data, Device::cpu(), true),
                      Catch::Contains("detect_anomaly: '"));
  REQUIRE(!ember::anomaly_detection_enabled());  // the run's guard is gone with it
}

TEST_CASE("the ResNet trainer evaluates saved weights (--eval-only, --init-checkpoint)",
          "[examples]") {
  const TempDir tmp("ember_trainer_eval");
  const fs::path& dir = tmp.path;
  resnet::InMemorySource data = small_fashion_mnist(32);
  resnet::Config c = small_config(dir / "run");
  c.epochs = 1;
  const resnet::RunResult trained = resnet::run(c, data, Device::cpu(), true);

  // --resume FILE --eval-only: the run's last evaluation, again.
  resnet::Config from_run = c;
  from_run.resume = (dir / "run" / "ckpt-last.safetensors").string();
  from_run.eval_only = true;
  REQUIRE_NOTHROW(resnet::validate_options(from_run));
  const resnet::Accuracy again = resnet::evaluate_checkpoint<float>(from_run, data, Device::cpu());
  REQUIRE(again.top1 == trained.best_top1);

  // --init-checkpoint: a plain state dict (what safetensors.torch.save_file(model.state_dict())
  // writes, torchvision's names) of those weights, into float and into bf16 models.
  resnet::ResNet<float> model(
      resnet::model_options(c, resnet::shape_of(data), Device::cpu(), MemoryFormat::channels_last));
  resnet::load_weights(model, from_run.resume);
  io::save(model, dir / "weights.safetensors");
  resnet::Config from_weights = c;
  from_weights.init_checkpoint = (dir / "weights.safetensors").string();
  from_weights.eval_only = true;
  REQUIRE(resnet::evaluate_checkpoint<float>(from_weights, data, Device::cpu()).top1 ==
          trained.best_top1);
  resnet::ResNet<bf16> narrow(
      resnet::model_options(c, resnet::shape_of(data), Device::cpu(), MemoryFormat::channels_last));
  resnet::load_weights(narrow, from_weights.init_checkpoint);  // float -> bf16
  const Tensor<float> w = model.fc.weight.value();
  const Tensor<bf16> wn = narrow.fc.weight.value();
  REQUIRE(Tensor<float>(cast<float>(wn)).to_vector() ==
          Tensor<float>(cast<float>(Tensor<bf16>(cast<bf16>(w)))).to_vector());
  // A file of other shapes is refused, naming the tensor.
  resnet::Config wider = c;
  wider.width = 16;
  resnet::ResNet<float> other(resnet::model_options(wider, resnet::shape_of(data), Device::cpu(),
                                                    MemoryFormat::channels_last));
  REQUIRE_THROWS_WITH(resnet::load_weights(other, from_weights.init_checkpoint),
                      Catch::Contains("conv1.weight' has shape"));
}

TEST_CASE("resnet_predict's classify: the top classes of a JPEG, most probable first",
          "[examples]") {
  const TempDir tmp("ember_predict");
  const data::FashionMnist fm(data::Split::test, 0.0f, 1.0f);
  const fs::path file = tmp.path / "shirt.jpg";
  write_bytes(file, jpeg(rgb32(fm, 0)));
  resnet::ResNetOptions o;
  o.arch = resnet::Arch::resnet18;
  o.width = 8;
  o.num_classes = 10;
  o.small_stem = true;
  resnet::ResNet<float> model(o);
  const auto top = resnet::classify(model, file, 4, 32);
  REQUIRE(top.size() == 4);
  double total = 0;
  for (std::size_t k = 0; k < top.size(); ++k) {
    total += top[k].second;
    if (k > 0) REQUIRE(top[k].second <= top[k - 1].second);
  }
  REQUIRE(total <= 1.0 + 1e-6);
  // The same as the transform, the model and softmax by hand, all ten classes.
  model.eval();
  no_grad guard;
  const Tensor<float> x =
      data::transform_image(data::read_jpeg(file), data::ImageTransform::evaluation(32))
          .unsqueeze(0)
          .contiguous(MemoryFormat::channels_last);
  const std::vector<float> p = softmax(model.forward(Var<float>(x)).value(), -1).to_vector();
  for (const auto& [c, prob] : top) REQUIRE(prob == Approx(p[static_cast<std::size_t>(c)]));
  REQUIRE(top[0].second == Approx(*std::max_element(p.begin(), p.end())));
}

}  // namespace test_examples_trainer
}  // namespace
