// optim::FusedOptimizer: what SGD, LARS, AdamW and LAMB share. Parameters in groups with their
// own options; per-parameter state (momentum, moments) in the accumulation type; float master
// weights for bf16 and half parameters; and the step as multi-tensor launches (multi_tensor.hpp):
// one pass for all parameters of a device and element type (LARS and LAMB add one reduction pass
// for their per-tensor norms).
//
//   optim::AdamW opt(model, {.lr = 1e-3, .weight_decay = 0.01});
//   loss.backward();
//   opt.clip_grad_norm(1.0);   // one reduction pass; the scaling is folded into step()
//   opt.step();
//   opt.zero_grad();
//
// The optimizer holds handles onto the parameters (the same storage as the module's Vars), so
// build it after moving the module to its device. Writing a parameter outside the optimizer
// (loading a checkpoint, say) is noticed through the storage's version: the master copy is then
// re-read from the parameter at the next step.
//
// A derived optimizer (CRTP) provides:
//   using Options;                       its options struct, with `double lr`
//   static constexpr const char* kName;  for messages
//   static constexpr std::array<const char*, S> kStateNames;   its per-parameter state tensors
//   static void check(const Options&);   bad options -> ember::Error
//   static bool uses_state(const Options&, std::size_t k);     state k is needed (allocated)
//   struct Hyper;                        the per-tensor numbers its update reads
//   Hyper hyper(const Options&, std::int64_t step) const;      step counts from 1
//   template <class T, class Mode = exec::mode> void update(MultiTensor<Slot<T, Hyper>>&);
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../autograd/var.hpp"
#include "../core/bf16.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/half.hpp"
#include "../nn/module.hpp"
#include "../tensor/any_tensor.hpp"
#include "../tensor/factories.hpp"
#include "multi_tensor.hpp"

namespace ember::optim {

/// A parameter of any floating element type.
using AnyVar = std::variant<Var<float>, Var<double>, Var<bf16>, Var<half>>;

/// The parameters an optimizer (or one of its groups) updates.
struct ParamList {
  std::vector<AnyVar> vars;
  ParamList() = default;
  /// A braced list of parameters, `{w, b}` (element types may differ).
  ParamList(std::initializer_list<AnyVar> v) : vars(v) {}
  template <FloatingElement T>
  ParamList(const std::vector<Var<T>>& v) : vars(v.begin(), v.end()) {}  // NOLINT: implicit
  /// Every parameter of `module` that requires grad, in named_parameters() order.
  ParamList(const nn::Module& module) {  // NOLINT: implicit
    for (const auto& [name, p] : module.named_parameters()) {
      std::visit(
          [&](auto* v) {
            if (v->requires_grad()) vars.emplace_back(*v);
          },
          p);
    }
  }
  template <FloatingElement T>
  void add(const Var<T>& v) {
    vars.emplace_back(v);
  }
};

template <class Options>
struct ParamGroup {
  ParamList params;
  Options options;
};

/// Two groups of a module's parameters: those of rank >= 2 (weights) with `options`, and those
/// of rank <= 1 (biases, batch- and layer-norm scales) with `excluded`: MLPerf's ResNet and BERT
/// recipes exempt the latter from weight decay and from LARS's/LAMB's trust ratio.
template <class Options>
std::vector<ParamGroup<Options>> decay_groups(const nn::Module& module, const Options& options,
                                              const Options& excluded) {
  ParamGroup<Options> weights{{}, options}, others{{}, excluded};
  for (const auto& [name, p] : module.named_parameters()) {
    std::visit(
        [&](auto* v) {
          if (!v->requires_grad()) return;
          (v->value().rank() >= 2 ? weights : others).params.add(*v);
        },
        p);
  }
  return {std::move(weights), std::move(others)};
}

/// What one element's update sees of its tensor: the parameter (and its float master copy for
/// bf16/half), the gradient, up to two state tensors and the per-tensor numbers. Plain data:
/// copied to the device with the step's table.
template <class T, class Hyper>
struct Slot {
  using acc = acc_t<T>;
  T* param;
  const T* grad;
  acc* master;  // null for float and double parameters
  acc* state0;
  acc* state1;
  double grad_scale;   // clipping and loss-scale factor, folded into the update
  std::int32_t index;  // the slot's index in its table (for per-tensor sums)
  bool fresh;          // the state was allocated for this step: it reads as zeros (unwritten)
  Hyper h;

  /// State k at element j: 0 for fresh state, which this step writes first.
  EMBER_HD acc state(int k, std::int64_t j) const {
    return fresh ? acc(0) : (k == 0 ? state0 : state1)[j];
  }
  EMBER_HD acc weight(std::int64_t j) const {
    return master ? master[j] : static_cast<acc>(param[j]);
  }
  EMBER_HD acc gradient(std::int64_t j) const {
    return static_cast<acc>(grad[j]) * static_cast<acc>(grad_scale);
  }
  EMBER_HD void store(std::int64_t j, acc w) const {
    if (master) master[j] = w;
    param[j] = static_cast<T>(w);
  }
};

/// An optimizer's state for a checkpoint: per parameter i (in the order of the groups),
/// `state.{i}.{name}` tensors (the optimizer's state names, `master` for bf16/half parameters,
/// `step`), all on the CPU.
using OptimizerState = NamedTensors;

/// The gradients' global L2 norm, and whether every element was finite.
struct GradNorm {
  double norm = 0;
  bool finite = true;
};

namespace detail {

// The option checks the optimizers share: `opt` names the optimizer in the message.
inline void check_lr(const char* opt, double lr) {
  EMBER_CHECK(std::isfinite(lr) && lr >= 0, "ember: ", opt, ": lr must be >= 0, got ", lr);
}
inline void check_nonnegative(const char* opt, const char* what, double v) {
  EMBER_CHECK(v >= 0, "ember: ", opt, ": ", what, " must be >= 0, got ", v);
}
inline void check_betas(const char* opt, double beta1, double beta2) {
  EMBER_CHECK(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, "ember: ", opt,
              ": betas must be in [0, 1), got ", beta1, ", ", beta2);
}

/// (|g|^2) of one element, with the step's grad scale: for the global norm.
struct SquaredGrad {
  template <class S>
  EMBER_HD std::array<double, 1> operator()(const S& s, std::int64_t j) const {
    const double g = static_cast<double>(s.gradient(j));
    return {g * g};
  }
};

}  // namespace detail

namespace detail::inline EMBER_UNIT_KIND {

/// `src`'s values as element type A, in a new tensor on `like`'s device in its memory format: a
/// master copy, or a loaded state tensor placed beside its parameter.
template <class A, class U, class V>
Tensor<A> copy_as(const Tensor<U>& src, const Tensor<V>& like) {
  Tensor<A> out = empty<A>(src.shape(), like.device(), like.memory_format());
  out.template copy_<U>(src);
  return out;
}

/// The gradient `g` laid out as its parameter `w` (same strides), as the update indexes both
/// alike; `opt` names the optimizer in the error.
template <class T>
Tensor<T> dense_grad(const Tensor<T>& w, const Tensor<T>& g, const char* opt) {
  EMBER_CHECK(g.shape() == w.shape() && g.device() == w.device(), "ember: ", opt,
              ": a gradient of shape ", g.shape().str(), " for a parameter of shape ",
              w.shape().str());
  bool same = true;
  for (int d = 0; d < w.rank(); ++d) {
    if (w.shape()[d] != 1 && g.strides()[d] != w.strides()[d]) same = false;
  }
  return same ? g : copy_as<T>(g, w);
}

}  // namespace detail::inline EMBER_UNIT_KIND

template <class Derived, class Options>
class FusedOptimizer {
 public:
  using options_type = Options;

  // The constructors copy bf16 and half parameters into float masters, an evaluation: like every
  // evaluating member of a shared type, they take the kind's tag, so that a host-compiled and an
  // nvcc-compiled unit constructing the same optimizer keep a copy each (core/config.hpp); one
  // shared name would leave the linker free to run the host unit's copy on a GPU's parameters.

  /// All of `params` in one group with `options`.
  template <class Mode = exec::mode>
  FusedOptimizer(ParamList params, const Options& options)
      : FusedOptimizer(std::vector<ParamGroup<Options>>{{std::move(params), options}}) {}
  template <class Mode = exec::mode>
  explicit FusedOptimizer(std::vector<ParamGroup<Options>> groups) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      Derived::check(groups[g].options);
      groups_.push_back(groups[g].options);
      for (const AnyVar& v : groups[g].params.vars) {
        std::visit([&](const auto& var) { add_param(var, static_cast<int>(g)); }, v);
      }
    }
  }
  FusedOptimizer(const FusedOptimizer&) = delete;
  FusedOptimizer& operator=(const FusedOptimizer&) = delete;

  /// The groups' options; change `lr` (or anything) between steps.
  std::vector<Options>& groups() { return groups_; }
  const std::vector<Options>& groups() const { return groups_; }
  /// Sets every group's learning rate (what a schedule drives).
  void set_lr(double lr) {
    for (Options& o : groups_) o.lr = lr;
  }
  /// How many steps were taken (each parameter counts its own, as PyTorch; this is the most).
  std::int64_t steps() const { return steps_; }
  std::int64_t parameter_count() const { return static_cast<std::int64_t>(order_.size()); }

  /// Forgets every parameter's gradient.
  void zero_grad() {
    for_each_entry([](auto& e) { e.var.zero_grad(); });
  }

  /// The global L2 norm of the gradients (times the pending scale), and whether all were
  /// finite: one reduction pass per device and element type, then one small copy to the host.
  template <class Mode = exec::mode>
  GradNorm grad_norm() {
    return compute_grad_norm<Mode>();
  }

  /// Scales the gradients by min(1, max_norm / (norm + 1e-6)) as torch.nn.utils.clip_grad_norm_,
  /// folded into the next step() (no pass of its own); returns the norm before clipping.
  /// A non-finite norm is an ember::Error (as PyTorch's error_if_nonfinite).
  template <class Mode = exec::mode>
  double clip_grad_norm(double max_norm) {
    EMBER_CHECK(max_norm > 0, "ember: ", Derived::kName,
                ".clip_grad_norm: max_norm must be positive, got ", max_norm);
    const GradNorm n = grad_norm();
    EMBER_CHECK(n.finite, "ember: ", Derived::kName, ".clip_grad_norm: the gradients' norm is ",
                n.norm, " (an inf or NaN gradient)");
    const double coef = max_norm / (n.norm + 1e-6);
    if (coef < 1) grad_scale_ *= coef;
    return n.norm;
  }
  /// Multiplies the gradients the next step() reads by `factor` (a loss scaler's 1/scale, or
  /// 1/micro-batches for accumulated gradients), without a pass of its own.
  void scale_grads(double factor) { grad_scale_ *= factor; }
  /// Drops the pending scale (a skipped step).
  void reset_grad_scale() { grad_scale_ = 1; }

  /// One update of every parameter that has a gradient.
  template <class Mode = exec::mode>
  void step() {
    update_all<Mode>();
  }

  /// The state of every parameter, on the CPU, for a checkpoint.
  template <class Mode = exec::mode>
  OptimizerState state_dict() const {
    return collect_state<Mode>();
  }

  /// Restores what state_dict() saved, for the same parameters in the same order. A missing,
  /// misshapen or mistyped tensor is an ember::Error naming it; nothing changes then.
  /// `check_only`: only the checks.
  template <class Mode = exec::mode>
  void load_state_dict(const OptimizerState& state, bool check_only = false) {
    restore_state<Mode>(state, check_only);
  }

 protected:
  // Constrained by a static_assert, not in the template head: clang 14 crashes checking the
  // constraint where the class's own members name Entry<float> (scripts/fuzz.sh builds with it).
  template <class T>
  struct Entry {
    static_assert(FloatingElement<T>, "an optimizer's parameters are floating-point");
    using acc = acc_t<T>;
    Var<T> var;
    int group;
    std::array<Tensor<acc>, 2> state;
    Tensor<acc> master;  // bf16 / half parameters only
    std::int64_t step = 0;
    std::uint64_t seen_version = 0;
    bool fresh = false;  // state allocated by this step, not yet written
  };

  /// The numbers an element's update reads for group `g`, at this entry's step.
  const Options& options_of(int g) const { return groups_[static_cast<std::size_t>(g)]; }

 private:
  // The passes behind grad_norm, step, state_dict and load_state_dict, defined after the class
  // so that they are not inline: ember::kernels compiles them once per optimizer (the list at
  // the end of this header). Without default template arguments: nvcc's front end copies a
  // default onto an out-of-class definition, which the host compiler then rejects.
  template <class Mode>
  GradNorm compute_grad_norm();
  template <class Mode>
  void update_all();
  template <class Mode>
  OptimizerState collect_state() const;
  template <class Mode>
  void restore_state(const OptimizerState& state, bool check_only);

  template <class Mode = exec::mode, FloatingElement T>
  void add_param(const Var<T>& v, int group) {
    EMBER_CHECK(v.defined() && v.requires_grad(), "ember: ", Derived::kName, ": parameter ",
                order_.size(), " does not require grad");
    const Tensor<T>& w = v.value();
    EMBER_CHECK(
        w.is_contiguous() || (w.rank() == 4 && w.is_contiguous(MemoryFormat::channels_last)),
        "ember: ", Derived::kName, ": parameter ", order_.size(), " of shape ", w.shape().str(),
        " is a strided view; optimizers update dense tensors");
    for (const AnyVar& seen : all_) {
      const bool same =
          std::visit([&](const auto& o) { return o.value().storage() == w.storage(); }, seen);
      EMBER_CHECK(!same, "ember: ", Derived::kName, ": parameter ", order_.size(),
                  " is given twice (or shares storage with another)");
    }
    auto& list = std::get<std::vector<std::unique_ptr<Entry<T>>>>(entries_);
    auto e = std::make_unique<Entry<T>>();
    e->var = v;
    e->group = group;
    if constexpr (!std::is_same_v<T, acc_t<T>>) e->master = detail::copy_as<acc_t<T>>(w, w);
    e->seen_version = w.storage()->version();
    order_.push_back(e.get());
    all_.emplace_back(v);
    list.push_back(std::move(e));
  }

  template <class A>
  static void check_state_tensor(const AnyTensor& t, const std::string& name, const Shape& shape) {
    EMBER_CHECK(t.holds<A>(), "ember: ", Derived::kName, ".load_state_dict: '", name, "' holds ",
                t.dtype_name(), ", not ", dtype_name<A>);
    EMBER_CHECK(t.shape() == shape, "ember: ", Derived::kName, ".load_state_dict: '", name,
                "' has shape ", t.shape().str(), ", the parameter ", shape.str());
  }
  template <class F>
  void for_each_entry(F&& f) {
    std::apply(
        [&](auto&... lists) { (std::ranges::for_each(lists, [&](auto& e) { f(*e); }), ...); },
        entries_);
  }

  /// Builds the tables (one per device and element type) of the parameters that have a
  /// gradient and calls f.template operator()<T>(table, entries) for each. `stepping`: for a
  /// step, which allocates state and counts the step; else only the gradients are read.
  template <class Mode = exec::mode, class F>
  void visit_buckets(bool stepping, F&& f) {
    using Hyper = typename Derived::Hyper;
    auto one_type = [&]<class T>(std::vector<std::unique_ptr<Entry<T>>>& list) {
      std::vector<Device> devices;
      for (auto& e : list) {
        const Device d = e->var.value().device();
        if (std::ranges::find(devices, d) == devices.end()) devices.push_back(d);
      }
      for (const Device d : devices) {
        MultiTensor<Slot<T, Hyper>> table(d);
        std::vector<Entry<T>*> used;
        for (auto& e : list) {
          if (e->var.value().device() != d) continue;
          autograd::VarNode<T>& node = *e->var.node();
          if (!node.has_grad()) continue;  // no gradient this step: left alone, as PyTorch
          used.push_back(e.get());
        }
        if (used.empty()) continue;
        std::vector<Tensor<T>> grads;  // kept alive until the launch is done
        for (Entry<T>* e : used) {
          grads.push_back(
              detail::dense_grad(e->var.value(), e->var.node()->grad_or_ones(), Derived::kName));
          if (stepping) prepare_entry<T>(*e);
          const Tensor<T>& w = e->var.value();
          const Slot<T, Hyper> slot{w.data(),
                                    grads.back().data(),
                                    e->master.defined() ? e->master.data() : nullptr,
                                    e->state[0].defined() ? e->state[0].data() : nullptr,
                                    e->state[1].defined() ? e->state[1].data() : nullptr,
                                    grad_scale_,
                                    static_cast<std::int32_t>(table.size()),
                                    e->fresh,
                                    static_cast<const Derived*>(this)->hyper(
                                        options_of(e->group), std::max<std::int64_t>(e->step, 1))};
          table.add(slot, w.numel());
        }
        f.template operator()<T>(table, used);
      }
    };
    std::apply([&](auto&... lists) { (one_type(lists), ...); }, entries_);
  }

  /// Allocates the state this step needs (PyTorch's lazily created state, zeros: the update
  /// reads fresh state as zeros, so no pass fills it), counts the step, and re-reads the master
  /// copy when the parameter was written from outside.
  template <class T, class Mode = exec::mode>
  void prepare_entry(Entry<T>& e) {
    const Tensor<T>& w = e.var.value();
    using A = acc_t<T>;
    e.fresh = false;
    for (std::size_t k = 0; k < Derived::kStateNames.size(); ++k) {
      if (!e.state[k].defined() && Derived::uses_state(options_of(e.group), k)) {
        EMBER_CHECK(k == 0 || e.state[0].defined() == Derived::uses_state(options_of(e.group), 0),
                    "ember: ", Derived::kName, ": state tensors must start together");
        e.state[k] = empty<A>(w.shape(), w.device(), w.memory_format());
        e.fresh = true;
      }
    }
    if (e.master.defined() && w.storage()->version() != e.seen_version) {
      e.master.template copy_<T>(w);
    }
    ++e.step;
  }

  std::vector<Options> groups_;
  std::tuple<std::vector<std::unique_ptr<Entry<float>>>,
             std::vector<std::unique_ptr<Entry<double>>>, std::vector<std::unique_ptr<Entry<bf16>>>,
             std::vector<std::unique_ptr<Entry<half>>>>
      entries_;
  std::vector<std::variant<Entry<float>*, Entry<double>*, Entry<bf16>*, Entry<half>*>> order_;
  std::vector<AnyVar> all_;
  std::int64_t steps_ = 0;
  double grad_scale_ = 1;
};

template <class Derived, class Options>
template <class Mode>
GradNorm FusedOptimizer<Derived, Options>::compute_grad_norm() {
  double sq = 0;
  visit_buckets(false, [&]<class T>(auto& table, const std::vector<Entry<T>*>&) {
    const Tensor<double> per = table.template sums<1, detail::SquaredGrad>({});
    const Tensor<double> host = per.to(Device::cpu());
    for (std::int64_t i = 0; i < host.numel(); ++i) sq += host.data()[i];
  });
  return {std::sqrt(sq), std::isfinite(sq)};
}

template <class Derived, class Options>
template <class Mode>
void FusedOptimizer<Derived, Options>::update_all() {
  ++steps_;
  visit_buckets(true, [&]<class T>(auto& table, const std::vector<Entry<T>*>& entries) {
    static_cast<Derived*>(this)->template update<T>(table);
    for (Entry<T>* e : entries) {
      e->var.value().storage()->bump_version();
      e->seen_version = e->var.value().storage()->version();
    }
  });
  grad_scale_ = 1;
}

template <class Derived, class Options>
template <class Mode>
OptimizerState FusedOptimizer<Derived, Options>::collect_state() const {
  OptimizerState out;
  for (std::size_t i = 0; i < order_.size(); ++i) {
    std::visit(
        [&](const auto* e) {
          const std::string at = "state." + std::to_string(i) + ".";
          for (std::size_t k = 0; k < Derived::kStateNames.size(); ++k) {
            if (e->state[k].defined()) {
              out.emplace_back(at + Derived::kStateNames[k], e->state[k].to(Device::cpu()));
            }
          }
          if (e->master.defined()) {
            out.emplace_back(at + "master", e->master.to(Device::cpu()));
          }
          Tensor<std::int64_t> step = empty<std::int64_t>(Shape{});
          *step.data() = e->step;
          out.emplace_back(at + "step", step);
        },
        order_[i]);
  }
  return out;
}

template <class Derived, class Options>
template <class Mode>
void FusedOptimizer<Derived, Options>::restore_state(const OptimizerState& state, bool check_only) {
  std::map<std::string, const AnyTensor*> by_name;
  for (const auto& [n, t] : state) by_name.emplace(n, &t);
  auto find = [&](const std::string& name) -> const AnyTensor* {
    const auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
  };
  // Check everything first, then copy: a bad file leaves the optimizer as it was.
  std::size_t expected = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < order_.size(); ++i) {
      std::visit(
          [&]<class E>(E* e) {
            using A = typename E::acc;
            const std::string at = "state." + std::to_string(i) + ".";
            const AnyTensor* step = find(at + "step");
            EMBER_CHECK(step && step->holds<std::int64_t>() && step->numel() == 1,
                        "ember: ", Derived::kName, ".load_state_dict: '", at,
                        "step' is missing or not one int64");
            if (pass == 0) ++expected;
            for (std::size_t k = 0; k < Derived::kStateNames.size(); ++k) {
              const std::string name = at + Derived::kStateNames[k];
              if (const AnyTensor* t = find(name)) {
                check_state_tensor<A>(*t, name, e->var.value().shape());
                if (pass == 0) ++expected;
                if (pass == 1) e->state[k] = detail::copy_as<A>(t->as<A>(), e->var.value());
              } else if (pass == 1) {
                e->state[k] = Tensor<A>();
              }
            }
            if (const AnyTensor* t = find(at + "master")) {
              EMBER_CHECK(e->master.defined(), "ember: ", Derived::kName, ".load_state_dict: '", at,
                          "master' is saved for a parameter that keeps no master copy");
              check_state_tensor<A>(*t, at + "master", e->var.value().shape());
              if (pass == 0) ++expected;
              if (pass == 1) {
                e->master = detail::copy_as<A>(t->as<A>(), e->var.value());
                e->seen_version = e->var.value().storage()->version();
              }
            }
            if (pass == 1) e->step = *step->as<std::int64_t>().data();
          },
          order_[i]);
    }
    if (pass == 0) {
      EMBER_CHECK(expected == state.size(), "ember: ", Derived::kName,
                  ".load_state_dict: the state has ", state.size(), " tensors, ", expected,
                  " of which belong to this optimizer's ", order_.size(),
                  " parameters (saved for another model or optimizer?)");
      if (check_only) return;
    }
  }
  steps_ = 0;
  for_each_entry([&](auto& e) { steps_ = std::max(steps_, e.step); });
}

}  // namespace ember::optim

/// Compiled once in ember::kernels (core/compiled_once.hpp) for each optimizer `Opt` (options
/// `Opt##Options`), in both kinds of unit: its fused step, gradient norm and state (the
/// constructors stay inline). Each optimizer's header declares its own.
#define EMBER_OPTIMIZER_INSTANCES(EXPLICIT, Opt)                                                \
  namespace ember::optim {                                                                      \
  EXPLICIT void FusedOptimizer<Opt, Opt##Options>::update_all<exec::mode>();                    \
  EXPLICIT GradNorm FusedOptimizer<Opt, Opt##Options>::compute_grad_norm<exec::mode>();         \
  EXPLICIT OptimizerState FusedOptimizer<Opt, Opt##Options>::collect_state<exec::mode>() const; \
  EXPLICIT void FusedOptimizer<Opt, Opt##Options>::restore_state<exec::mode>(                   \
      const OptimizerState&, bool);                                                             \
  }
