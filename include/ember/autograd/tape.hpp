// The tape: whole-tensor nodes with sequence numbers, and the iterative backward walk.
//
// Each Var that an operation produced points at its TapeNode (grad_fn); a TapeNode keeps what
// its backward needs (for a fused expression, the expression itself, whose leaves hold their
// tensors and input Vars by value). backward() collects the nodes reachable from the root with
// an explicit stack, runs them in decreasing sequence order (a valid reverse topological order:
// a node's inputs were all created before it), and then releases them unless asked to retain.
//
// Two ways to act during a backward (ember::dist's DistributedDataParallel uses both):
// - a leaf's post-accumulate-grad hooks run once per backward, right after the last node that
//   feeds that leaf has run, so its gradient for this backward is complete
//   (Var::register_post_accumulate_grad_hook);
// - autograd::queue_callback(f), called from such a hook, runs f once after every node of the
//   current backward has run, before backward() returns.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../core/error.hpp"

namespace ember::autograd {

struct VarNodeBase;

struct TapeNode {
  std::uint64_t seq = 0;
  bool released = false;

  TapeNode() : seq(next_seq()) {}
  virtual ~TapeNode() = default;
  TapeNode(const TapeNode&) = delete;
  TapeNode& operator=(const TapeNode&) = delete;

  /// Reads the output Var's gradient and accumulates into the inputs' gradients.
  virtual void backward() = 0;
  /// Drops everything saved for backward.
  virtual void release() = 0;
  /// The Vars this node reads (that may need gradients), for the graph walk.
  virtual void inputs(std::vector<VarNodeBase*>& out) const = 0;
  /// The operation's name, for error messages.
  virtual std::string name() const = 0;

  static std::uint64_t next_seq() {
    static std::atomic<std::uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
  }
};

namespace detail {
// Destroying a long chain of Vars would recurse once per node (Var -> node -> expression ->
// Var ...); instead, tape nodes released by a dying Var are destroyed here, one at a time.
inline void defer_release(std::shared_ptr<TapeNode> p) {
  thread_local std::vector<std::shared_ptr<TapeNode>> pending;
  thread_local bool draining = false;
  pending.push_back(std::move(p));
  if (draining) return;
  draining = true;
  while (!pending.empty()) {
    std::shared_ptr<TapeNode> q = std::move(pending.back());
    pending.pop_back();
    q.reset();  // may push more onto `pending`
  }
  draining = false;
}
}  // namespace detail

struct VarNodeBase {
  bool requires_grad = false;
  // Run once per backward that reaches this leaf, after its last gradient contribution.
  std::vector<std::pair<std::uint64_t, std::function<void()>>> grad_ready_hooks;
  // The gradient is an implicit 1 everywhere (loss.backward() on a computed one-element Var):
  // the node that reads it folds the 1 into its own launch instead of reading a filled tensor.
  bool unit_grad = false;
  std::shared_ptr<TapeNode> grad_fn;  // null for leaves

  VarNodeBase() = default;
  VarNodeBase(const VarNodeBase&) = delete;
  VarNodeBase& operator=(const VarNodeBase&) = delete;
  virtual ~VarNodeBase() {
    if (grad_fn) detail::defer_release(std::move(grad_fn));
  }
  bool is_leaf() const { return grad_fn == nullptr; }
  /// Frees the gradient (intermediate Vars, once their node has used it).
  virtual void drop_grad() = 0;
};

/// Removes a hook it was returned for; does nothing once the Var is gone or after remove().
class HookHandle {
 public:
  HookHandle() = default;
  HookHandle(std::weak_ptr<VarNodeBase> node, std::uint64_t id) : node_(std::move(node)), id_(id) {}
  /// A fresh hook id (the number a hook is registered and removed under).
  static std::uint64_t next_id() {
    static std::atomic<std::uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  void remove() {
    if (auto n = node_.lock()) {
      std::erase_if(n->grad_ready_hooks, [&](const auto& h) { return h.first == id_; });
    }
    node_.reset();
  }

 private:
  std::weak_ptr<VarNodeBase> node_;
  std::uint64_t id_ = 0;
};

namespace detail {
// The callbacks queued during the backward running on this thread (null outside one).
inline thread_local std::vector<std::function<void()>>* queued_callbacks = nullptr;

inline void run_grad_ready_hooks(VarNodeBase& leaf) {
  // A copy: a hook may remove itself or register another.
  const auto hooks = leaf.grad_ready_hooks;
  for (const auto& [id, hook] : hooks) hook();
}
}  // namespace detail

/// Runs `f` once after every node of the backward now running on this thread has run, before
/// backward() returns; callbacks run in the order queued. Only during a backward (from a hook).
inline void queue_callback(std::function<void()> f) {
  EMBER_CHECK(detail::queued_callbacks != nullptr,
              "ember: autograd::queue_callback outside a backward: call it from a gradient hook");
  detail::queued_callbacks->push_back(std::move(f));
}

}  // namespace ember::autograd

namespace ember::autograd::detail::inline EMBER_UNIT_KIND {
/// Whether ins[k] is a leaf with gradient-ready hooks that `ins` lists for the first time: a
/// node that lists a leaf twice (x * x) feeds it once.
inline bool first_hooked_leaf(const std::vector<VarNodeBase*>& ins, std::size_t k) {
  VarNodeBase* v = ins[k];
  const auto before = ins.begin() + static_cast<std::ptrdiff_t>(k);
  return !v->grad_fn && !v->grad_ready_hooks.empty() && std::find(ins.begin(), before, v) == before;
}

/// The tape nodes `root` depends on, latest first (the order backward runs them), and in
/// `feeds`, for each hooked leaf, how many of them feed it (only hooked leaves are counted, off
/// the common path).
inline std::vector<std::shared_ptr<TapeNode>> nodes_to_run(
    VarNodeBase& root, std::unordered_map<VarNodeBase*, int>& feeds) {
  std::vector<std::shared_ptr<TapeNode>> nodes{root.grad_fn};
  std::unordered_set<const TapeNode*> seen{root.grad_fn.get()};
  std::vector<TapeNode*> stack{root.grad_fn.get()};
  std::vector<VarNodeBase*> ins;
  while (!stack.empty()) {
    TapeNode* n = stack.back();
    stack.pop_back();
    if (n->released) {
      fail("ember: backward through ", n->name(),
           " a second time: its saved tensors were released after the first backward; call "
           "backward(retain_graph=true) the first time");
    }
    ins.clear();
    n->inputs(ins);
    for (std::size_t k = 0; k < ins.size(); ++k) {
      VarNodeBase* v = ins[k];
      if (v->grad_fn && seen.insert(v->grad_fn.get()).second) {
        nodes.push_back(v->grad_fn);
        stack.push_back(v->grad_fn.get());
      }
      if (first_hooked_leaf(ins, k)) ++feeds[v];
    }
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const auto& a, const auto& b) { return a->seq > b->seq; });
  return nodes;
}

/// The callbacks queue_callback adds during one backward on this thread; run() runs them, in
/// order, including those they queue.
class CallbackQueue {
 public:
  CallbackQueue() : previous_(std::exchange(queued_callbacks, &callbacks_)) {}
  ~CallbackQueue() { queued_callbacks = previous_; }
  CallbackQueue(const CallbackQueue&) = delete;
  CallbackQueue& operator=(const CallbackQueue&) = delete;

  void run() {
    for (std::size_t i = 0; i < callbacks_.size(); ++i) {
      auto f = std::move(callbacks_[i]);  // f may queue more, growing the queue
      f();
    }
  }

 private:
  std::vector<std::function<void()>> callbacks_;
  std::vector<std::function<void()>>* previous_;
};
}  // namespace ember::autograd::detail::inline EMBER_UNIT_KIND

namespace ember::autograd::inline EMBER_UNIT_KIND {

/// Runs backward from `root` (whose gradient is already seeded).
inline void run_backward(VarNodeBase& root, bool retain_graph) {
  detail::CallbackQueue callbacks;
  if (!root.grad_fn) {
    if (!root.grad_ready_hooks.empty()) detail::run_grad_ready_hooks(root);
    callbacks.run();
    return;
  }
  std::unordered_map<VarNodeBase*, int> feeds;
  std::vector<std::shared_ptr<TapeNode>> nodes = detail::nodes_to_run(root, feeds);
  std::vector<VarNodeBase*> ins;
  for (const auto& n : nodes) {
    n->backward();
    if (feeds.empty()) continue;
    ins.clear();
    n->inputs(ins);
    for (std::size_t k = 0; k < ins.size(); ++k) {
      if (detail::first_hooked_leaf(ins, k) && --feeds[ins[k]] == 0) {
        detail::run_grad_ready_hooks(*ins[k]);
      }
    }
  }
  callbacks.run();
  if (!retain_graph) {
    for (const auto& n : nodes) {
      n->release();
      n->released = true;
    }
  }
  // `nodes` goes out of scope here; released nodes hold nothing, so this does not recurse.
  while (!nodes.empty()) {
    detail::defer_release(std::move(nodes.back()));
    nodes.pop_back();
  }
}

}  // namespace ember::autograd::inline EMBER_UNIT_KIND
