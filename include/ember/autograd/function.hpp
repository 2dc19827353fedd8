// Custom functions: an operation whose forward and backward the user writes, recorded on the
// tape like any other.
//
//   struct Cube {
//     static constexpr const char* name = "cube";            // optional, for error messages
//     static ember::Tensor<double> forward(ember::FunctionContext& ctx,
//                                          const ember::Tensor<double>& x) {
//       ctx.save(x);
//       return x * x * x;
//     }
//     static ember::Tensor<double> backward(ember::FunctionContext& ctx,
//                                           const ember::Tensor<double>& grad) {
//       const auto x = ctx.saved<double>(0);
//       return grad * 3.0 * x * x;
//     }
//   };
//   ember::Var<double> y = ember::apply<Cube>(x);
//
// forward receives the values of its Var arguments as Tensors (and every other argument as
// given) and runs with recording off. backward receives the gradient of the output and returns
// one gradient per tensor argument (Var or Tensor), in order: a Tensor when there is one, else
// a std::tuple of Tensors; an undefined Tensor means "no gradient". ctx.needs_input_grad(i)
// says whether tensor argument i wants one.
#pragma once

#include <algorithm>
#include <any>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "../memory/storage.hpp"
#include "../tensor/tensor.hpp"
#include "grad_mode.hpp"
#include "tape.hpp"
#include "var.hpp"
#include "var_node.hpp"

namespace ember {

/// What a custom function's forward keeps for its backward.
class FunctionContext {
 public:
  /// Keeps `t` for backward. Modifying it in place before backward makes backward throw.
  template <Storable T>
  void save(const Tensor<T>& t) {
    EMBER_CHECK(t.defined(), "ember: ", name_, ": save() of an undefined tensor");
    saved_.push_back({t, t.storage().get(), t.storage()->version(), &typeid(T)});
  }
  /// The i-th saved tensor, which must have element type T.
  template <Storable T>
  Tensor<T> saved(std::size_t i) const {
    EMBER_CHECK(i < saved_.size(), "ember: ", name_, ": saved(", i, ") but only ", saved_.size(),
                " tensors were saved");
    const Entry& s = saved_[i];
    EMBER_CHECK(*s.type == typeid(T), "ember: ", name_, ": saved tensor ", i,
                " was saved with another element type");
    EMBER_CHECK(s.storage->version() == s.version, "ember: backward of ", name_, ": saved tensor ",
                i, " was modified in place after it was saved (version ", s.version, ", now ",
                s.storage->version(), "); clone it before modifying it");
    return std::any_cast<Tensor<T>>(s.tensor);
  }
  std::size_t saved_count() const { return saved_.size(); }
  /// Whether tensor argument i (counting Vars and Tensors only) needs a gradient.
  bool needs_input_grad(std::size_t i) const { return i < needs_.size() && needs_[i]; }
  /// Anything else the backward needs (sizes, options): default-constructed on first use.
  template <class S>
  S& state() {
    if (!state_.has_value()) state_ = S{};
    S* s = std::any_cast<S>(&state_);
    EMBER_CHECK(s != nullptr, "ember: ", name_, ": state<S>() used with two different types");
    return *s;
  }
  const std::string& name() const { return name_; }

  // Set by apply.
  explicit FunctionContext(std::string name, std::vector<bool> needs)
      : name_(std::move(name)), needs_(std::move(needs)) {}
  void release() {
    saved_.clear();
    state_.reset();
  }

 private:
  struct Entry {
    std::any tensor;
    const Storage* storage;
    std::uint64_t version;
    const std::type_info* type;
  };
  std::string name_;
  std::vector<bool> needs_;
  std::vector<Entry> saved_;
  std::any state_;
};

namespace autograd {

template <class A>
struct is_tensor_arg : std::false_type {};
template <class T>
struct is_tensor_arg<Tensor<T>> : std::true_type {};
template <class T>
struct is_tensor_arg<Var<T>> : std::true_type {};

/// What forward receives for an argument: a Var's value, anything else as it is.
template <class A>
decltype(auto) forward_arg(const A& a) {
  if constexpr (is_var<A>::value) {
    return a.value();
  } else {
    return (a);
  }
}

template <class F>
std::string function_name() {
  if constexpr (requires { F::name; }) {
    return F::name;
  } else {
    return "custom function";
  }
}

/// The Var nodes of the tensor arguments that need a gradient (null for the others).
template <class... Args>
std::vector<std::shared_ptr<VarNodeBase>> tensor_arg_nodes(const Args&... args) {
  std::vector<std::shared_ptr<VarNodeBase>> nodes;
  (
      [&] {
        if constexpr (is_var<Args>::value) {
          nodes.push_back(args.requires_grad() ? std::shared_ptr<VarNodeBase>(args.node())
                                               : nullptr);
        } else if constexpr (is_tensor_arg<Args>::value) {
          nodes.push_back(nullptr);
        }
      }(),
      ...);
  return nodes;
}

// In the translation unit's executor namespace, like every evaluating part (core/config.hpp).
inline namespace EMBER_UNIT_KIND {

template <class F, Storable U, class... Args>
class FunctionNode final : public TapeNode {
 public:
  FunctionNode(FunctionContext ctx, VarNode<U>* out, std::vector<std::shared_ptr<VarNodeBase>> in)
      : ctx_(std::move(ctx)), out_(out), in_(std::move(in)) {}

  void backward() override {
    if (!out_->has_grad()) return;
    const Tensor<U> g = out_->grad_or_ones();
    auto grads = as_tuple(F::backward(ctx_, g));
    constexpr std::size_t n_tensor = (0 + ... + std::size_t{is_tensor_arg<Args>::value});
    static_assert(std::tuple_size_v<decltype(grads)> == n_tensor,
                  "ember: a custom function's backward must return one gradient per tensor "
                  "argument (Var or Tensor), in order: a Tensor for one, a std::tuple for more");
    if constexpr (sizeof...(Args) > 0) deliver<0, Args...>(grads);
    out_->drop_grad();
  }
  void release() override {
    ctx_.release();
    in_.clear();
  }
  void inputs(std::vector<VarNodeBase*>& out) const override {
    for (const auto& n : in_) {
      if (n) out.push_back(n.get());
    }
  }
  std::string name() const override { return ctx_.name(); }

 private:
  template <class R>
  static auto as_tuple(R&& r) {
    if constexpr (is_tensor_arg<std::remove_cvref_t<R>>::value) {
      return std::tuple<std::remove_cvref_t<R>>(std::forward<R>(r));
    } else {
      return std::forward<R>(r);
    }
  }
  // Walks the arguments; K counts the tensor arguments seen so far.
  template <std::size_t K, class A, class... Rest, class Grads>
  void deliver(Grads& grads) {
    if constexpr (is_var<A>::value) {
      using T = typename A::value_type;
      using G = std::remove_cvref_t<std::tuple_element_t<K, Grads>>;
      static_assert(std::is_same_v<G, Tensor<T>>,
                    "ember: a custom function's backward must return, for a Var<T> argument, "
                    "a Tensor<T> gradient");
      const G& gk = std::get<K>(grads);
      if (in_[K] && gk.defined()) {
        auto& node = static_cast<VarNode<T>&>(*in_[K]);
        EMBER_CHECK(gk.shape() == node.value.shape(), "ember: backward of ", ctx_.name(),
                    " returned a gradient of shape ", gk.shape().str(), " for argument ", K,
                    " of shape ", node.value.shape().str());
        // The user's tensor may be saved or shared elsewhere: never written into (var_node.hpp).
        accumulate_grad(node, gk, false);
      }
    }
    if constexpr (sizeof...(Rest) > 0) {
      deliver<K + (is_tensor_arg<A>::value ? 1 : 0), Rest...>(grads);
    }
  }

  FunctionContext ctx_;
  VarNode<U>* out_;  // owns this node
  std::vector<std::shared_ptr<VarNodeBase>> in_;
};

}  // namespace EMBER_UNIT_KIND
}  // namespace autograd

}  // namespace ember

namespace ember::inline EMBER_UNIT_KIND {
/// Runs F::forward on the arguments (Vars as their values) and records F::backward for the
/// result. See the top of this header for what F provides.
template <class F, class... Args>
auto apply(const Args&... args) {
  std::vector<bool> needs;
  (
      [&] {
        if constexpr (autograd::is_var<Args>::value) {
          needs.push_back(args.requires_grad());
        } else if constexpr (autograd::is_tensor_arg<Args>::value) {
          needs.push_back(false);
        }
      }(),
      ...);
  const bool record = grad_enabled() && std::find(needs.begin(), needs.end(), true) != needs.end();
  FunctionContext ctx(autograd::function_name<F>(), std::move(needs));
  using Out = decltype(F::forward(ctx, autograd::forward_arg(args)...));
  static_assert(autograd::is_tensor_arg<std::remove_cvref_t<Out>>::value &&
                    !autograd::is_var<std::remove_cvref_t<Out>>::value,
                "ember: a custom function's forward must return a Tensor");
  using U = typename std::remove_cvref_t<Out>::value_type;
  Tensor<U> out;
  {
    no_grad guard;
    out = F::forward(ctx, autograd::forward_arg(args)...);
  }
  EMBER_CHECK(out.defined(), "ember: ", ctx.name(), ": forward returned an undefined tensor");
  auto n = std::make_shared<autograd::VarNode<U>>();
  n->value = std::move(out);
  if (record) {
    n->record(std::make_shared<autograd::FunctionNode<F, U, Args...>>(
        std::move(ctx), n.get(), autograd::tensor_arg_nodes(args...)));
  }
  return Var<U>::from_node(std::move(n));
}

}  // namespace ember::inline EMBER_UNIT_KIND
