// resnet_predict: classifies JPEG files with a ResNet's weights, printing each file's top five
// classes and their probabilities. The weights are a torchvision state dict saved as safetensors
// (the names match: `safetensors.torch.save_file(torchvision.models.resnet50(weights=...)
// .state_dict(), "resnet50.safetensors")`) or a checkpoint of resnet50_train
// (ckpt-last.safetensors). Images go through evaluation's transform (shorter side to 256, centre
// crop 224, ImageNet's normalisation), as torchvision's reference does.
//
//   resnet_predict --weights resnet50.safetensors --labels imagenet_classes.txt cat.jpg dog.jpg
//
// Host code (the CPU); --image-size and --arch/--width/--classes describe other models.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/command_line.hpp"
#include "predict.hpp"

int main(int argc, char** argv) {
  using namespace ember;
  std::string weights, labels, arch = "resnet50";
  std::int64_t width = 64, classes = 1000, image_size = 224, top = 5;
  std::vector<std::string> files;
  CLI::App app{"classify JPEG files with a ResNet", "resnet_predict"};
  app.add_option("--weights", weights,
                 "torchvision state dict (safetensors) or a resnet50_train checkpoint")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--labels", labels, "class names, one per line (default: the class numbers)")
      ->check(CLI::ExistingFile);
  app.add_option("--arch", arch, "resnet18|34|50|101|152")->capture_default_str();
  app.add_option("--width", width, "base width (torchvision: 64)")->capture_default_str();
  app.add_option("--classes", classes, "outputs of the last layer")->capture_default_str();
  app.add_option("--image-size", image_size, "the centre crop")->capture_default_str();
  app.add_option("--top", top, "classes printed per image")->capture_default_str();
  app.add_option("images", files, "JPEG files")->required()->check(CLI::ExistingFile);
  if (const auto status = trainer::parse_command_line(app, argc, argv)) return *status;
  if (top < 1 || top > classes || image_size < 32) {
    std::fprintf(stderr,
                 "resnet_predict: --top must be in [1, --classes] and --image-size at least 32, "
                 "got %lld and %lld\n",
                 static_cast<long long>(top), static_cast<long long>(image_size));
    return trainer::kExitBadOption;
  }
  try {
    std::vector<std::string> names;
    if (!labels.empty()) {
      std::ifstream in(labels);
      EMBER_CHECK(in, "resnet_predict: --labels: cannot read '", labels, "'");
      for (std::string line; std::getline(in, line);) names.push_back(line);
      EMBER_CHECK(static_cast<std::int64_t>(names.size()) == classes,
                  "resnet_predict: --labels: ", names.size(), " names for ", classes, " classes");
    }
    resnet::ResNetOptions o;
    o.arch = resnet::parse_arch(arch);
    o.num_classes = classes;
    o.width = width;
    resnet::ResNet<float> model(o);
    resnet::load_weights(model, weights);
    for (const std::string& file : files) {
      std::printf("%s:\n", file.c_str());
      for (const auto& [c, p] : resnet::classify(model, file, top, static_cast<int>(image_size))) {
        const std::string name =
            names.empty() ? std::to_string(c) : names[static_cast<std::size_t>(c)];
        std::printf("  %6.2f%%  %s\n", 100.0 * p, name.c_str());
      }
    }
    return std::fflush(stdout) == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
