// io::save/io::load of modules and training checkpoints: round trips, a PyTorch state dict
// loaded into the matching ember module (its output reproduced), the file's header read by an
// independent parser, bad files refused naming the tensor with the module left unchanged, and a
// resumed run whose losses equal the uninterrupted run's bit for bit.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>
#include <ember/optim/adamw.hpp>
#include <ember/optim/sgd.hpp>

#include "support/child_process.hpp"
#include "support/files.hpp"

namespace fs = std::filesystem;
using ember::Shape;
using ember::Tensor;
using ember::Var;
namespace io = ember::io;
namespace nn = ember::nn;
namespace optim = ember::optim;

using ember::testing::read_bytes;
using ember::testing::TempDir;
using ember::testing::write_bytes;

namespace {
namespace test_io_checkpoint {

/// A batch norm over [N, C] with PyTorch's parameter and buffer names (BatchNorm1d).
struct Norm1d : nn::Module {
  Var<float> weight = ember::param(ember::ones<float>(Shape{3}));
  Var<float> bias = ember::param(ember::zeros<float>(Shape{3}));
  Tensor<float> running_mean = ember::zeros<float>(Shape{3});
  Tensor<float> running_var = ember::ones<float>(Shape{3});
  Tensor<std::int64_t> num_batches_tracked = ember::zeros<std::int64_t>(Shape{});
  Norm1d() {
    register_parameter("weight", weight);
    register_parameter("bias", bias);
    register_buffer("running_mean", running_mean);
    register_buffer("running_var", running_var);
    register_buffer("num_batches_tracked", num_batches_tracked);
  }
  Var<float> forward(const Var<float>& x) const {
    return ember::batch_norm(x, weight, bias, running_mean, running_var, is_training());
  }
};

/// torch.nn.Sequential(Linear(4, 8), ReLU(), Linear(8, 3), BatchNorm1d(3)), named as PyTorch
/// names it.
struct Mlp : nn::Module {
  nn::Linear<float> fc1{4, 8};
  nn::Linear<float> fc2{8, 3};
  Norm1d norm;
  Mlp() {
    register_module("0", fc1);
    register_module("2", fc2);
    register_module("3", norm);
  }
  Var<float> forward(const Var<float>& x) const {
    return norm.forward(fc2(Var<float>(ember::relu(fc1(x)))));
  }
};

fs::path data_file(const char* name) { return fs::path(__FILE__).parent_path() / "data" / name; }

std::vector<float> values(const Tensor<float>& t) { return t.contiguous().to_vector(); }

TEST_CASE("io::load reads a PyTorch state dict and reproduces the model's output", "[io]") {
  nn::manual_seed(1);
  Mlp m;
  m.eval();
  const fs::path file = data_file("torch_mlp.safetensors");
  // The file also holds the test's input and output: strict loading refuses them...
  REQUIRE_THROWS_WITH(io::load(m, file),
                      Catch::Contains("'test.input'") && Catch::Contains("allow_unexpected"));
  // ...and the failed load changed nothing.
  REQUIRE(m.norm.num_batches_tracked.item() == 0);
  io::load(m, file, {.allow_unexpected = true});
  REQUIRE(m.norm.num_batches_tracked.item() == 42);
  const auto all = io::load_safetensors(file);
  const Var<float> x(io::get_tensor<float>(all, "test.input"));
  const Tensor<float> want = io::get_tensor<float>(all, "test.output");
  const Tensor<float> got = m.forward(x).value();
  const auto g = values(got), w = values(want);
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i) REQUIRE(g[i] == Approx(w[i]).epsilon(1e-5));
}

TEST_CASE("io::save writes the module's names and dtypes; io::load restores them", "[io]") {
  TempDir dir;
  nn::manual_seed(2);
  Mlp a;
  Tensor<std::int64_t> steps = a.norm.num_batches_tracked;
  steps = std::int64_t{7};
  io::save(a, dir / "m.safetensors", {{"note", "test"}});

  // An independent reading of the header: 8 bytes of length, then JSON.
  std::ifstream in(dir / "m.safetensors", std::ios::binary);
  std::uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, ' ');
  in.read(header.data(), static_cast<std::streamsize>(n));
  const nlohmann::json h = nlohmann::json::parse(header);
  REQUIRE(h["0.weight"]["dtype"] == "F32");
  REQUIRE(h["0.weight"]["shape"] == nlohmann::json::array({8, 4}));
  REQUIRE(h["3.num_batches_tracked"]["dtype"] == "I64");
  REQUIRE(h["3.num_batches_tracked"]["shape"] == nlohmann::json::array());
  REQUIRE(h["__metadata__"]["note"] == "test");
  REQUIRE(h.size() == 10);  // 9 tensors and the metadata

  nn::manual_seed(3);
  Mlp b;
  REQUIRE(values(b.fc1.weight.value()) != values(a.fc1.weight.value()));
  const float* before = b.fc1.weight.value().data();
  io::load(b, dir / "m.safetensors");
  REQUIRE(b.fc1.weight.value().data() == before);  // into the same storage: optimizers keep it
  // The same names in the same order, with the same values.
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].first);
    REQUIRE(pa[i].first == pb[i].first);
    REQUIRE(values(std::get<Var<float>*>(pb[i].second)->value()) ==
            values(std::get<Var<float>*>(pa[i].second)->value()));
  }
  REQUIRE(b.norm.num_batches_tracked.item() == 7);
}

TEST_CASE("io::load refuses mismatched files, naming the tensor, and changes nothing", "[io]") {
  TempDir dir;
  nn::manual_seed(4);
  Mlp m;
  const std::vector<float> original = values(m.fc1.weight.value());
  auto state = io::state_dict(m);
  auto write_without = [&](const std::string& drop) {
    ember::NamedTensors t;
    for (const auto& [n, v] : state) {
      if (n != drop) t.emplace_back(n, v);
    }
    return t;
  };
  auto replace = [&](const std::string& name, ember::AnyTensor with) {
    ember::NamedTensors t = state;
    for (auto& [n, v] : t) {
      if (n == name) v = with;
    }
    return t;
  };
  // Every file also carries a changed fc1.weight, which must not land.
  for (auto& [n, v] : state) {
    if (n == "0.weight") v = ember::AnyTensor(ember::full<float>(Shape{8, 4}, 9.0));
  }
  io::save_safetensors(write_without("2.bias"), dir / "missing.safetensors");
  REQUIRE_THROWS_WITH(io::load(m, dir / "missing.safetensors"),
                      Catch::Contains("no tensor '2.bias'"));
  io::save_safetensors(replace("2.weight", ember::zeros<float>(Shape{3, 9})),
                       dir / "shape.safetensors");
  REQUIRE_THROWS_WITH(io::load(m, dir / "shape.safetensors"),
                      Catch::Contains("'2.weight'") && Catch::Contains("[3, 9]"));
  io::save_safetensors(replace("2.weight", ember::zeros<double>(Shape{3, 8})),
                       dir / "dtype.safetensors");
  REQUIRE_THROWS_WITH(io::load(m, dir / "dtype.safetensors"),
                      Catch::Contains("'2.weight'") && Catch::Contains("float64"));
  REQUIRE(values(m.fc1.weight.value()) == original);

  // A truncated file is refused as a file.
  io::save(m, dir / "good.safetensors");
  fs::resize_file(dir / "good.safetensors", fs::file_size(dir / "good.safetensors") - 5);
  REQUIRE_THROWS_AS(io::load(m, dir / "good.safetensors"), ember::Error);
  REQUIRE(values(m.fc1.weight.value()) == original);
  // A plain model file is not a training checkpoint.
  io::save(m, dir / "plain.safetensors");
  optim::SGD opt(m, {});
  REQUIRE_THROWS_WITH(io::load_training_checkpoint(dir / "plain.safetensors", m, opt),
                      Catch::Contains("not an ember training checkpoint"));
}

namespace {

/// A small run: an MLP with dropout learning a fixed random regression, AdamW, data order and
/// dropout masks drawn from ember's Philox streams. Returns the loss of every step in
/// [first, last).
struct Run {
  Mlp model;
  optim::AdamW opt{model, {.lr = 1e-2}};
  Tensor<float> inputs = ember::randn<float>(Shape{64, 4}, 11);
  Tensor<float> targets = ember::randn<float>(Shape{64, 3}, 12);

  std::vector<float> train(std::int64_t first, std::int64_t last) {
    std::vector<float> losses;
    for (std::int64_t step = first; step < last; ++step) {
      // The batch: 16 rows from a permutation drawn from the step number.
      const Tensor<float> pick = ember::rand<float>(Shape{16}, 99, ember::Device::cpu(), 0.0, 64.0,
                                                    static_cast<std::uint64_t>(step) * 16);
      Tensor<float> x = ember::empty<float>(Shape{16, 4}), y = ember::empty<float>(Shape{16, 3});
      for (std::int64_t i = 0; i < 16; ++i) {
        const auto row = static_cast<std::int64_t>(pick.data()[i]);
        std::memcpy(x.data() + i * 4, inputs.data() + row * 4, 4 * sizeof(float));
        std::memcpy(y.data() + i * 3, targets.data() + row * 3, 3 * sizeof(float));
      }
      const auto [seed, offset] = nn::reserve_random(16 * 3);
      const Var<float> out = ember::dropout(model.forward(Var<float>(x)), 0.1, true, seed, offset);
      Var<float> loss = ember::mse_loss(out, Var<float>(y));
      losses.push_back(loss.value().item());
      loss.backward();
      opt.step();
      opt.zero_grad();
    }
    return losses;
  }
};

}  // namespace

TEST_CASE("a training checkpoint resumes bit for bit", "[io]") {
  TempDir dir;
  nn::manual_seed(5);
  Run straight;
  const std::vector<float> all = straight.train(0, 8);

  nn::manual_seed(5);
  Run first;
  const std::vector<float> head = first.train(0, 4);
  REQUIRE(head == std::vector<float>(all.begin(), all.begin() + 4));
  io::save_training_checkpoint(dir / "ckpt.safetensors", first.model, first.opt,
                               {.step = 4, .epoch = 1, .extra = {{"data.position", "64"}}});

  nn::manual_seed(123);  // another model and another stream: the checkpoint restores both
  Run resumed;
  nn::reserve_random(1000);
  const io::TrainingProgress p =
      io::load_training_checkpoint(dir / "ckpt.safetensors", resumed.model, resumed.opt);
  REQUIRE(p.step == 4);
  REQUIRE(p.epoch == 1);
  REQUIRE(p.extra.at("data.position") == "64");
  REQUIRE(resumed.opt.steps() == 4);
  const std::vector<float> tail = resumed.train(p.step, 8);
  REQUIRE(tail == std::vector<float>(all.begin() + 4, all.end()));

  SECTION("a save that fails midway leaves the previous checkpoint loadable") {
    const int status = ember::testing::run_in_child([&] {
      // Files of at most 512 bytes: the save fails with EFBIG after its temporary file is created.
      ::signal(SIGXFSZ, SIG_IGN);
      const rlimit lim{1 << 9, 1 << 9};
      int code = 0;
      if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) code = 10;
      try {
        io::save_training_checkpoint(dir / "ckpt.safetensors", straight.model, straight.opt,
                                     {.step = 8});
        code = 11;
      } catch (const ember::Error&) {
      }
      return code;
    });
    REQUIRE(status == 0);
    nn::manual_seed(77);
    Run again;
    REQUIRE(io::load_training_checkpoint(dir / "ckpt.safetensors", again.model, again.opt).step ==
            4);
    REQUIRE(again.train(4, 8) == std::vector<float>(all.begin() + 4, all.end()));
  }
  SECTION("a checkpoint for another optimizer setup is refused before anything changes") {
    nn::manual_seed(9);
    Mlp other;
    optim::AdamW fewer(std::vector{other.fc1.weight}, {});
    const std::vector<float> before = values(other.fc1.weight.value());
    REQUIRE_THROWS_WITH(io::load_training_checkpoint(dir / "ckpt.safetensors", other, fewer),
                        Catch::Contains("another model or optimizer"));
    REQUIRE(values(other.fc1.weight.value()) == before);
  }
}

}  // namespace test_io_checkpoint
}  // namespace
