// OpNode: the tape node of an operation whose backward is written by hand as a function of
// tensors: views, matmul, linear, and the other operators that are not elementwise.
//
// It keeps the inputs' Var nodes (null for an input that needs no gradient), the tensors its
// backward reads (version-checked: modifying one in place before backward throws, naming the
// operation), and the backward itself: a function from the output's gradient to one gradient
// per input (undefined for none). A gradient that shares storage with the output's gradient is
// passed on as not owned (var_node.hpp), so nobody writes into it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../exec/assign.hpp"
#include "../memory/storage.hpp"
#include "../tensor/tensor.hpp"
#include "grad_mode.hpp"
#include "tape.hpp"
#include "var_node.hpp"

namespace ember::autograd {
// In the translation unit's executor namespace, like every evaluating part (core/config.hpp).
inline namespace EMBER_UNIT_KIND {

template <Storable T>
class OpNode final : public TapeNode {
 public:
  /// Maps the output's gradient to the inputs' gradients (in input order; undefined: none).
  using Backward = std::function<std::vector<Tensor<T>>(const Tensor<T>&)>;

  OpNode(std::string name, std::vector<std::shared_ptr<VarNode<T>>> inputs, VarNode<T>* out,
         Backward back)
      : name_(std::move(name)), in_(std::move(inputs)), out_(out), back_(std::move(back)) {}

  /// Adds the output's gradient's contribution into the one input's gradient in place.
  using AddInto = std::function<void(const Tensor<T>& input_grad, const Tensor<T>& g)>;

  /// Where the one input already owns a gradient, the backward adds into it with `add_into`
  /// instead of making a gradient of the input's shape and adding that: an injective view (of
  /// attention's q, k and v, three views of one projection) adds into the elements it selected,
  /// an embedding into the rows its ids name (GPT-2's tied table, 50257 rows, of which a batch
  /// names a few hundred), each sparing passes over the whole input.
  void add_into_with(AddInto add_into) { add_into_ = std::move(add_into); }

  /// Records `t` as read by the backward: modifying it in place before then throws. The node
  /// holds the storage, so a temporary the backward does not capture (a bias passed as `b.to(d)`)
  /// cannot be freed under the check (its memory reused, the version read from a stranger).
  void save(const Tensor<T>& t) {
    if (t.defined()) saved_.push_back({t.storage(), t.storage()->version()});
  }

  void backward() override {
    if (!back_ || !out_->has_grad()) return;
    for (std::size_t k = 0; k < saved_.size(); ++k) {
      const auto& [storage, version] = saved_[k];
      if (storage->version() != version) {
        fail("ember: backward of ", name_, ": a tensor saved for backward (number ", k,
             ") was modified in place after it was used (version ", version, ", now ",
             storage->version(), "); clone it before modifying it");
      }
    }
    const Tensor<T> g = out_->grad_or_ones();
    if (add_into_ && in_.size() == 1 && in_[0] && in_[0]->grad.defined() && !in_[0]->grad_shared) {
      add_into_(in_[0]->grad, g);
      out_->drop_grad();
      return;
    }
    const std::vector<Tensor<T>> grads = back_(g);
    EMBER_CHECK(grads.size() == in_.size(), "ember: internal: backward of ", name_, " gave ",
                grads.size(), " gradients for ", in_.size(), " inputs");
    for (std::size_t i = 0; i < in_.size(); ++i) {
      if (!in_[i] || !grads[i].defined()) continue;
      EMBER_CHECK(grads[i].shape() == in_[i]->value.shape(), "ember: internal: backward of ", name_,
                  " gave shape ", grads[i].shape().str(), " for input ", i, " of shape ",
                  in_[i]->value.shape().str());
      accumulate_grad(*in_[i], grads[i], grads[i].storage() != g.storage());
    }
    out_->drop_grad();
  }
  void release() override {
    back_ = nullptr;
    add_into_ = nullptr;
    saved_.clear();
  }
  void inputs(std::vector<VarNodeBase*>& out) const override {
    for (const auto& n : in_) {
      if (n && n->requires_grad) out.push_back(n.get());
    }
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  std::vector<std::shared_ptr<VarNode<T>>> in_;
  VarNode<T>* out_;  // owns this node
  Backward back_;
  AddInto add_into_;
  std::vector<std::pair<std::shared_ptr<const Storage>, std::uint64_t>> saved_;
};

/// A Var of `value` computed from `inputs` (nodes; null for constants), recorded with `back`
/// and the tensors it reads (`saved`) when recording is on and an input requires grad.
template <Storable T>
std::shared_ptr<VarNode<T>> record_op(std::string name, Tensor<T> value,
                                      std::vector<std::shared_ptr<VarNode<T>>> inputs,
                                      std::vector<Tensor<T>> saved,
                                      typename OpNode<T>::Backward back) {
  auto n = std::make_shared<VarNode<T>>();
  n->value = std::move(value);
  bool any = false;
  for (const auto& in : inputs) any = any || (in && in->requires_grad);
  if (grad_enabled() && any) {
    auto node =
        std::make_shared<OpNode<T>>(std::move(name), std::move(inputs), n.get(), std::move(back));
    for (const auto& t : saved) node->save(t);
    n->record(std::move(node));
  }
  return n;
}

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::autograd
