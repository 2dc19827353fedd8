// The ResNet trainer's command line (options.hpp), in a translation unit of its own.
#include "resnet50/options.hpp"

#include "common/command_line.hpp"

namespace resnet {

std::optional<int> parse_options(Config& c, int argc, char** argv) {
  CLI::App app{"ember's ResNet trainer (MLPerf's image-classification workload)", "resnet50_train"};
  app.add_option("--arch", c.arch, "resnet18|34|50|101|152 (auto: resnet18 for 28-32 px data)");
  app.add_option("--data", c.data,
                 "synthetic | fashion-mnist | cifar10=DIR | imagefolder=DIR (ImageNet layout)")
      ->check(
          trainer::name_or_directory({"synthetic", "fashion-mnist"}, {"cifar10", "imagefolder"}));
  app.add_option("--epochs", c.epochs, "epochs to train (default: by data and device)");
  app.add_option("--batch-size", c.batch, "images per step (default: by data and device)");
  app.add_option("--image-size", c.image_size, "synthetic and imagefolder image size")
      ->capture_default_str();
  app.add_option("--steps-per-epoch", c.steps_per_epoch, "synthetic: steps per epoch (50)");
  app.add_option("--width", c.width, "base width (torchvision: 64; CPU Fashion-MNIST default 16)");
  app.add_option("--optimizer", c.optimizer, "sgd (warmup + cosine) | lars (warmup + poly 2)")
      ->capture_default_str();
  app.add_option("--lr", c.lr, "peak learning rate (default: scaled with the batch size)");
  app.add_option("--momentum", c.momentum)->capture_default_str();
  app.add_option("--weight-decay", c.weight_decay)->capture_default_str();
  app.add_option("--label-smoothing", c.label_smoothing)->capture_default_str();
  app.add_option("--warmup-epochs", c.warmup_epochs)->capture_default_str();
  app.add_option("--precision", c.precision, "float | bf16 | auto (bf16 on a GPU)")
      ->capture_default_str();
  app.add_option("--device", c.device, "cpu | cuda | auto")->capture_default_str();
  app.add_flag("--zero-init-residual", c.zero_init_residual, "last BN gamma of each block = 0");
  app.add_flag("--sync-bn", c.sync_bn,
               "under mpirun: batch norm on the statistics of the global batch, not each rank's");
  app.add_option("--target-accuracy", c.target_accuracy, "top-1 to reach, e.g. 0.9");
  app.add_flag("--stop-at-target", c.stop_at_target, "stop once the target is reached");
  app.add_option("--stop-after", c.stop_after,
                 "end after this epoch, as if interrupted (resume with --resume auto)");
  app.add_option("--cost-per-hour", c.cost_per_hour,
                 "machine price per hour, for cost to accuracy");
  app.add_option("--sweep-batch", c.sweep_batch, "synthetic: images/s for each batch size")
      ->delimiter(',');
  app.add_option("--out", c.out, "directory for metrics, logs and checkpoints")
      ->capture_default_str();
  app.add_option("--resume", c.resume, "checkpoint to resume from ('auto': OUT/ckpt-last)")
      ->check(trainer::checkpoint_or_auto());
  app.add_option("--init-checkpoint", c.init_checkpoint,
                 "model weights to start from: a torchvision state dict saved as safetensors")
      ->check(CLI::ExistingFile);
  app.add_flag("--eval-only", c.eval_only,
               "evaluate the weights of --init-checkpoint or --resume, print the metrics, exit");
  app.add_flag("--detect-anomaly", c.detect_anomaly,
               "stop at the first operation whose output is NaN or infinite, naming it (slow: "
               "every output is read)");
  app.add_flag("--summary", c.summary, "print the layer table and parameter count, then exit");
  app.add_option("--seed", c.seed)->capture_default_str();
  app.add_option("--workers", c.workers, "imagefolder: decoding threads (0: all cores)");
  app.add_option("--log-every", c.log_every, "steps between loss readings")->capture_default_str();
  return trainer::parse_command_line(app, argc, argv);
}

}  // namespace resnet
