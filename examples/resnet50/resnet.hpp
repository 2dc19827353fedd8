// The ResNet family (He et al., "Deep Residual Learning for Image Recognition", 2015) as
// torchvision builds it, for examples/resnet50/train.cpp: ResNet-18/34 of BasicBlocks and
// ResNet-50/101/152 of Bottlenecks, v1.5 (the stride of a downsampling Bottleneck is on its
// 3x3 conv, conv2, as torchvision and MLPerf have it).
//
//   resnet::ResNet<float> model({.arch = resnet::Arch::resnet50, .num_classes = 1000});
//   ember::Var<float> logits = model(images);          // [N, 3, H, W] -> [N, 1000]
//   std::cout << resnet::summary(model);               // stages, shapes, 25,557,032 parameters
//
// Module names are torchvision's (conv1, bn1, layer1.0.conv1, layer2.0.downsample.0, fc, ...),
// so a state dict maps one to one (io::load reads torchvision's weights saved as safetensors).
// Initialisation is torchvision's: convs kaiming_normal(mode = fan_out, relu), batch norms
// weight 1 and bias 0, fc as nn.Linear's default; zero_init_residual zeroes each block's last
// batch-norm weight, so every residual branch starts as the identity.
//
// The code reads as the reference does while ember fuses underneath: every "bn, (+ identity),
// relu" is one BatchNorm2d::forward_add_relu pass after the statistics, and the stem's and
// blocks' convolutions are one conv2d each (cuDNN on the GPU, oneDNN on the CPU).
//
// Memory format: with ResNetOptions::format = channels_last, forward converts its input to NHWC
// once at the stem (a one-channel input, dense in both layouts, is only restrided);
// every conv, batch norm and pool after it keeps the layout of its input, so the whole network
// runs channels-last (cuDNN's NHWC tensor-core kernels for bf16/half; oneDNN's brgconv
// kernels on the CPU, and batch norm's channels-last loops). The conv
// weights stay in their default NCHW layout: cuDNN describes a filter by its own layout and takes
// NHWC activations with an NCHW filter, oneDNN reorders the weight into its own blocked
// layout whichever layout it has, and conv2d's backward writes the weight
// gradient NCHW, so an NHWC weight would get its gradient in the other layout.
//
// Model code, as a user writes it: no build plumbing. In a CUDA build a program compiles it in
// its .cu files (docs/design.md, "One source, two kinds of translation unit").
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <ember/ember.hpp>

#include "common/format.hpp"

namespace resnet {

enum class Arch { resnet18, resnet34, resnet50, resnet101, resnet152 };

inline constexpr std::array<Arch, 5> kArchs{Arch::resnet18, Arch::resnet34, Arch::resnet50,
                                            Arch::resnet101, Arch::resnet152};

inline std::string_view name(Arch arch) {
  switch (arch) {
    case Arch::resnet18:
      return "resnet18";
    case Arch::resnet34:
      return "resnet34";
    case Arch::resnet50:
      return "resnet50";
    case Arch::resnet101:
      return "resnet101";
    case Arch::resnet152:
      return "resnet152";
  }
  ember::fail("resnet: unknown Arch ", static_cast<int>(arch));
}

/// "resnet50" -> Arch::resnet50; anything else is an ember::Error listing the valid names.
inline Arch parse_arch(std::string_view text) {
  std::string valid;
  for (Arch a : kArchs) {
    if (name(a) == text) return a;
    valid += (valid.empty() ? "" : ", ") + std::string(name(a));
  }
  ember::fail("resnet: unknown architecture '", std::string(text), "' (valid: ", valid, ")");
}

/// The block type and the number of blocks in layer1..layer4 (the paper's table 1).
struct ArchSpec {
  bool bottleneck;
  std::array<int, 4> blocks;
};
inline ArchSpec spec(Arch arch) {
  switch (arch) {
    case Arch::resnet18:
      return {false, {2, 2, 2, 2}};
    case Arch::resnet34:
      return {false, {3, 4, 6, 3}};
    case Arch::resnet50:
      return {true, {3, 4, 6, 3}};
    case Arch::resnet101:
      return {true, {3, 4, 23, 3}};
    case Arch::resnet152:
      return {true, {3, 8, 36, 3}};
  }
  ember::fail("resnet: unknown Arch ", static_cast<int>(arch));
}

struct ResNetOptions {
  Arch arch = Arch::resnet50;
  std::int64_t num_classes = 1000;
  std::int64_t in_channels = 3;
  /// A 3x3 stride-1 stem conv and no max-pool, for 28-32 px inputs (Fashion-MNIST, CIFAR).
  bool small_stem = false;
  /// Each block's last batch-norm weight starts at 0 (torchvision's option).
  bool zero_init_residual = false;
  /// Channels of the stem and of layer1 (64 in torchvision); every stage scales with it. A
  /// narrower net (16) trains Fashion-MNIST on a CPU in minutes.
  std::int64_t width = 64;
  ember::Device device = ember::Device::cpu();
  /// The activations' layout: channels_last (the default: the faster on both devices) runs
  /// the network NHWC (see the top of this file); contiguous runs it NCHW.
  ember::MemoryFormat format = ember::MemoryFormat::channels_last;
};

namespace detail {

/// torchvision's conv init: kaiming_normal_(mode='fan_out', nonlinearity='relu'), i.e.
/// N(0, 2 / fan_out) with fan_out = out_channels * kh * kw.
template <ember::FloatingElement T>
void kaiming_normal_fan_out(ember::nn::Conv2d<T>& conv) {
  const ember::Shape shape = conv.weight.shape();
  const double fan_out = ember::nn::init::fans(shape).second;
  conv.weight = ember::param(ember::nn::init::normal<T>(shape, 0.0, std::sqrt(2.0 / fan_out),
                                                        conv.weight.value().device()));
}

}  // namespace detail

/// torchvision's `downsample`: conv1x1(in, out, stride) then a batch norm, as an nn::Sequential
/// ("downsample.0", "downsample.1").
template <ember::FloatingElement T>
std::unique_ptr<ember::nn::Sequential<T>> make_downsample(std::int64_t in, std::int64_t out,
                                                          std::int64_t stride,
                                                          ember::Device device) {
  auto seq = std::make_unique<ember::nn::Sequential<T>>();
  seq->template emplace<ember::nn::Conv2d<T>>(
      in, out, 1, ember::nn::Conv2dOptions{.stride = {stride, stride}, .bias = false}, device);
  seq->template emplace<ember::nn::BatchNorm2d<T>>(out, ember::nn::BatchNorm2dOptions{}, device);
  return seq;
}

/// ResNet-18/34's block: two 3x3 convs; the first carries the stride.
template <ember::FloatingElement T = float>
class BasicBlock : public ember::nn::Module {
 public:
  static constexpr std::int64_t expansion = 1;

  ember::nn::Conv2d<T> conv1;
  ember::nn::BatchNorm2d<T> bn1;
  ember::nn::Conv2d<T> conv2;
  ember::nn::BatchNorm2d<T> bn2;
  std::unique_ptr<ember::nn::Sequential<T>> downsample;  // null: the identity shortcut

  BasicBlock(std::int64_t inplanes, std::int64_t planes, std::int64_t stride, bool with_downsample,
             ember::Device device)
      : conv1(inplanes, planes, 3, {.stride = {stride, stride}, .padding = {1, 1}, .bias = false},
              device),
        bn1(planes, {}, device),
        conv2(planes, planes, 3, {.padding = {1, 1}, .bias = false}, device),
        bn2(planes, {}, device) {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    if (with_downsample) {
      downsample = make_downsample<T>(inplanes, planes * expansion, stride, device);
      register_module("downsample", *downsample);
    }
  }

  ember::Var<T> forward(const ember::Var<T>& x) const {
    const ember::Var<T> identity = downsample ? (*downsample)(x) : x;
    const ember::Var<T> out = bn1.forward_add_relu(conv1(x), {});  // relu(bn1(conv1(x)))
    return bn2.forward_add_relu(conv2(out), identity);             // relu(bn2(..) + identity)
  }
  ember::Var<T> operator()(const ember::Var<T>& x) const { return forward(x); }

  /// Shape inference, for summary(): the output shape for an input of shape `in`.
  ember::Shape output_shape(const ember::Shape& in) const {
    return conv2.output_shape(conv1.output_shape(in));
  }
  /// The batch norm that ends the residual branch (zero_init_residual zeroes its weight).
  ember::nn::BatchNorm2d<T>& last_bn() { return bn2; }
};

/// ResNet-50/101/152's block: 1x1 (reduce to `planes`), 3x3 (carries the stride: v1.5),
/// 1x1 (expand to 4 * planes).
template <ember::FloatingElement T = float>
class Bottleneck : public ember::nn::Module {
 public:
  static constexpr std::int64_t expansion = 4;

  ember::nn::Conv2d<T> conv1;
  ember::nn::BatchNorm2d<T> bn1;
  ember::nn::Conv2d<T> conv2;
  ember::nn::BatchNorm2d<T> bn2;
  ember::nn::Conv2d<T> conv3;
  ember::nn::BatchNorm2d<T> bn3;
  std::unique_ptr<ember::nn::Sequential<T>> downsample;  // null: the identity shortcut

  Bottleneck(std::int64_t inplanes, std::int64_t planes, std::int64_t stride, bool with_downsample,
             ember::Device device)
      : conv1(inplanes, planes, 1, {.bias = false}, device),
        bn1(planes, {}, device),
        conv2(planes, planes, 3, {.stride = {stride, stride}, .padding = {1, 1}, .bias = false},
              device),
        bn2(planes, {}, device),
        conv3(planes, planes * expansion, 1, {.bias = false}, device),
        bn3(planes * expansion, {}, device) {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    register_module("conv3", conv3);
    register_module("bn3", bn3);
    if (with_downsample) {
      downsample = make_downsample<T>(inplanes, planes * expansion, stride, device);
      register_module("downsample", *downsample);
    }
  }

  ember::Var<T> forward(const ember::Var<T>& x) const {
    const ember::Var<T> identity = downsample ? (*downsample)(x) : x;
    ember::Var<T> out = bn1.forward_add_relu(conv1(x), {});  // relu(bn1(conv1(x)))
    out = bn2.forward_add_relu(conv2(out), {});              // relu(bn2(conv2(out)))
    return bn3.forward_add_relu(conv3(out), identity);       // relu(bn3(conv3(out)) + identity)
  }
  ember::Var<T> operator()(const ember::Var<T>& x) const { return forward(x); }

  ember::Shape output_shape(const ember::Shape& in) const {
    return conv3.output_shape(conv2.output_shape(conv1.output_shape(in)));
  }
  ember::nn::BatchNorm2d<T>& last_bn() { return bn3; }
};

template <ember::FloatingElement T = float>
class ResNet : public ember::nn::Module {
 public:
  ResNetOptions options;
  ember::nn::Conv2d<T> conv1;
  ember::nn::BatchNorm2d<T> bn1;
  ember::nn::MaxPool2d<T> maxpool{3, 2, 1};  // skipped with small_stem
  ember::nn::Sequential<T> layer1, layer2, layer3, layer4;
  ember::nn::AdaptiveAvgPool2d<T> avgpool{1};
  ember::nn::Linear<T> fc;

  explicit ResNet(const ResNetOptions& opt = {})
      : options(checked(opt)),
        conv1(opt.in_channels, opt.width, opt.small_stem ? 3 : 7,
              opt.small_stem
                  ? ember::nn::Conv2dOptions{.stride = {1, 1}, .padding = {1, 1}, .bias = false}
                  : ember::nn::Conv2dOptions{.stride = {2, 2}, .padding = {3, 3}, .bias = false},
              opt.device),
        bn1(opt.width, {}, opt.device),
        fc(8 * opt.width *
               (spec(opt.arch).bottleneck ? Bottleneck<T>::expansion : BasicBlock<T>::expansion),
           opt.num_classes, {}, opt.device) {
    const ArchSpec s = spec(opt.arch);
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("maxpool", maxpool);
    std::int64_t inplanes = opt.width;
    const std::array<ember::nn::Sequential<T>*, 4> layers{&layer1, &layer2, &layer3, &layer4};
    for (int i = 0; i < 4; ++i) {
      const std::int64_t planes = opt.width << i, stride = i == 0 ? 1 : 2;
      if (s.bottleneck) {
        make_layer<Bottleneck<T>>(*layers[i], inplanes, planes, s.blocks[i], stride);
      } else {
        make_layer<BasicBlock<T>>(*layers[i], inplanes, planes, s.blocks[i], stride);
      }
      register_module("layer" + std::to_string(i + 1), *layers[i]);
    }
    register_module("avgpool", avgpool);
    register_module("fc", fc);

    // torchvision's initialisation. Batch norms are built with weight 1 and bias 0, and fc
    // keeps nn::Linear's default (nn.Linear's).
    for (const auto& [n, m] : named_modules()) {
      if (auto* conv = dynamic_cast<ember::nn::Conv2d<T>*>(m)) {
        detail::kaiming_normal_fan_out<T>(*conv);
      }
    }
    if (opt.zero_init_residual) {
      for (const auto& [n, m] : named_modules()) {
        ember::nn::BatchNorm2d<T>* last = nullptr;
        if (auto* b = dynamic_cast<Bottleneck<T>*>(m)) last = &b->last_bn();
        if (auto* b = dynamic_cast<BasicBlock<T>*>(m)) last = &b->last_bn();
        if (last) {
          last->weight = ember::param(ember::nn::init::zeros<T>(last->weight.shape(), opt.device));
        }
      }
    }
  }

  /// x [N, in_channels, H, W] (any memory format) -> logits [N, num_classes].
  ember::Var<T> forward(const ember::Var<T>& x) const {
    ember::Var<T> h = stem(x);
    h = layer1(h);
    h = layer2(h);
    h = layer3(h);
    h = layer4(h);
    h = avgpool(h);                                                  // [N, 512 * expansion, 1, 1]
    return fc(h.reshape(ember::Shape{h.shape()[0], h.shape()[1]}));  // torch.flatten(h, 1)
  }
  ember::Var<T> operator()(const ember::Var<T>& x) const { return forward(x); }

  /// The stem: conv1, bn1, relu and (unless small_stem) maxpool, in `options.format`:
  /// [N, in_channels, H, W] -> [N, 64, H / 4, W / 4] (H, W with small_stem).
  ember::Var<T> stem(const ember::Var<T>& x) const {
    EMBER_CHECK(x.shape().rank() == 4 && x.shape()[1] == options.in_channels,
                "resnet: input must be [N, ", options.in_channels, ", H, W], got ",
                x.shape().str());
    // conv2d's output takes its input's layout, so converting x converts the whole network (a
    // one-channel x only gets channels-last strides: the same memory).
    ember::Var<T> h = conv1(in_format(x));
    h = bn1.forward_add_relu(h, {});  // relu(bn1(conv1(x)))
    if (!options.small_stem) h = maxpool(h);
    return h;
  }

  /// layer1..layer4, in order.
  std::array<const ember::nn::Sequential<T>*, 4> stages() const {
    return {&layer1, &layer2, &layer3, &layer4};
  }

 private:
  static ResNetOptions checked(const ResNetOptions& opt) {
    EMBER_CHECK(opt.num_classes > 0 && opt.in_channels > 0,
                "resnet: num_classes and in_channels must be positive, got ", opt.num_classes,
                " and ", opt.in_channels);
    EMBER_CHECK(opt.width > 0, "resnet: width must be positive, got ", opt.width);
    spec(opt.arch);  // an Arch out of range throws
    return opt;
  }
  /// x as it is when already in options.format, else in it (recorded: the gradient flows back).
  ember::Var<T> in_format(const ember::Var<T>& x) const {
    return x.value().memory_format() == options.format ? x : x.contiguous(options.format);
  }

  /// torchvision's _make_layer: the first block changes the width (and the resolution, by
  /// `stride`) and so gets a downsample shortcut; the others keep both.
  template <class Block>
  void make_layer(ember::nn::Sequential<T>& layer, std::int64_t& inplanes, std::int64_t planes,
                  int blocks, std::int64_t stride) {
    const bool with_downsample = stride != 1 || inplanes != planes * Block::expansion;
    layer.template emplace<Block>(inplanes, planes, stride, with_downsample, options.device);
    inplanes = planes * Block::expansion;
    for (int b = 1; b < blocks; ++b) {
      layer.template emplace<Block>(inplanes, planes, std::int64_t{1}, false, options.device);
    }
  }
};

namespace detail {

using trainer::thousands;

inline std::string row(std::string_view stage, std::string_view block, std::string_view shape,
                       std::string_view params) {
  char line[160];
  std::snprintf(line, sizeof line, "%-8.8s %-28.28s %-20.20s %14.14s\n", std::string(stage).c_str(),
                std::string(block).c_str(), std::string(shape).c_str(),
                std::string(params).c_str());
  return line;
}

}  // namespace detail

/// A torchinfo-style table of `model` for an input of shape `input` ([N, C, H, W]; by default
/// [1, in_channels, 224, 224], or 32 x 32 with small_stem): each stage's blocks with their
/// output shapes and parameter counts, each stage's total, and the model's totals. Shapes are
/// inferred from the layers' geometry; nothing runs.
template <ember::FloatingElement T>
std::string summary(const ResNet<T>& model, ember::Shape input = {}) {
  const ResNetOptions& o = model.options;
  if (input.rank() == 0) {
    const std::int64_t side = o.small_stem ? 32 : 224;
    input = ember::Shape{1, o.in_channels, side, side};
  }
  EMBER_CHECK(input.rank() == 4 && input[1] == o.in_channels, "resnet: summary: input must be [N, ",
              o.in_channels, ", H, W], got ", input.str());
  const ArchSpec s = spec(o.arch);
  using detail::row;
  using detail::thousands;
  const std::string rule(73, '-'), double_rule(73, '=');

  std::string out = std::string(name(o.arch)) + " (" +
                    (s.bottleneck ? "Bottleneck" : "BasicBlock") + " blocks [" +
                    std::to_string(s.blocks[0]) + ", " + std::to_string(s.blocks[1]) + ", " +
                    std::to_string(s.blocks[2]) + ", " + std::to_string(s.blocks[3]) + "], " +
                    thousands(o.num_classes) + " classes" + (o.small_stem ? ", small stem" : "") +
                    "), input " + input.str() + "\n";
  out += rule + "\n" + row("Stage", "Block", "Output shape", "Parameters") + double_rule + "\n";

  ember::Shape shape = model.conv1.output_shape(input);
  const std::string stem = std::to_string(model.conv1.kernel_size[0]) + "x" +
                           std::to_string(model.conv1.kernel_size[1]) + " conv1, bn1, relu";
  out += row("stem", stem, shape.str(),
             thousands(model.conv1.parameter_count() + model.bn1.parameter_count()));
  if (!o.small_stem) {
    shape = model.maxpool.output_shape(shape);
    out += row("", "3x3 maxpool, stride 2", shape.str(), "0");
  }
  const auto stages = model.stages();
  for (int i = 0; i < 4; ++i) {
    const ember::nn::Sequential<T>& layer = *stages[static_cast<std::size_t>(i)];
    for (std::size_t b = 0; b < layer.size(); ++b) {
      const ember::nn::Module& m = layer[b];
      std::string what = std::to_string(b) + ": ";
      bool down = false;
      if (const auto* blk = dynamic_cast<const Bottleneck<T>*>(&m)) {
        shape = blk->output_shape(shape);
        what += "Bottleneck";
        down = blk->downsample != nullptr;
      } else if (const auto* blk = dynamic_cast<const BasicBlock<T>*>(&m)) {
        shape = blk->output_shape(shape);
        what += "BasicBlock";
        down = blk->downsample != nullptr;
      }
      if (down) what += " + downsample";
      out += row(b == 0 ? "layer" + std::to_string(i + 1) : "", what, shape.str(),
                 thousands(m.parameter_count()));
    }
    out += row("", "(stage total)", "", "(" + thousands(layer.parameter_count()) + ")");
  }
  const ember::Shape pooled{shape[0], shape[1], 1, 1};
  out += row("head", "avgpool", pooled.str(), "0");
  out += row("", "fc", ember::Shape{shape[0], o.num_classes}.str(),
             thousands(model.fc.parameter_count()));
  out += double_rule + "\n";
  const std::int64_t total = model.parameter_count(), trainable = model.parameter_count(true);
  std::int64_t buffers = 0;
  for (const auto& [n, b] : model.named_buffers()) {
    std::visit([&](auto* t) { buffers += t->numel(); }, b);
  }
  out += "Total params: " + thousands(total) + "\n";
  out += "Trainable params: " + thousands(trainable) + "\n";
  out += "Non-trainable params: " + thousands(total - trainable) + "\n";
  out += "Buffers (batch-norm statistics): " + thousands(buffers) + " elements\n";
  char size[64];
  std::snprintf(size, sizeof size, "%.2f", static_cast<double>(total * sizeof(T)) / 1e6);
  out += "Parameter size (MB): " + std::string(size) + "\n" + rule + "\n";
  return out;
}

}  // namespace resnet
