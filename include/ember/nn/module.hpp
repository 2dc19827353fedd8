// nn::Module: a named tree of parameters (Vars), buffers (Tensors) and submodules, as PyTorch's.
//
// A layer is a class whose public members are its parameters, named as PyTorch names them
// (`lin.weight`, `lin.bias`), registered in its constructor; submodules are members too,
// registered under their names. named_parameters() walks the tree and gives PyTorch's dotted
// names (`layer1.0.conv1.weight`), which checkpoints use. Modules hold pointers to their own
// members, so they are neither copied nor moved: build them in place.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../autograd/var.hpp"
#include "../core/bf16.hpp"
#include "../core/error.hpp"
#include "../core/half.hpp"
#include "../tensor/tensor.hpp"

namespace ember::nn {

/// A registered parameter, whatever its element type.
using ParameterRef = std::variant<Var<float>*, Var<double>*, Var<bf16>*, Var<half>*>;
/// A registered buffer (running statistics, counters), whatever its element type.
using BufferRef = std::variant<Tensor<float>*, Tensor<double>*, Tensor<bf16>*, Tensor<half>*,
                               Tensor<std::int64_t>*>;

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = delete;
  Module& operator=(Module&&) = delete;

  /// Parameters of this module and its submodules, with dotted names, in registration order.
  std::vector<std::pair<std::string, ParameterRef>> named_parameters() const {
    std::vector<std::pair<std::string, ParameterRef>> out;
    walk("", [&](const std::string& prefix, const Module& m) {
      for (const auto& [name, p] : m.params_) out.emplace_back(prefix + name, p);
    });
    return out;
  }
  /// The parameters of element type T (shared handles: updating them updates the module).
  template <FloatingElement T>
  std::vector<Var<T>> parameters() const {
    std::vector<Var<T>> out;
    for (const auto& [name, p] : named_parameters()) {
      if (auto* v = std::get_if<Var<T>*>(&p)) out.push_back(**v);
    }
    return out;
  }
  std::vector<std::pair<std::string, BufferRef>> named_buffers() const {
    std::vector<std::pair<std::string, BufferRef>> out;
    walk("", [&](const std::string& prefix, const Module& m) {
      for (const auto& [name, b] : m.buffers_) out.emplace_back(prefix + name, b);
    });
    return out;
  }
  /// The submodules below this one, with dotted names (this one not included).
  std::vector<std::pair<std::string, Module*>> named_modules() const {
    std::vector<std::pair<std::string, Module*>> out;
    walk("", [&](const std::string& prefix, const Module& m) {
      for (const auto& [name, c] : m.children_) out.emplace_back(prefix + name, c);
    });
    return out;
  }

  /// The number of parameter elements (all, or only those that require grad).
  std::int64_t parameter_count(bool trainable_only = false) const {
    std::int64_t n = 0;
    for (const auto& [name, p] : named_parameters()) {
      std::visit(
          [&](auto* v) {
            if (!trainable_only || v->requires_grad()) n += v->value().numel();
          },
          p);
    }
    return n;
  }

  /// Training mode (dropout active, batch norm on batch statistics) for this module and below.
  void train(bool on = true) {
    walk_mut([&](Module& m) { m.training_ = on; });
  }
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Moves every parameter and buffer to `device` (parameters become new leaves there).
  /// (An evaluating member of a shared type: it takes the kind's tag, core/config.hpp.)
  template <class Mode = exec::mode>
  void to(Device device) {
    for (const auto& [name, p] : named_parameters()) {
      std::visit(
          [&](auto* v) {
            if (v->value().device() == device) return;
            *v = std::decay_t<decltype(*v)>(v->value().to(device), v->requires_grad());
          },
          p);
    }
    for (const auto& [name, b] : named_buffers()) {
      std::visit([&](auto* t) { *t = t->to(device); }, b);
    }
  }

  /// Forgets every parameter's gradient.
  void zero_grad() {
    for (const auto& [name, p] : named_parameters()) std::visit([](auto* v) { v->zero_grad(); }, p);
  }

 protected:
  /// Registers `p` (a member of the derived class) as parameter `name`; returns it.
  template <FloatingElement T>
  Var<T>& register_parameter(std::string name, Var<T>& p) {
    check_name(name);
    params_.emplace_back(std::move(name), &p);
    return p;
  }
  template <Storable T>
  Tensor<T>& register_buffer(std::string name, Tensor<T>& b) {
    check_name(name);
    buffers_.emplace_back(std::move(name), &b);
    return b;
  }
  template <class M>
  M& register_module(std::string name, M& m) {
    static_assert(std::is_base_of_v<Module, M>, "ember: register_module takes an nn::Module");
    check_name(name);
    children_.emplace_back(std::move(name), &m);
    m.training_ = training_;
    return m;
  }

 private:
  void check_name(const std::string& name) const {
    EMBER_CHECK(!name.empty() && name.find('.') == std::string::npos,
                "ember: nn::Module: a name must be non-empty and without '.', got '", name, "'");
    auto taken = [&](const auto& list) {
      for (const auto& [n, x] : list) {
        if (n == name) return true;
      }
      return false;
    };
    EMBER_CHECK(!taken(params_) && !taken(buffers_) && !taken(children_),
                "ember: nn::Module: the name '", name, "' is registered twice");
  }
  template <class F>
  void walk(const std::string& prefix, F&& f) const {
    f(prefix, *this);
    for (const auto& [name, c] : children_) c->walk(prefix + name + ".", f);
  }
  template <class F>
  void walk_mut(F&& f) {
    f(*this);
    for (const auto& [name, c] : children_) c->walk_mut(f);
  }

  std::vector<std::pair<std::string, ParameterRef>> params_;
  std::vector<std::pair<std::string, BufferRef>> buffers_;
  std::vector<std::pair<std::string, Module*>> children_;
  bool training_ = true;
};

}  // namespace ember::nn

namespace ember::nn::inline EMBER_UNIT_KIND {
/// Copies every parameter and buffer of `from` into the one of the same dotted name in `to`,
/// converting the element type (a float model into its bf16 twin, say): the modules must have
/// the same names and shapes, else an ember::Error names the first difference and nothing is
/// copied.
template <class = void>  // compiled only where called (docs/design.md)
void copy_state(const Module& from, Module& to) {
  const auto src_p = from.named_parameters(), dst_p = to.named_parameters();
  const auto src_b = from.named_buffers(), dst_b = to.named_buffers();
  auto check = [](const auto& src, const auto& dst, const char* what) {
    EMBER_CHECK(src.size() == dst.size(), "ember: nn::copy_state: ", src.size(), " ", what,
                " to copy into ", dst.size());
    for (std::size_t i = 0; i < src.size(); ++i) {
      EMBER_CHECK(src[i].first == dst[i].first, "ember: nn::copy_state: ", what, " ", i, " is '",
                  src[i].first, "' in one module and '", dst[i].first, "' in the other");
      const Shape a = std::visit([](auto* x) { return x->shape(); }, src[i].second);
      const Shape b = std::visit([](auto* x) { return x->shape(); }, dst[i].second);
      EMBER_CHECK(a == b, "ember: nn::copy_state: '", src[i].first, "' has shape ", a.str(),
                  " in one module and ", b.str(), " in the other");
    }
  };
  check(src_p, dst_p, "parameters");
  check(src_b, dst_b, "buffers");
  for (std::size_t i = 0; i < src_p.size(); ++i) {
    std::visit(
        [](auto* s, auto* d) {
          auto value = d->value();
          value.template copy_<typename std::remove_cvref_t<decltype(s->value())>::value_type>(
              s->value().to(value.device()));
        },
        src_p[i].second, dst_p[i].second);
  }
  for (std::size_t i = 0; i < src_b.size(); ++i) {
    std::visit(
        [](auto* s, auto* d) {
          d->template copy_<typename std::remove_cvref_t<decltype(*s)>::value_type>(
              s->to(d->device()));
        },
        src_b[i].second, dst_b[i].second);
  }
}
}  // namespace ember::nn::inline EMBER_UNIT_KIND

namespace ember::nn {

/// model(x) for a module of your own, as PyTorch's module call: derive from nn::Callable<M> too,
/// and its operator() calls M's forward with the same arguments (C++20 has no way for
/// nn::Module itself to see the derived class's forward). ember's own layers are Callable too;
/// the call takes the kind's tag (core/config.hpp), as a layer's forward does.
///
///   struct Gpt : nn::Module, nn::Callable<Gpt> {
///     Var<float> forward(const Tensor<std::int64_t>& ids) const;
///   };
///   Var<float> logits = model(ids);
template <class M>
struct Callable {
  template <class... Args, class Mode = exec::mode>
  decltype(auto) operator()(Args&&... args) const {
    return static_cast<const M&>(*this).forward(std::forward<Args>(args)...);
  }
  template <class... Args, class Mode = exec::mode>
  decltype(auto) operator()(Args&&... args) {
    return static_cast<M&>(*this).forward(std::forward<Args>(args)...);
  }
};

}  // namespace ember::nn
