// dist::ZeroRedundancyOptimizer: ZeRO stage 1 (Rajbhandari et al., as in DeepSpeed, llm.c and
// PyTorch's ZeroRedundancyOptimizer): the optimizer's state sharded over the ranks.
//
//   dist::DistributedDataParallel ddp(model);       // averages the gradients, as before
//   dist::ZeroRedundancyOptimizer<optim::AdamW> opt(model, {.lr = 1e-3});
//   loss.backward();
//   opt.clip_grad_norm(1.0);                          // the global norm, over every rank's shard
//   opt.step();                                       // each rank updates its shard, then the
//   opt.zero_grad();                                  // owners broadcast the new parameters
//
// Every parameter has one owner rank: parameters are dealt, in order, to the rank holding the
// fewest elements so far (the same on every rank, no communication). The owner alone keeps the
// parameter's state (momentum, moments, a float master copy for bf16) in an inner optimizer of
// type Opt over its parameters only, so each rank holds about 1/N of the optimizer's memory. A
// step updates the owned parameters, then every parameter is broadcast from its owner (started
// together, then waited for), so all ranks end the step with the same weights. Gradients are
// those DDP averaged; clip_grad_norm sums the squared norms of the shards over the ranks. The
// step's communication is DDP's all-reduce plus one broadcast of the parameters (PyTorch's
// ZeroRedundancyOptimizer's scheme; DeepSpeed's replaces the all-reduce by a reduce-scatter).
//
// state_dict() is the whole state under the unsharded optimizer's names (every rank gathers it:
// a checkpoint written by rank 0 loads into either kind), and load_state_dict() keeps each rank's
// share. Every rank must call step, clip_grad_norm, grad_norm and the state functions together.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "../core/error.hpp"
#include "../optim/optimizer.hpp"
#include "../tensor/factories.hpp"
#include "collectives.hpp"

namespace ember::dist {

// In the translation unit's executor namespace: the step evaluates expressions.
inline namespace EMBER_UNIT_KIND {

template <class Opt>
class ZeroRedundancyOptimizer {
 public:
  using Options = typename Opt::options_type;
  /// state_dict() is a collective (every rank gathers the shards): savers call it on every rank.
  static constexpr bool kShardedState = true;

  /// All of `params` in one group with `options`.
  ZeroRedundancyOptimizer(optim::ParamList params, const Options& options)
      : ZeroRedundancyOptimizer(
            std::vector<optim::ParamGroup<Options>>{{std::move(params), options}}) {}
  /// The groups as Opt takes them; each rank's inner optimizer has the same groups, holding
  /// only the parameters it owns.
  explicit ZeroRedundancyOptimizer(std::vector<optim::ParamGroup<Options>> groups)
      : inner_(shard(groups)) {}
  ZeroRedundancyOptimizer(const ZeroRedundancyOptimizer&) = delete;
  ZeroRedundancyOptimizer& operator=(const ZeroRedundancyOptimizer&) = delete;

  /// The groups' options (this rank's inner optimizer's: the same on every rank).
  std::vector<Options>& groups() { return inner_.groups(); }
  void set_lr(double lr) { inner_.set_lr(lr); }
  std::int64_t steps() const { return inner_.steps(); }
  /// Parameters in all, and those this rank owns (and keeps state for).
  std::int64_t parameter_count() const { return static_cast<std::int64_t>(params_.size()); }
  std::int64_t local_parameter_count() const { return inner_.parameter_count(); }
  /// The rank that owns parameter i (in the order the groups list them).
  int owner(std::size_t i) const { return owner_.at(i); }

  /// Forgets every parameter's gradient, owned or not.
  void zero_grad() {
    for (const optim::AnyVar& v : params_) std::visit([](const auto& p) { p.zero_grad(); }, v);
  }

  /// The global L2 norm of the gradients (each rank's shard, summed over the ranks) and whether
  /// all were finite.
  optim::GradNorm grad_norm() {
    const optim::GradNorm mine = inner_.grad_norm();
    const Tensor<double> sums =
        from_vector<double>({mine.norm * mine.norm, mine.finite ? 0.0 : 1.0});
    all_reduce<double>(sums);
    return {std::sqrt(sums.data()[0]), sums.data()[1] == 0 && std::isfinite(sums.data()[0])};
  }

  /// As FusedOptimizer::clip_grad_norm, on the global norm; returns it.
  double clip_grad_norm(double max_norm) {
    EMBER_CHECK(max_norm > 0, "ember: dist::ZeroRedundancyOptimizer.clip_grad_norm: max_norm ",
                "must be positive, got ", max_norm);
    const optim::GradNorm n = grad_norm();
    EMBER_CHECK(n.finite, "ember: dist::ZeroRedundancyOptimizer.clip_grad_norm: the gradients' ",
                "norm is ", n.norm, " (an inf or NaN gradient)");
    const double coef = max_norm / (n.norm + 1e-6);
    if (coef < 1) inner_.scale_grads(coef);
    return n.norm;
  }
  void scale_grads(double factor) { inner_.scale_grads(factor); }
  void reset_grad_scale() { inner_.reset_grad_scale(); }

  /// Updates this rank's parameters, then gives every rank every parameter's new value.
  void step() {
    inner_.step();
    if (world_size() == 1) return;
    std::vector<Work> pending;
    pending.reserve(params_.size());
    for (std::size_t i = 0; i < params_.size(); ++i) {
      std::visit(
          [&](const auto& p) {
            pending.push_back(
                broadcast_async<typename std::remove_cvref_t<decltype(p)>::value_type>(p.value(),
                                                                                       owner_[i]));
          },
          params_[i]);
    }
    for (Work& w : pending) w.wait();
    for (const optim::AnyVar& v : params_) {
      std::visit([](const auto& p) { p.value().storage()->bump_version(); }, v);
    }
  }

  /// The whole optimizer's state, named as the unsharded Opt names it ("state.<i>.<name>" for
  /// parameter i), on the CPU, on every rank.
  optim::OptimizerState state_dict() const {
    optim::OptimizerState mine = inner_.state_dict();
    for (auto& [name, t] : mine) name = rename(name, global_index_);
    optim::OptimizerState all;
    for (int r = 0; r < world_size(); ++r) {
      optim::OptimizerState part = broadcast_state(mine, r);
      for (auto& entry : part) all.push_back(std::move(entry));
    }
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
      return index_of(a.first) < index_of(b.first);
    });
    return all;
  }

  /// Restores what state_dict() (or the unsharded Opt's) saved: each rank keeps its share.
  void load_state_dict(const optim::OptimizerState& state, bool check_only = false) {
    std::vector<std::int64_t> local(params_.size(), -1);
    for (std::size_t j = 0; j < global_index_.size(); ++j) {
      local[static_cast<std::size_t>(global_index_[j])] = static_cast<std::int64_t>(j);
    }
    optim::OptimizerState mine;
    for (const auto& [name, t] : state) {
      const std::int64_t i = index_of(name);
      EMBER_CHECK(i >= 0 && i < parameter_count(),
                  "ember: dist::ZeroRedundancyOptimizer.load_state_dict: '", name,
                  "' names no parameter of this optimizer's ", parameter_count());
      if (local[static_cast<std::size_t>(i)] >= 0) {
        mine.emplace_back(rename(name, local), t);
      }
    }
    inner_.load_state_dict(mine, check_only);
  }

 private:
  /// Deals the parameters to owners and returns this rank's groups.
  std::vector<optim::ParamGroup<Options>> shard(const std::vector<optim::ParamGroup<Options>>& gs) {
    const int ranks = world_size(), me = rank();
    std::vector<std::int64_t> load(static_cast<std::size_t>(ranks), 0);
    std::vector<optim::ParamGroup<Options>> mine;
    for (const auto& g : gs) {
      mine.push_back({{}, g.options});
      for (const optim::AnyVar& v : g.params.vars) {
        const std::int64_t n = std::visit([](const auto& p) { return p.value().numel(); }, v);
        const int r = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
        load[static_cast<std::size_t>(r)] += std::max<std::int64_t>(n, 1);
        if (r == me) {
          global_index_.push_back(static_cast<std::int64_t>(params_.size()));
          mine.back().params.vars.push_back(v);
        }
        owner_.push_back(r);
        params_.push_back(v);
      }
    }
    return mine;
  }

  /// i of "state.<i>.<name>", or -1.
  static std::int64_t index_of(const std::string& name) {
    if (name.rfind("state.", 0) != 0) return -1;
    const std::size_t dot = name.find('.', 6);
    if (dot == std::string::npos || dot == 6) return -1;
    std::int64_t i = 0;
    for (std::size_t k = 6; k < dot; ++k) {
      if (name[k] < '0' || name[k] > '9') return -1;
      i = i * 10 + (name[k] - '0');
    }
    return i;
  }
  /// "state.<i>.<rest>" as "state.<to[i]>.<rest>".
  static std::string rename(const std::string& name, const std::vector<std::int64_t>& to) {
    const std::int64_t i = index_of(name);
    EMBER_CHECK(i >= 0 && static_cast<std::size_t>(i) < to.size(),
                "ember: dist::ZeroRedundancyOptimizer: unexpected state name '", name, "'");
    return "state." + std::to_string(to[static_cast<std::size_t>(i)]) +
           name.substr(name.find('.', 6));
  }

  /// `state` of rank `root` on every rank: a header (names, element types, shapes) as int64,
  /// then each tensor.
  static optim::OptimizerState broadcast_state(const optim::OptimizerState& state, int root) {
    const bool sending = rank() == root;
    std::vector<std::int64_t> header;
    if (sending) {
      header.push_back(static_cast<std::int64_t>(state.size()));
      for (const auto& [name, t] : state) {
        header.push_back(static_cast<std::int64_t>(t.dtype()));
        header.push_back(t.rank());
        for (int d = 0; d < t.rank(); ++d) header.push_back(t.shape()[d]);
        header.push_back(static_cast<std::int64_t>(name.size()));
        for (const char c : name) header.push_back(static_cast<unsigned char>(c));
      }
    }
    const Tensor<std::int64_t> size = from_vector<std::int64_t>({std::int64_t(header.size())});
    broadcast<std::int64_t>(size, root);
    const Tensor<std::int64_t> head =
        sending ? from_vector<std::int64_t>(header) : empty<std::int64_t>(Shape{size.item()});
    broadcast<std::int64_t>(head, root);
    const std::int64_t* h = head.data();
    optim::OptimizerState out;
    const std::int64_t count = *h++;
    for (std::int64_t k = 0; k < count; ++k) {
      const auto dtype = static_cast<DType>(*h++);
      std::vector<std::int64_t> dims(static_cast<std::size_t>(*h++));
      for (std::int64_t& d : dims) d = *h++;
      std::string name(static_cast<std::size_t>(*h++), ' ');
      for (char& c : name) c = static_cast<char>(*h++);
      const Shape shape(dims);
      AnyTensor t = sending ? state[static_cast<std::size_t>(k)].second : empty_of(dtype, shape);
      t.visit([&]<class T>(const Tensor<T>& x) {
        if constexpr (Communicable<T>) {
          broadcast<T>(x, root);
        } else {
          fail("ember: dist::ZeroRedundancyOptimizer: cannot send optimizer state of type ",
               name_of(dtype));
        }
      });
      out.emplace_back(std::move(name), std::move(t));
    }
    return out;
  }
  static AnyTensor empty_of(DType dtype, const Shape& shape) {
    switch (dtype) {
      case DType::f64:
        return empty<double>(shape);
      case DType::f32:
        return empty<float>(shape);
      case DType::bf16:
        return empty<bf16>(shape);
      case DType::f16:
        return empty<half>(shape);
      case DType::i64:
        return empty<std::int64_t>(shape);
      default:
        fail("ember: dist::ZeroRedundancyOptimizer: optimizer state of type ", name_of(dtype));
    }
  }

  std::vector<optim::AnyVar> params_;       // every parameter, in the groups' order
  std::vector<int> owner_;                  // of each
  std::vector<std::int64_t> global_index_;  // of each parameter this rank owns
  Opt inner_;                               // over the owned parameters
};

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::dist
