// nn::ModuleList<M>: modules of one type in order, as PyTorch's nn.ModuleList holds a model's
// blocks: each built in place by emplace_back(constructor arguments), owned here and registered
// under its index ("0", "1", ...), so parameters get PyTorch's names ("h.0.attn.in_proj_weight"
// in a module that registers the list as "h"). Unlike nn::Sequential it has no forward: the
// model writes the loop, so blocks may take more than a Var (a mask, a cache) or return more.
//
//   nn::ModuleList<Block> h;                  // a member; register_module("h", h)
//   for (int i = 0; i < layers; ++i) h.emplace_back(config);
//   for (const Block& block : h) x = block.forward(x, mask);
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "module.hpp"

namespace ember::nn {

template <class M>
class ModuleList : public Module {
  static_assert(std::is_base_of_v<Module, M>, "ember: nn::ModuleList<M> holds nn::Module types");
  using Owned = std::vector<std::unique_ptr<M>>;

 public:
  ModuleList() = default;

  /// Builds M(args...) as the next module, registers it under its index and returns it.
  template <class... Args>
  M& emplace_back(Args&&... args) {
    auto module = std::make_unique<M>(std::forward<Args>(args)...);
    M& ref = *module;
    register_module(std::to_string(modules_.size()), ref);
    modules_.push_back(std::move(module));
    return ref;
  }

  std::size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  /// Module i (checked).
  M& operator[](std::size_t i) const {
    EMBER_CHECK(i < modules_.size(), "ember: nn::ModuleList: module ", i, " of ", modules_.size());
    return *modules_[i];
  }

  /// Walks the modules in order, as M&.
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = M;
    using difference_type = std::ptrdiff_t;
    using pointer = M*;
    using reference = M&;
    iterator() = default;
    explicit iterator(typename Owned::const_iterator it) : it_(it) {}
    M& operator*() const { return **it_; }
    M* operator->() const { return it_->get(); }
    iterator& operator++() {
      ++it_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++it_;
      return old;
    }
    bool operator==(const iterator& other) const { return it_ == other.it_; }

   private:
    typename Owned::const_iterator it_;
  };
  iterator begin() const { return iterator(modules_.begin()); }
  iterator end() const { return iterator(modules_.end()); }

 private:
  Owned modules_;
};

}  // namespace ember::nn
