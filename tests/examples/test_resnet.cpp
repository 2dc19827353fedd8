// examples/resnet50/resnet.hpp: torchvision's parameter counts for all five depths; ResNet-18's
// and ResNet-50's parameter and buffer names, shapes and state-dict order against torchvision's
// (tests/examples/data/resnet_names.json, written by make_resnet_fixtures.py); torchvision's
// initialisation; forward shapes (ImageNet stem, small stem); channels-last runs as contiguous
// does; torchvision's eval-mode logits from its state dict (make_torchvision_logits_fixture.py);
// one ResNet-50 SGD step on the CPU; ResNet-18 overfits a fixed batch; the summary table.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <ember/ember.hpp>
#include <ember/optim/sgd.hpp>

#include "resnet50/resnet.hpp"
#include "resnet50/weights.hpp"

namespace {
namespace test_examples_resnet {

using ember::Shape;
using ember::Tensor;
using ember::Var;
using resnet::Arch;
using resnet::ResNet;
namespace nn = ember::nn;

/// A name with its shape, as torchvision lists them.
using Entry = std::pair<std::string, std::vector<std::int64_t>>;

std::vector<std::int64_t> dims(const Shape& s) {
  std::vector<std::int64_t> out;
  for (int d = 0; d < s.rank(); ++d) out.push_back(s[d]);
  return out;
}

const nlohmann::json& fixture() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::filesystem::path(__FILE__).parent_path() / "data" / "resnet_names.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
  }();
  return j;
}

std::vector<Entry> torchvision_list(const std::string& arch, const std::string& what) {
  std::vector<Entry> out;
  for (const auto& e : fixture().at(arch).at(what)) {
    out.emplace_back(e.at(0).get<std::string>(), e.at(1).get<std::vector<std::int64_t>>());
  }
  return out;
}

std::vector<Entry> parameters_of(const nn::Module& m) {
  std::vector<Entry> out;
  for (const auto& [name, p] : m.named_parameters()) {
    out.emplace_back(name, dims(std::visit([](auto* v) { return v->shape(); }, p)));
  }
  return out;
}
std::vector<Entry> buffers_of(const nn::Module& m) {
  std::vector<Entry> out;
  for (const auto& [name, b] : m.named_buffers()) {
    out.emplace_back(name, dims(std::visit([](auto* t) { return t->shape(); }, b)));
  }
  return out;
}

/// PyTorch's state_dict() order: depth first, each module's own parameters, then its own
/// buffers, then its children (own and direct: no '.' in the name relative to the module).
void state_dict_order(const nn::Module& m, const std::string& prefix,
                      std::vector<std::string>& out) {
  for (const auto& [name, p] : m.named_parameters()) {
    if (name.find('.') == std::string::npos) out.push_back(prefix + name);
  }
  for (const auto& [name, b] : m.named_buffers()) {
    if (name.find('.') == std::string::npos) out.push_back(prefix + name);
  }
  for (const auto& [name, child] : m.named_modules()) {
    if (name.find('.') == std::string::npos) state_dict_order(*child, prefix + name + ".", out);
  }
}
std::vector<std::string> state_dict_order(const nn::Module& model) {
  std::vector<std::string> out;
  state_dict_order(model, "", out);
  return out;
}

/// Whether every element of t is `value`.
bool all_equal(const Tensor<float>& t, float value) {
  const std::vector<float> v = t.to_vector();
  return std::all_of(v.begin(), v.end(), [&](float e) { return e == value; });
}

double population_std(const Tensor<float>& t) {
  const std::vector<float> v = t.to_vector();
  double mean = 0, sq = 0;
  for (float x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (float x : v) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / static_cast<double>(v.size()));
}

TEST_CASE("resnet: architecture names", "[examples][resnet]") {
  for (Arch a : resnet::kArchs) REQUIRE(resnet::parse_arch(resnet::name(a)) == a);
  REQUIRE(resnet::parse_arch("resnet50") == Arch::resnet50);
  REQUIRE_THROWS_AS(resnet::parse_arch("resnet51"), ember::Error);
  REQUIRE_THROWS_WITH(resnet::parse_arch("ResNet50"),
                      Catch::Contains("'ResNet50'") &&
                          Catch::Contains("resnet18, resnet34, resnet50, resnet101, resnet152"));
  REQUIRE_THROWS_AS(resnet::parse_arch(""), ember::Error);
  REQUIRE_THROWS_WITH(ResNet<float>({.arch = Arch::resnet18, .num_classes = 0}),
                      Catch::Contains("resnet: num_classes and in_channels must be positive"));
}

TEST_CASE("resnet: parameter counts equal torchvision's for all five depths",
          "[examples][resnet]") {
  const std::vector<std::pair<Arch, std::int64_t>> expected{{Arch::resnet18, 11'689'512},
                                                            {Arch::resnet34, 21'797'672},
                                                            {Arch::resnet50, 25'557'032},
                                                            {Arch::resnet101, 44'549'160},
                                                            {Arch::resnet152, 60'192'808}};
  for (const auto& [arch, count] : expected) {
    INFO(resnet::name(arch));
    const ResNet<float> model({.arch = arch});
    REQUIRE(model.parameter_count() == count);
    REQUIRE(model.parameter_count(true) == count);
    REQUIRE_THAT(resnet::summary(model),
                 Catch::Contains("Total params: " + resnet::detail::thousands(count)));
  }
  REQUIRE(fixture().at("resnet18").at("parameter_count").get<std::int64_t>() == 11'689'512);
  REQUIRE(fixture().at("resnet50").at("parameter_count").get<std::int64_t>() == 25'557'032);
  // Other heads and inputs change only the stem and fc.
  const ResNet<float> small(
      {.arch = Arch::resnet18, .num_classes = 10, .in_channels = 1, .small_stem = true});
  REQUIRE(small.parameter_count() == 11'689'512 - (64 * 3 * 49 - 64 * 1 * 9) - 990 * 513);
}

TEST_CASE("resnet: ResNet-18 and ResNet-50 state dicts are torchvision's, name for name",
          "[examples][resnet]") {
  for (Arch arch : {Arch::resnet18, Arch::resnet50}) {
    const std::string key(resnet::name(arch));
    INFO(key);
    const ResNet<float> model({.arch = arch});
    REQUIRE(parameters_of(model) == torchvision_list(key, "parameters"));
    REQUIRE(buffers_of(model) == torchvision_list(key, "buffers"));
    REQUIRE(state_dict_order(model) ==
            fixture().at(key).at("state_dict").get<std::vector<std::string>>());
    // The parameter-free modules are there too, under torchvision's names.
    std::vector<std::string> modules;
    for (const auto& [name, m] : model.named_modules()) modules.push_back(name);
    for (const char* name : {"maxpool", "avgpool", "layer2.0.downsample", "layer4.1.bn2"}) {
      REQUIRE(std::count(modules.begin(), modules.end(), name) == 1);
    }
  }
}

TEST_CASE("resnet: torchvision's initialisation", "[examples][resnet]") {
  nn::manual_seed(0);
  const ResNet<float> model({.arch = Arch::resnet50});
  const auto& block = dynamic_cast<const resnet::Bottleneck<float>&>(model.layer3[0]);
  // v1.5: the stride is on the 3x3 conv.
  REQUIRE(block.conv1.options.stride == std::array<std::int64_t, 2>{1, 1});
  REQUIRE(block.conv2.options.stride == std::array<std::int64_t, 2>{2, 2});
  REQUIRE(block.downsample != nullptr);
  // kaiming_normal(fan_out, relu): std sqrt(2 / (out * kh * kw)).
  REQUIRE(population_std(block.conv2.weight.value()) ==
          Approx(std::sqrt(2.0 / (256 * 9))).epsilon(0.01));
  REQUIRE(population_std(block.conv3.weight.value()) ==
          Approx(std::sqrt(2.0 / 1024)).epsilon(0.01));
  REQUIRE(population_std(model.conv1.weight.value()) ==
          Approx(std::sqrt(2.0 / (64 * 49))).epsilon(0.03));
  // Batch norms weight 1, bias 0; fc as nn.Linear: U(+-1/sqrt(2048)) for both.
  REQUIRE(all_equal(block.bn3.weight.value(), 1.0f));
  REQUIRE(all_equal(block.bn3.bias.value(), 0.0f));
  const double bound = 1.0 / std::sqrt(2048.0);
  REQUIRE(population_std(model.fc.weight.value()) == Approx(bound / std::sqrt(3.0)).epsilon(0.01));
  const std::vector<float> fc_bias = model.fc.bias.value().to_vector();
  REQUIRE(
      std::all_of(fc_bias.begin(), fc_bias.end(), [&](float b) { return std::abs(b) <= bound; }));
  // The same seed gives the same model.
  nn::manual_seed(0);
  const ResNet<float> again({.arch = Arch::resnet18});
  nn::manual_seed(0);
  const ResNet<float> twin({.arch = Arch::resnet18});
  REQUIRE(again.fc.weight.value().to_vector() == twin.fc.weight.value().to_vector());
  REQUIRE(again.conv1.weight.value().to_vector() == twin.conv1.weight.value().to_vector());
}

TEST_CASE("resnet: zero_init_residual zeroes every block's last batch-norm weight",
          "[examples][resnet]") {
  for (Arch arch : {Arch::resnet18, Arch::resnet50}) {
    INFO(resnet::name(arch));
    const ResNet<float> model({.arch = arch, .zero_init_residual = true});
    const std::string last = arch == Arch::resnet18 ? "bn2" : "bn3";
    int zeroed = 0;
    for (const auto& [name, p] : model.named_parameters()) {
      if (name.rfind("layer", 0) != 0 || name.find("weight") == std::string::npos) continue;
      const auto* v = std::get<Var<float>*>(p);
      const bool is_last = name.find("." + last + ".weight") != std::string::npos;
      if (!is_last && name.find(".bn") == std::string::npos) continue;  // convs
      INFO(name);
      REQUIRE(all_equal(v->value(), is_last ? 0.0f : 1.0f));
      REQUIRE(v->requires_grad());
      zeroed += is_last;
    }
    REQUIRE(zeroed == (arch == Arch::resnet18 ? 8 : 16));
  }
}

TEST_CASE("resnet: forward shapes, ImageNet stem and small stem", "[examples][resnet]") {
  nn::manual_seed(1);
  const ResNet<float> imagenet({.arch = Arch::resnet18});
  const Var<float> x(ember::randn<float>(Shape{2, 3, 64, 64}, 7));
  REQUIRE(imagenet(x).shape() == Shape{2, 1000});
  REQUIRE_THROWS_WITH(imagenet(Var<float>(ember::zeros<float>(Shape{2, 1, 64, 64}))),
                      Catch::Contains("resnet: input must be [N, 3, H, W]"));
  const std::string table = resnet::summary(imagenet, Shape{2, 3, 64, 64});
  INFO(table);
  REQUIRE_THAT(table, Catch::Contains("[2, 64, 32, 32]"));  // conv1
  REQUIRE_THAT(table, Catch::Contains("[2, 64, 16, 16]"));  // maxpool, layer1
  REQUIRE_THAT(table, Catch::Contains("[2, 512, 2, 2]"));   // layer4
  REQUIRE_THAT(table, Catch::Contains("[2, 1000]"));        // fc
  REQUIRE_THAT(table, Catch::Contains("(2,099,712)"));      // layer3's parameters
  REQUIRE_THAT(table, Catch::Contains("Total params: 11,689,512"));

  const ResNet<float> small(
      {.arch = Arch::resnet18, .num_classes = 10, .in_channels = 1, .small_stem = true});
  const Var<float> digits(ember::randn<float>(Shape{3, 1, 28, 28}, 8));
  REQUIRE(small(digits).shape() == Shape{3, 10});
  const std::string small_table = resnet::summary(small, Shape{3, 1, 28, 28});
  INFO(small_table);
  REQUIRE_THAT(small_table, Catch::Contains("[3, 64, 28, 28]"));
  REQUIRE_THAT(small_table, Catch::Contains("[3, 512, 4, 4]"));
  REQUIRE_THAT(small_table, !Catch::Contains("maxpool"));
}

TEST_CASE("resnet: channels-last runs NHWC from the stem on, as contiguous does",
          "[examples][resnet]") {
  using ember::MemoryFormat;
  for (std::int64_t channels : {1, 3}) {
    INFO(channels << " input channel(s)");
    const auto build = [&](MemoryFormat format) {
      nn::manual_seed(3);
      return std::make_unique<ResNet<float>>(resnet::ResNetOptions{.arch = Arch::resnet18,
                                                                   .num_classes = 10,
                                                                   .in_channels = channels,
                                                                   .small_stem = true,
                                                                   .format = format});
    };
    const auto nchw = build(MemoryFormat::contiguous);
    const auto nhwc = build(MemoryFormat::channels_last);
    const Tensor<float> images = ember::randn<float>(Shape{2, channels, 16, 16}, 9);
    const Tensor<float> stem_nhwc = nhwc->stem(Var<float>(images)).value();
    REQUIRE(stem_nhwc.is_contiguous(MemoryFormat::channels_last));
    REQUIRE_FALSE(stem_nhwc.is_contiguous());
    REQUIRE(nchw->stem(Var<float>(images)).value().is_contiguous());
    // An NHWC input to the contiguous model is converted back.
    REQUIRE(nchw->stem(Var<float>(images.contiguous(MemoryFormat::channels_last)))
                .value()
                .is_contiguous());

    const Tensor<std::int64_t> labels = ember::from_vector<std::int64_t>({3, 7});
    Var<float> a = ember::cross_entropy((*nchw)(Var<float>(images)), labels);
    Var<float> b = ember::cross_entropy((*nhwc)(Var<float>(images)), labels);
    REQUIRE(b.value().item() == Approx(a.value().item()).epsilon(1e-4));
    a.backward();
    b.backward();
    const auto pa = nchw->named_parameters(), pb = nhwc->named_parameters();
    REQUIRE(pa.size() == pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
      INFO(pa[i].first);
      const std::vector<float> x = std::get<Var<float>*>(pa[i].second)->grad().to_vector();
      const std::vector<float> y = std::get<Var<float>*>(pb[i].second)->grad().to_vector();
      REQUIRE(x.size() == y.size());
      double err = 0, scale = 0;
      for (std::size_t k = 0; k < x.size(); ++k) {
        err = std::max(err, static_cast<double>(std::abs(x[k] - y[k])));
        scale = std::max(scale, static_cast<double>(std::abs(x[k])));
      }
      REQUIRE(err <= 1e-3 * scale + 1e-6);
    }
  }
}

TEST_CASE("resnet: one ResNet-50 SGD step at 64x64 on the CPU", "[examples][resnet]") {
  nn::manual_seed(2);
  ResNet<float> model({.arch = Arch::resnet50});
  ember::optim::SGD opt(model, {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4});
  const Var<float> x(ember::randn<float>(Shape{2, 3, 64, 64}, 11));
  const Tensor<std::int64_t> y = ember::from_vector<std::int64_t>({17, 503});
  const std::vector<float> fc_before = model.fc.weight.value().to_vector();
  Var<float> loss = ember::cross_entropy(model(x), y);
  const float l = loss.value().item();
  INFO("loss " << l);
  REQUIRE(std::isfinite(l));
  REQUIRE(l > 3.0f);  // about log(1000) = 6.9 for a fresh model
  loss.backward();
  std::int64_t with_grad = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    INFO(name);
    const Var<float>& v = *std::get<Var<float>*>(p);
    REQUIRE(v.grad().defined());
    REQUIRE(v.grad().shape() == v.shape());
    const std::vector<float> g = v.grad().to_vector();
    REQUIRE(std::all_of(g.begin(), g.end(), [](float e) { return std::isfinite(e); }));
    with_grad += v.shape().numel();
  }
  REQUIRE(with_grad == 25'557'032);
  REQUIRE(model.bn1.num_batches_tracked.item() == 1);
  opt.step();
  opt.zero_grad();
  REQUIRE(model.fc.weight.value().to_vector() != fc_before);
}

TEST_CASE("resnet: torchvision's eval-mode logits from its state dict (--init-checkpoint)",
          "[examples][resnet]") {
  // make_torchvision_logits_fixture.py: torchvision's ResNet-18 narrowed to width 8 with random
  // float16 weights and batch-norm statistics, and its logits for two images in float64.
  const std::filesystem::path data = std::filesystem::path(__FILE__).parent_path() / "data";
  const ember::NamedTensors fixture =
      ember::io::load_safetensors(data / "torchvision_resnet18_w8_logits.safetensors");
  const Tensor<float> input = ember::get_tensor<float>(fixture, "input");
  const std::vector<float> want = ember::get_tensor<float>(fixture, "logits").to_vector();
  REQUIRE(want.size() == 20);
  for (const ember::MemoryFormat format :
       {ember::MemoryFormat::contiguous, ember::MemoryFormat::channels_last}) {
    INFO("format " << (format == ember::MemoryFormat::contiguous ? "NCHW" : "channels-last"));
    ResNet<float> model({.arch = Arch::resnet18, .num_classes = 10, .width = 8, .format = format});
    resnet::load_weights(model, data / "torchvision_resnet18_w8.safetensors");  // float16 in
    model.eval();
    const ember::no_grad guard;
    const Var<float> x(input.contiguous(format));
    const std::vector<float> got = model(x).value().to_vector();
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      REQUIRE(got[i] == Approx(want[i]).epsilon(1e-4).margin(1e-4));
    }
    // The running statistics are what eval mode reads: batch statistics give other logits.
    model.train();
    const std::vector<float> batch_stats = model(x).value().to_vector();
    double apart = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      apart = std::max(apart, std::abs(static_cast<double>(batch_stats[i]) - want[i]));
    REQUIRE(apart > 1e-2);
  }
}

TEST_CASE("resnet: ResNet-18 (small stem) overfits a fixed batch", "[examples][resnet]") {
  nn::manual_seed(4);
  ResNet<float> model(
      {.arch = Arch::resnet18, .num_classes = 10, .in_channels = 1, .small_stem = true});
  ember::optim::SGD opt(model, {.lr = 0.05, .momentum = 0.9});
  const Var<float> x(ember::randn<float>(Shape{8, 1, 28, 28}, 12));
  const Tensor<std::int64_t> y = ember::from_vector<std::int64_t>({0, 1, 2, 3, 4, 5, 6, 7});
  float first = 0, last = 0;
  int steps = 0;
  for (; steps < 30; ++steps) {
    Var<float> loss = ember::cross_entropy(model(x), y);
    last = loss.value().item();
    REQUIRE(std::isfinite(last));
    if (steps == 0) first = last;
    if (last < 0.05f * first) break;  // memorised: no need to spend the rest
    loss.backward();
    opt.step();
    opt.zero_grad();
  }
  INFO("loss " << first << " -> " << last << " in " << steps << " steps");
  REQUIRE(last < 0.5f * first);
  // Every training image is now classified right.
  const Tensor<std::int64_t> predicted = ember::argmax(model(x).value(), 1);
  REQUIRE(predicted.to_vector() == y.to_vector());
}

}  // namespace test_examples_resnet
}  // namespace
