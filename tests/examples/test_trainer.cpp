// The ResNet trainer (examples/resnet50/train_main.hpp) on a slice of the real Fashion-MNIST:
// a run interrupted after its first epoch and resumed from its checkpoint ends with the same
// weights, batch-norm statistics and optimizer state, bit for bit, as the uninterrupted run.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "resnet50/train_main.hpp"

namespace fs = std::filesystem;
using namespace ember;

namespace {

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

}  // namespace

TEST_CASE("the ResNet trainer resumes an interrupted run exactly", "[examples]") {
  const fs::path dir = fs::temp_directory_path() / ("ember_trainer_" + std::to_string(::getpid()));
  fs::remove_all(dir);

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
  REQUIRE(a.size() == b.size());
  REQUIRE(a.size() > 100);  // weights, BN statistics, momentum buffers, steps
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    REQUIRE(a[i].first == b[i].first);
    a[i].second.visit([&](const auto& t) {
      using T = typename std::remove_cvref_t<decltype(t)>::value_type;
      REQUIRE(t.to_vector() == b[i].second.template as<T>().to_vector());
    });
  }
  fs::remove_all(dir);
}
