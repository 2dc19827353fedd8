// The tape: whole-tensor nodes with sequence numbers, and the iterative backward walk.
//
// Each Var that an operation produced points at its TapeNode (grad_fn); a TapeNode keeps what
// its backward needs (for a fused expression, the expression itself, whose leaves hold their
// tensors and input Vars by value). backward() collects the nodes reachable from the root with
// an explicit stack, runs them in decreasing sequence order (a valid reverse topological order:
// a node's inputs were all created before it), and then releases them unless asked to retain.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_set>
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

/// Runs backward from `root` (whose gradient is already seeded).
inline void run_backward(VarNodeBase& root, bool retain_graph) {
  if (!root.grad_fn) return;
  std::vector<std::shared_ptr<TapeNode>> nodes;
  std::unordered_set<const TapeNode*> seen;
  std::vector<TapeNode*> stack;
  std::vector<VarNodeBase*> ins;
  nodes.push_back(root.grad_fn);
  seen.insert(root.grad_fn.get());
  stack.push_back(root.grad_fn.get());
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
    for (VarNodeBase* v : ins) {
      if (v->grad_fn && seen.insert(v->grad_fn.get()).second) {
        nodes.push_back(v->grad_fn);
        stack.push_back(v->grad_fn.get());
      }
    }
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const auto& a, const auto& b) { return a->seq > b->seq; });
  for (const auto& n : nodes) n->backward();
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

}  // namespace ember::autograd
