// The ResNet trainer's options: what its command line sets. options.cpp reads them, in a
// translation unit of its own (CLI11 is a large header-only library: common/command_line.hpp);
// validate_options.hpp settles the defaults and checks them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace resnet {

/// What --data names, read once (settle_defaults): the kind of source and, for CIFAR-10 and image
/// folders, the directory.
struct DataChoice {
  enum class Kind { synthetic, fashion_mnist, cifar10, image_folder };
  Kind kind = Kind::fashion_mnist;
  std::string dir;
  /// Fashion-MNIST and CIFAR-10: 28-32 px and 10 classes, the small runs' defaults.
  bool small() const { return kind == Kind::fashion_mnist || kind == Kind::cifar10; }
  /// Synthetic images and image folders are --image-size square; the small sets have their own.
  bool takes_image_size() const { return !small(); }
};

struct Config {
  std::string arch = "auto";
  std::string data = "fashion-mnist";  // as given; `source` is what it names
  DataChoice source;
  std::int64_t epochs = 0;           // 0: the data's default
  std::int64_t batch = 0;            // 0: the data's default
  std::int64_t image_size = 224;     // synthetic and imagefolder
  std::int64_t steps_per_epoch = 0;  // 0: the whole epoch (synthetic: 50)
  std::int64_t width = 0;            // 0: 64, torchvision's (CPU Fashion-MNIST default: 16)
  std::string optimizer = "sgd";
  double lr = 0;  // 0: the optimizer's default for the batch size
  double momentum = 0.9;
  double weight_decay = 5e-5;
  double label_smoothing = 0.1;
  double warmup_epochs = 0.5;
  std::string precision = "auto";  // float | bf16 | auto (bf16 on a GPU)
  std::string device = "auto";     // cpu | cuda | auto
  bool zero_init_residual = false;
  bool sync_bn = false;        // batch norm on the global batch's statistics (under mpirun)
  double target_accuracy = 0;  // top-1, 0 < t <= 1; 0: none
  bool stop_at_target = false;
  std::int64_t stop_after = 0;  // end the run after this epoch (as if interrupted); 0: never
  double cost_per_hour = 0;     // in your currency, for the cost to accuracy
  std::vector<std::int64_t> sweep_batch;
  std::string out = "runs/resnet";
  std::string resume;           // a checkpoint path, or "auto" for --out/ckpt-last.safetensors
  std::string init_checkpoint;  // model weights to start from (a torchvision state dict)
  bool eval_only = false;       // evaluate the loaded weights and exit
  bool detect_anomaly = false;  // stop at the first operation whose output is not finite
  bool summary = false;
  std::uint64_t seed = 1;
  int workers = 0;
  std::int64_t log_every = 20;
};

/// Reads the command line into `c`: --help prints and gives 0, a bad option prints CLI11's line
/// and gives trainer::kExitBadOption; nothing when the program goes on (options.cpp).
std::optional<int> parse_options(Config& c, int argc, char** argv);

}  // namespace resnet
