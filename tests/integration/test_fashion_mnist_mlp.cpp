// The training runtime end to end on real data: an MLP (784-256-10, dropout) trained on
// Fashion-MNIST from Debian's dataset-fashion-mnist with AdamW, warmup + cosine decay and
// gradient clipping reaches >= 85% test accuracy in three epochs; a checkpoint taken after the
// first epoch resumes to the same accuracy bit for bit. (docs/training.md walks through it.)
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <vector>

#include <ember/data/batches.hpp>
#include <ember/data/fashion_mnist.hpp>
#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>
#include <ember/optim/adamw.hpp>
#include <ember/optim/schedule.hpp>

using namespace ember;

namespace {
namespace test_integration_fashion_mnist_mlp {

struct Mlp : nn::Module {
  nn::Linear<float> fc1{784, 256, {.activation = Activation::relu}};
  nn::Dropout<float> drop{0.1};
  nn::Linear<float> fc2{256, 10};
  Mlp() {
    register_module("fc1", fc1);
    register_module("drop", drop);
    register_module("fc2", fc2);
  }
  Var<float> forward(const Var<float>& images) const {
    return fc2(drop(fc1(images.reshape(Shape{images.shape()[0], 784}))));
  }
};

/// Top-1 accuracy on `set`, in batches, without recording.
double accuracy(Mlp& model, const data::FashionMnist& set) {
  model.eval();
  no_grad guard;
  double correct = 0;
  for (std::int64_t b = 0; b < set.size(); b += 1000) {
    const std::int64_t n = std::min<std::int64_t>(1000, set.size() - b);
    const Var<float> x(set.images().slice(0, b, b + n));
    const Tensor<std::int64_t> y = set.labels().slice(0, b, b + n);
    correct += sum(cast<double>(argmax(model.forward(x).value(), 1) == y)).item();
  }
  model.train();
  return correct / static_cast<double>(set.size());
}

struct Training {
  static constexpr std::int64_t kBatch = 128, kEpochs = 3;
  const data::FashionMnist& train_set;
  Mlp model;
  data::Batches batches{train_set.size(), kBatch, {.seed = 7, .drop_last = true}};
  optim::AdamW opt{model, {.lr = 2e-3, .weight_decay = 1e-4}};
  optim::Schedule lr = optim::warmup(
      100, optim::CosineDecay(2e-3, kEpochs* batches.batches_per_epoch() - 100, 1e-5));
  std::int64_t step = 0;

  explicit Training(const data::FashionMnist& set) : train_set(set) {}

  /// Trains until `epochs` epochs are done.
  void run_until(std::int64_t epochs) {
    for (; batches.epoch() < epochs; batches.next_epoch()) {
      while (batches.has_next()) {
        const std::vector<std::int64_t> idx = batches.next();
        const Var<float> x(data::gather_rows(train_set.images(), idx));
        const Tensor<std::int64_t> y = data::gather_rows(train_set.labels(), idx);
        Var<float> loss = cross_entropy(model.forward(x), y);
        loss.backward();
        opt.set_lr(lr(step++));
        opt.clip_grad_norm(5.0);
        opt.step();
        opt.zero_grad();
      }
    }
  }
  void save(const std::filesystem::path& path) const {
    io::save_training_checkpoint(
        path, model, opt,
        {.step = step,
         .epoch = batches.epoch(),
         .extra = {{"data.position", std::to_string(batches.position())}}});
  }
  void load(const std::filesystem::path& path) {
    const io::TrainingProgress p = io::load_training_checkpoint(path, model, opt);
    step = p.step;
    batches.restore(p.epoch, std::stoll(p.extra.at("data.position")));
  }
};

TEST_CASE("an MLP learns Fashion-MNIST to >= 85% test accuracy; a resumed run is identical",
          "[integration]") {
  const data::FashionMnist train_set(data::Split::train, data::FashionMnist::kMean,
                                     data::FashionMnist::kStd);
  const data::FashionMnist test_set(data::Split::test, data::FashionMnist::kMean,
                                    data::FashionMnist::kStd);
  REQUIRE(train_set.size() == 60000);
  REQUIRE(test_set.size() == 10000);
  const std::filesystem::path ckpt = std::filesystem::temp_directory_path() /
                                     ("ember_mlp_" + std::to_string(::getpid()) + ".safetensors");

  nn::manual_seed(1);
  Training straight(train_set);
  straight.run_until(1);
  straight.save(ckpt);
  straight.run_until(Training::kEpochs);
  const double acc = accuracy(straight.model, test_set);
  INFO("test accuracy " << acc);
  REQUIRE(acc >= 0.85);

  nn::manual_seed(999);  // another initialisation: the checkpoint replaces it
  Training resumed(train_set);
  resumed.load(ckpt);
  REQUIRE(resumed.step == resumed.batches.batches_per_epoch());
  resumed.run_until(Training::kEpochs);
  REQUIRE(resumed.model.fc2.weight.value().to_vector() ==
          straight.model.fc2.weight.value().to_vector());
  REQUIRE(accuracy(resumed.model, test_set) == acc);
  std::filesystem::remove(ckpt);
}

}  // namespace test_integration_fashion_mnist_mlp
}  // namespace
