// dist::DistributedDataParallel: the same model on every rank, each on its share of the batch,
// with the gradients averaged across the ranks during backward.
//
//   dist::World world = dist::init(argc, argv);
//   ResNet model(...);                           // on its device first: DDP hooks these Vars
//   dist::DistributedDataParallel ddp(model);    // rank 0's parameters and buffers everywhere
//   ...
//   loss.backward();                             // returns with every grad() averaged
//   opt.step();                                  // the same update on every rank
//
// How: the parameters are grouped into buckets of about DDPOptions::bucket_bytes, in reverse
// registration order (the order backward produces their gradients). Each parameter carries a
// post-accumulate-grad hook (autograd/tape.hpp); when the last gradient of a bucket has arrived,
// the bucket is packed into one buffer and its all-reduce starts (MPI_Iallreduce; NCCL on a
// second CUDA stream), so communication overlaps the rest of the backward. Buckets start in the
// same order on every rank (bucket k waits for 0..k-1), as MPI and NCCL require. A callback
// queued at the first hook runs when the backward's nodes are done: it starts the buckets still
// waiting (parameters that got no gradient on this rank contribute zeros, so no rank waits for a
// gradient that will not come), waits for all, and writes sum / size() into each grad(). A
// parameter that no rank gave a gradient keeps none, as in one process: each bucket also sums
// one "has a gradient" flag per parameter.
//
// ddp.no_sync() returns a scope during which backward accumulates locally and communicates
// nothing (gradient accumulation): the first backward after the scope averages the sum. In a
// world of one DDP does nothing at all (no hooks, no copies): a trainer can always build one.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../autograd/tape.hpp"
#include "../autograd/var.hpp"
#include "../core/cuda.hpp"
#include "../exec/assign.hpp"
#include "../nn/module.hpp"
#include "../tensor/factories.hpp"
#include "collectives.hpp"
#include "world.hpp"

namespace ember::dist {

struct DDPOptions {
  /// The size a bucket grows to before the next parameter starts a new one (PyTorch's 25 MiB).
  std::int64_t bucket_bytes = std::int64_t{25} << 20;
  /// Also broadcast rank 0's buffers (batch norm's running statistics) at construction.
  bool broadcast_buffers = true;
};

/// What the latest synchronised backward did (for tests and benchmarks).
struct DDPStats {
  int buckets = 0;                  // buckets all-reduced
  int started_during_backward = 0;  // of those, started by a hook, before the last node ran
  std::int64_t bytes = 0;           // bytes all-reduced (gradients and flags)
  double exposed_seconds = 0;       // after the last node: starting the rest, waiting, unpacking
};

// In the translation unit's executor namespace: packing the buckets evaluates expressions.
inline namespace EMBER_UNIT_KIND {

class DistributedDataParallel {
#if defined(EMBER_WITH_CUDA)
  // On a GPU a bucket's all-reduce runs on a second stream of its device, between two events:
  // `packed` (recorded on ember's stream after the packing) and `reduced` (on the side stream,
  // which ember's stream waits for before unpacking), so NCCL overlaps the backward's kernels.
  struct SideEvents {
    std::shared_ptr<CUevent_st> packed, reduced;
  };
  static std::shared_ptr<CUevent_st> make_event() {
    cudaEvent_t e = nullptr;
    cuda::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return {e, [](cudaEvent_t x) { (void)cudaEventDestroy(x); }};
  }
  static cuda::stream_t side_stream(int device) {
    static std::array<cuda::stream_t, cuda::detail::kMaxDevices> streams{};
    cuda::stream_t& s = streams.at(static_cast<std::size_t>(device));
    if (s == nullptr) {
      cuda::DeviceGuard guard(device);
      cuda::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                  "cudaStreamCreateWithFlags");
    }
    return s;
  }
#endif

  template <FloatingElement T>
  struct Bucket {
    using W = detail::reduce_t<T>;  // bf16 and half are reduced in float, rounded once
    std::vector<Var<T>> params;
    std::vector<std::int64_t> offsets;  // of each parameter's gradient in the buffer
    std::int64_t elements = 0;          // gradient elements; the flags follow them
    Tensor<W> buffer;
    Work work;
#if defined(EMBER_WITH_CUDA)
    SideEvents events;
#endif
  };
  using AnyBucket = std::variant<Bucket<float>, Bucket<double>, Bucket<bf16>, Bucket<half>>;

  struct State {
    std::vector<AnyBucket> buckets;
    std::vector<int> waiting;  // per bucket: its parameters without a gradient yet
    int next = 0;              // buckets started in this backward
    bool in_backward = false;
    bool sync = true;
    int size = 1;
    DDPStats stats;
  };

 public:
  explicit DistributedDataParallel(nn::Module& model, DDPOptions options = {})
      : model_(&model), options_(options), state_(std::make_shared<State>()) {
    const detail::WorldState& s = detail::active_state("DistributedDataParallel");
    EMBER_CHECK(options.bucket_bytes > 0,
                "ember::dist::DistributedDataParallel: bucket_bytes must be positive, got ",
                options.bucket_bytes);
    state_->size = s.size;
    if (s.size == 1) return;  // alone, the local gradients are the averages: nothing to hook
    check_same_model(model);
    for (const auto& [name, p] : model.named_parameters()) {
      std::visit([](auto* v) { dist::broadcast(v->value(), 0); }, p);
    }
    if (options.broadcast_buffers) sync_buffers();
    build_buckets(model);
  }
  ~DistributedDataParallel() {
    for (auto& h : hooks_) h.remove();
  }
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  nn::Module& module() const { return *model_; }
  /// Copies rank 0's buffers (batch norm's running statistics, which each rank updates from its
  /// own part of the batch) to every rank: before evaluating, so that every rank evaluates the
  /// model rank 0 would save.
  void sync_buffers() {
    if (state_->size == 1) return;
    for (const auto& [name, b] : model_->named_buffers()) {
      std::visit([](auto* t) { dist::broadcast(*t, 0); }, b);
    }
  }
  /// The number of buckets the parameters were grouped into.
  int bucket_count() const { return static_cast<int>(state_->buckets.size()); }
  /// Buckets whose all-reduce the backward now running has started (0 outside a backward).
  int buckets_started() const { return state_->next; }
  const DDPStats& last_backward() const { return state_->stats; }

  /// A scope in which backward accumulates gradients locally, without communicating.
  class NoSync {
   public:
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    ~NoSync() { state_->sync = previous_; }

   private:
    friend class DistributedDataParallel;
    explicit NoSync(std::shared_ptr<State> state)
        : state_(std::move(state)), previous_(std::exchange(state_->sync, false)) {}
    std::shared_ptr<State> state_;
    bool previous_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(state_); }
  /// Whether the backwards that follow average the gradients (true) or accumulate locally
  /// (false), as no_sync() does for a scope: `ddp.set_grad_sync(micro + 1 == micro_batches)`.
  void set_grad_sync(bool on) { state_->sync = on; }

 private:
  // The ranks must hold the same model: the same number of parameters and elements.
  static void check_same_model(const nn::Module& model) {
    std::int64_t count = 0, elements = 0;
    for (const auto& [name, p] : model.named_parameters()) {
      ++count;
      elements += std::visit([](auto* v) { return v->value().numel(); }, p);
    }
    const Tensor<std::int64_t> lo = from_vector<std::int64_t>({count, elements});
    const Tensor<std::int64_t> hi = lo.clone();
    dist::all_reduce(lo, ReduceOp::min);
    dist::all_reduce(hi, ReduceOp::max);
    const auto a = lo.to_vector(), b = hi.to_vector();
    EMBER_CHECK(a == b, "ember::dist::DistributedDataParallel: rank ", detail::state().rank,
                " has ", count, " parameters with ", elements,
                " elements; the ranks' models differ (between ", a[0], " and ", b[0],
                " parameters, ", a[1], " and ", b[1], " elements)");
  }

  void build_buckets(const nn::Module& model) {
    auto params = model.named_parameters();
    std::reverse(params.begin(), params.end());
    std::int64_t bytes = 0;
    for (const auto& [name, p] : params) {
      std::visit(
          [&](auto* v) {
            using T = typename std::remove_cvref_t<decltype(*v)>::value_type;
            if (!v->requires_grad()) return;
            auto& buckets = state_->buckets;
            const std::int64_t n = v->value().numel();
            const bool fits = !buckets.empty() &&
                              std::holds_alternative<Bucket<T>>(buckets.back()) &&
                              bytes + n * std::int64_t{sizeof(T)} <= options_.bucket_bytes &&
                              std::get<Bucket<T>>(buckets.back()).params.front().value().device() ==
                                  v->value().device();
            if (!fits) {
              buckets.emplace_back(Bucket<T>{});
              bytes = 0;
            }
            auto& b = std::get<Bucket<T>>(buckets.back());
            b.params.push_back(*v);
            b.offsets.push_back(b.elements);
            b.elements += n;
            bytes += n * std::int64_t{sizeof(T)};
            const int index = static_cast<int>(buckets.size()) - 1;
            hooks_.push_back(v->register_post_accumulate_grad_hook(
                [state = state_.get(), index](const Tensor<T>&) { on_ready(*state, index); }));
          },
          p);
    }
    for (auto& any : state_->buckets) {
      std::visit(
          [](auto& b) {
            using W = typename std::remove_cvref_t<decltype(b)>::W;
            const auto count = static_cast<std::int64_t>(b.params.size());
            b.buffer = empty<W>(Shape{b.elements + count}, b.params.front().value().device());
          },
          any);
    }
    state_->waiting.assign(state_->buckets.size(), 0);
  }

  // A parameter's gradient of this backward is complete.
  static void on_ready(State& s, int index) {
    if (!s.sync) return;
    if (!s.in_backward) {
      s.in_backward = true;
      s.next = 0;
      s.stats = DDPStats{};
      for (std::size_t k = 0; k < s.buckets.size(); ++k) {
        s.waiting[k] =
            std::visit([](auto& b) { return static_cast<int>(b.params.size()); }, s.buckets[k]);
      }
      autograd::queue_callback([&s] { finish(s); });
    }
    --s.waiting[static_cast<std::size_t>(index)];
    // Start, in order, every bucket whose gradients are all here.
    const int count = static_cast<int>(s.buckets.size());
    while (s.next < count && s.waiting[static_cast<std::size_t>(s.next)] == 0) {
      start(s, s.next++);
      ++s.stats.started_during_backward;
    }
    // Let the started ones progress (MPI moves data only inside MPI calls).
    for (int k = 0; k < s.next; ++k) {
      std::visit([](auto& b) { b.work.test(); }, s.buckets[static_cast<std::size_t>(k)]);
    }
  }

  // Packs bucket k's gradients (zeros where there is none) and flags, and starts its all-reduce.
  static void start(State& s, int k) {
    std::visit(
        [&](auto& b) {
          using W = typename std::remove_cvref_t<decltype(b)>::W;
          std::vector<W> flags(b.params.size());
          for (std::size_t i = 0; i < b.params.size(); ++i) {
            const auto& p = b.params[i];
            Tensor<W> slot = b.buffer.narrow(0, b.offsets[i], p.value().numel()).view(p.shape());
            const bool has = p.grad().defined();
            flags[i] = W(has ? 1 : 0);
            if (has) {
              slot.copy_(p.grad());
            } else {
              slot = 0;
            }
          }
          Tensor<W> flag_slots =
              b.buffer.narrow(0, b.elements, static_cast<std::int64_t>(b.params.size()));
          flag_slots.copy_(from_vector<W>(flags));
#if defined(EMBER_WITH_CUDA)
          if (b.buffer.device().is_cuda()) {
            const int device = b.buffer.device().index();
            if (!b.events.packed) b.events = {make_event(), make_event()};
            const cuda::stream_t side = side_stream(device);
            cuda::check(cudaEventRecord(b.events.packed.get(), cuda::current_stream(device)),
                        "cudaEventRecord");
            cuda::check(cudaStreamWaitEvent(side, b.events.packed.get(), 0), "cudaStreamWaitEvent");
            cuda::StreamGuard on_side(device, side);
            b.work = dist::all_reduce_async(b.buffer, ReduceOp::sum);
            cuda::check(cudaEventRecord(b.events.reduced.get(), side), "cudaEventRecord");
          } else {
            b.work = dist::all_reduce_async(b.buffer, ReduceOp::sum);
          }
#else
          b.work = dist::all_reduce_async(b.buffer, ReduceOp::sum);
#endif
          s.stats.bytes += b.buffer.numel() * std::int64_t{sizeof(W)};
          ++s.stats.buckets;
        },
        s.buckets[static_cast<std::size_t>(k)]);
  }

  // After the backward's last node: start what is left, wait for everything, write the means.
  static void finish(State& s) {
    const auto started = std::chrono::steady_clock::now();
    s.in_backward = false;
    const int count = static_cast<int>(s.buckets.size());
    while (s.next < count) start(s, s.next++);
    const double scale = 1.0 / static_cast<double>(s.size);
    for (auto& any : s.buckets) {
      std::visit(
          [&](auto& b) {
            using W = typename std::remove_cvref_t<decltype(b)>::W;
            b.work.wait();
#if defined(EMBER_WITH_CUDA)
            if (b.buffer.device().is_cuda()) {
              const int device = b.buffer.device().index();
              cuda::check(
                  cudaStreamWaitEvent(cuda::current_stream(device), b.events.reduced.get(), 0),
                  "cudaStreamWaitEvent");
            }
#endif
            const std::vector<W> flags =
                b.buffer.narrow(0, b.elements, static_cast<std::int64_t>(b.params.size()))
                    .to_vector();
            for (std::size_t i = 0; i < b.params.size(); ++i) {
              if (!(static_cast<double>(flags[i]) > 0.5)) continue;  // no rank had a gradient
              auto& p = b.params[i];
              using T = typename std::remove_cvref_t<decltype(p)>::value_type;
              auto& node = *p.node();
              const Tensor<W> slot =
                  b.buffer.narrow(0, b.offsets[i], p.value().numel()).view(p.shape());
              node.grad = cast<T>(expr::Leaf<W>(slot) * scale);  // allocated if there was none
            }
          },
          any);
    }
    s.next = 0;
    s.stats.exposed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }

  nn::Module* model_;
  DDPOptions options_;
  std::shared_ptr<State> state_;
  std::vector<autograd::HookHandle> hooks_;
};

}  // namespace EMBER_UNIT_KIND
}  // namespace ember::dist
