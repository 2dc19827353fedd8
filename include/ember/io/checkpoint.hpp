// Checkpoints of modules and of training runs, in the safetensors format (io/safetensors.hpp).
//
//   io::save(model, "model.safetensors");      // parameters and buffers under their dotted names
//   io::load(model, "model.safetensors");      // into the existing tensors (same devices)
//
// A model's file is what PyTorch's `safetensors.torch.save_file(model.state_dict(), path)`
// writes for the matching torch module, so files go both ways. Loading is strict: a tensor the
// module has and the file lacks, a tensor of another shape or dtype, or (unless allowed) a
// tensor the module does not have, is an ember::Error naming it, and then nothing is changed.
// `LoadOptions::prefix` reads a submodule from a bigger file ("bert." for a Hugging Face
// checkpoint of BertForPreTraining loaded into the encoder).
//
// A training checkpoint adds the optimizer's state, the initialisers' and dropout's random
// stream (nn::rng_state), the step and epoch and any strings the trainer wants (a data loader's
// position, a loss scaler's state), so that a resumed run continues exactly as the
// uninterrupted one:
//
//   io::save_training_checkpoint("ckpt.safetensors", model, opt, {.step = s, .epoch = e});
//   io::TrainingProgress p = io::load_training_checkpoint("ckpt.safetensors", model, opt);
//
// Saving is atomic (a temporary file, fsync, rename): a crash mid-save leaves the previous file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "../nn/init.hpp"
#include "../nn/module.hpp"
#include "safetensors.hpp"

namespace ember::io {

struct LoadOptions {
  /// Prepended to every name the module looks up ("bert." reads bert.encoder... into an encoder).
  std::string prefix{};
  /// Accept tensors in the file (under the prefix) that the module does not have.
  bool allow_unexpected = false;
  /// Convert floating-point tensors to the module's floating type (a float file into a bf16
  /// model), rounding to nearest even. Integer and bool tensors must match exactly.
  bool convert_floating = false;
};

}  // namespace ember::io

namespace ember::io::detail::inline EMBER_UNIT_KIND {
inline bool holds_floating(const AnyTensor& t) {
  return t.visit([](const auto& x) {
    return FloatingElement<typename std::remove_cvref_t<decltype(x)>::value_type>;
  });
}
}  // namespace ember::io::detail::inline EMBER_UNIT_KIND

namespace ember::io::inline EMBER_UNIT_KIND {

/// The module's parameters then buffers, by dotted name, on the CPU (the same tensors when
/// already there: no copy).
template <class = void>  // compiled only where called (docs/design.md)
NamedTensors state_dict(const nn::Module& module, const std::string& prefix = {}) {
  NamedTensors out;
  for (const auto& [name, p] : module.named_parameters()) {
    // `&name = name`: clang before 16 cannot capture a structured binding (C++20) otherwise.
    std::visit([&, &name = name](
                   auto* v) { out.emplace_back(prefix + name, v->value().to(Device::cpu())); },
               p);
  }
  for (const auto& [name, b] : module.named_buffers()) {
    std::visit(
        [&, &name = name](auto* t) { out.emplace_back(prefix + name, t->to(Device::cpu())); }, b);
  }
  return out;
}

/// Copies `tensors` into the module's parameters and buffers (their devices and layouts kept),
/// after checking every one (see the file comment). `check_only`: only the checks.
template <class = void>  // compiled only where called (docs/design.md)
void load_state_dict(nn::Module& module, const NamedTensors& tensors, const LoadOptions& opt = {},
                     const std::string& what = "the state", bool check_only = false) {
  std::map<std::string, const AnyTensor*> by_name;
  for (const auto& [name, t] : tensors) {
    if (name.rfind(opt.prefix, 0) == 0) by_name.emplace(name.substr(opt.prefix.size()), &t);
  }
  std::set<std::string> used;
  // Checks one destination against the file; returns the source.
  auto source_for = [&]<class T>(const std::string& name,
                                 const Tensor<T>& dst) -> const AnyTensor& {
    const auto it = by_name.find(name);
    EMBER_CHECK(it != by_name.end(), "ember: io::load: ", what, " has no tensor '",
                opt.prefix + name, "'");
    const AnyTensor& src = *it->second;
    const bool convertible =
        opt.convert_floating && FloatingElement<T> && detail::holds_floating(src);
    EMBER_CHECK(src.holds<T>() || convertible, "ember: io::load: ", what, ": tensor '",
                opt.prefix + name, "' holds ", src.dtype_name(), "; the module's is ",
                dtype_name<T>,
                FloatingElement<T> && detail::holds_floating(src)
                    ? " (LoadOptions::convert_floating converts it)"
                    : "");
    EMBER_CHECK(src.shape() == dst.shape(), "ember: io::load: ", what, ": tensor '",
                opt.prefix + name, "' has shape ", src.shape().str(), "; the module's has ",
                dst.shape().str());
    used.insert(name);
    return src;
  };
  const auto params = module.named_parameters();
  const auto buffers = module.named_buffers();
  for (const auto& [name, p] : params)
    std::visit([&, &name = name](auto* v) { source_for(name, v->value()); }, p);
  for (const auto& [name, b] : buffers) {
    std::visit([&, &name = name](auto* t) { source_for(name, *t); }, b);
  }
  if (!opt.allow_unexpected && used.size() != by_name.size()) {
    std::string extra;
    for (const auto& [name, t] : by_name) {
      if (!used.contains(name)) extra += (extra.empty() ? "'" : ", '") + opt.prefix + name + "'";
    }
    fail("ember: io::load: ", what, " has tensors the module does not: ", extra,
         " (LoadOptions::allow_unexpected accepts them)");
  }
  if (check_only) return;
  auto copy_into = [&]<class T>(const std::string& name, const Tensor<T>& dst) {
    const AnyTensor& any = *by_name.at(name);
    const Tensor<T> src =
        any.template holds<T>() ? any.template as<T>() : any.visit([](const auto& x) {
          using S = typename std::remove_cvref_t<decltype(x)>::value_type;
          if constexpr (FloatingElement<S> && FloatingElement<T>) {
            return Tensor<T>(cast<T>(x));
          } else {
            fail("ember: io::load: internal: no conversion");
            return Tensor<T>();
          }
        });
    Tensor<T> target = dst;
    target.template copy_<T>(src.to(dst.device()));
  };
  for (const auto& [name, p] : params) {
    std::visit([&, &name = name](auto* v) { copy_into(name, v->value()); }, p);
  }
  for (const auto& [name, b] : buffers) {
    std::visit([&, &name = name](auto* t) { copy_into(name, *t); }, b);
  }
}

/// Writes the module's parameters and buffers to `path` (atomically).
template <class = void>  // compiled only where called (docs/design.md)
void save(const nn::Module& module, const std::filesystem::path& path,
          const std::map<std::string, std::string>& metadata = {}) {
  save_safetensors(state_dict(module), path, metadata);
}

/// Reads the module's parameters and buffers from `path` (see the file comment).
template <class = void>  // compiled only where called (docs/design.md)
void load(nn::Module& module, const std::filesystem::path& path, const LoadOptions& opt = {}) {
  load_state_dict(module, load_safetensors(path), opt, "'" + path.string() + "'");
}

}  // namespace ember::io::inline EMBER_UNIT_KIND

namespace ember::io {
/// Where a run stands, saved beside the model and optimizer.
struct TrainingProgress {
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  /// The initialisers' and dropout's random stream; filled in by save_training_checkpoint.
  nn::RngState rng{};
  /// Anything else as strings: a data loader's position, a loss scaler's state, the config.
  std::map<std::string, std::string> extra{};
};

/// Where a training checkpoint keeps the model's tensors: `LoadOptions{.prefix = kModelPrefix,
/// .allow_unexpected = true}` reads the model alone (for evaluation) out of one.
inline constexpr const char* kModelPrefix = "model.";

}  // namespace ember::io

namespace ember::io::detail::inline EMBER_UNIT_KIND {
inline constexpr const char* kOptimizerPrefix = "optimizer.";
inline constexpr const char* kFormatKey = "ember.checkpoint";
inline constexpr const char* kFormat = "training/1";

inline std::int64_t parse_int(const std::map<std::string, std::string>& meta,
                              const std::string& key, const std::filesystem::path& path) {
  const auto it = meta.find(key);
  EMBER_CHECK(it != meta.end(), "ember: io::load_training_checkpoint: '", path.string(),
              "' has no '", key, "' entry");
  try {
    std::size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    EMBER_CHECK(used == it->second.size(), "not a whole number");
    return v;
  } catch (const std::exception&) {
    fail("ember: io::load_training_checkpoint: '", path.string(), "': '", key, "' is '", it->second,
         "', not an integer");
  }
}
}  // namespace ember::io::detail::inline EMBER_UNIT_KIND

namespace ember::io::inline EMBER_UNIT_KIND {

/// Saves model, an optimizer's state (its state_dict()), the random stream and `progress` to
/// `path`, atomically.
template <class = void>  // compiled only where called (docs/design.md)
void save_training_checkpoint(const std::filesystem::path& path, const nn::Module& model,
                              const NamedTensors& optimizer_state,
                              const TrainingProgress& progress) {
  NamedTensors tensors = state_dict(model, kModelPrefix);
  for (const auto& [name, t] : optimizer_state) {
    tensors.emplace_back(detail::kOptimizerPrefix + name, t);
  }
  std::map<std::string, std::string> meta = progress.extra;
  for (const char* reserved : {"step", "epoch", "rng.seed", "rng.offset", detail::kFormatKey}) {
    EMBER_CHECK(!meta.contains(reserved), "ember: io::save_training_checkpoint: '", reserved,
                "' is reserved; give the extra entry another name");
  }
  const nn::RngState rng = nn::rng_state();
  meta["step"] = std::to_string(progress.step);
  meta["epoch"] = std::to_string(progress.epoch);
  meta["rng.seed"] = std::to_string(rng.seed);
  meta["rng.offset"] = std::to_string(rng.offset);
  meta[detail::kFormatKey] = detail::kFormat;
  save_safetensors(tensors, path, meta);
}

/// Saves model, optimizer, the random stream and `progress` to `path`, atomically.
template <class Optimizer>
void save_training_checkpoint(const std::filesystem::path& path, const nn::Module& model,
                              const Optimizer& optimizer, const TrainingProgress& progress) {
  save_training_checkpoint(path, model, optimizer.state_dict(), progress);
}

/// Restores model, optimizer and the random stream from `path` and returns the progress. The
/// file is read and checked whole before anything is changed.
template <class Optimizer>
TrainingProgress load_training_checkpoint(const std::filesystem::path& path, nn::Module& model,
                                          Optimizer& optimizer) {
  const std::map<std::string, std::string> meta = read_safetensors_metadata(path);
  const auto format = meta.find(detail::kFormatKey);
  EMBER_CHECK(format != meta.end() && format->second == detail::kFormat,
              "ember: io::load_training_checkpoint: '", path.string(),
              "' is not an ember training checkpoint (no '", detail::kFormatKey,
              "': ", detail::kFormat, " entry); io::load reads a plain model file");
  TrainingProgress p;
  p.step = detail::parse_int(meta, "step", path);
  p.epoch = detail::parse_int(meta, "epoch", path);
  p.rng.seed = static_cast<std::uint64_t>(detail::parse_int(meta, "rng.seed", path));
  p.rng.offset = static_cast<std::uint64_t>(detail::parse_int(meta, "rng.offset", path));
  for (const auto& [k, v] : meta) {
    if (k != "step" && k != "epoch" && k != "rng.seed" && k != "rng.offset" &&
        k != detail::kFormatKey) {
      p.extra.emplace(k, v);
    }
  }
  const NamedTensors all = load_safetensors(path);
  NamedTensors model_part, optimizer_part;
  for (const auto& [name, t] : all) {
    const std::string_view n = name;
    if (n.starts_with(detail::kOptimizerPrefix)) {
      optimizer_part.emplace_back(name.substr(std::string_view(detail::kOptimizerPrefix).size()),
                                  t);
    } else {
      model_part.emplace_back(name, t);
    }
  }
  // Everything is checked before anything is copied, so a bad file changes nothing. The model
  // is copied before the optimizer, whose master copies must come after the parameters they
  // shadow (a parameter written later would have its master re-read from it).
  const std::string what = "'" + path.string() + "'";
  const LoadOptions opt{kModelPrefix, false};
  load_state_dict(model, model_part, opt, what, true);
  try {
    optimizer.load_state_dict(optimizer_part, true);
  } catch (const Error& e) {  // the optimizer knows its state, not the file it came from
    std::string_view cause = e.what();
    if (cause.starts_with("ember: ")) cause.remove_prefix(7);
    fail("ember: io::load_training_checkpoint: ", what, ": ", cause);
  }
  load_state_dict(model, model_part, opt, what);
  optimizer.load_state_dict(optimizer_part);
  nn::set_rng_state(p.rng);
  return p;
}

}  // namespace ember::io::inline EMBER_UNIT_KIND
