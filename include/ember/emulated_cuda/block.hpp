// One block of an emulated CUDA launch: its threads as fibers (fiber.hpp) on one OS thread,
// __syncthreads as a barrier of every thread that has not exited, and the warp collectives
// (__shfl_*_sync, __ballot_sync, __syncwarp) as exchanges among the lanes their mask names.
//
// A thread runs until it must wait for others, so the order in which the threads' code
// interleaves is the one a barrier allows and nothing more: a thread that reads shared memory
// another thread writes, without a barrier between, reads it before the write in one of the two
// orders the device alternates (ascending thread index in even blocks, descending in odd ones,
// shifted every launch). What CUDA leaves undefined is reported as an error of the launch, with
// the block and the threads involved: a collective whose mask leaves out its caller or names
// lanes that exited or wait elsewhere, lanes of a warp that disagree on a collective, a read of a
// lane outside the mask, and threads stuck at different barriers (a deadlock on the device).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "builtins.hpp"
#include "fiber.hpp"

namespace ember::emulated {

/// The warp collectives, as the scheduler tells them apart.
enum class Collective : std::uint8_t { shfl, shfl_up, shfl_down, shfl_xor, ballot, sync };

inline const char* collective_name(Collective c) {
  switch (c) {
    case Collective::shfl:
      return "__shfl_sync";
    case Collective::shfl_up:
      return "__shfl_up_sync";
    case Collective::shfl_down:
      return "__shfl_down_sync";
    case Collective::shfl_xor:
      return "__shfl_xor_sync";
    case Collective::ballot:
      return "__ballot_sync";
    case Collective::sync:
      return "__syncwarp";
  }
  return "a warp collective";
}

class Block {
 public:
  /// The code every thread runs: body(launch), the kernel with its parameters.
  using Body = void (*)(const void* launch);

  /// Runs every thread of block `index` to its end; returns "" or why the block failed.
  std::string run(Body body, const void* launch, uint3 index, dim3 grid, dim3 block, bool reverse) {
    const unsigned n = block.x * block.y * block.z;
    while (stacks_.size() < n) stacks_.push_back(std::make_unique<FiberStack>());
    threads_.assign(n, Thread{});
    warps_.assign((n + 31) / 32, Warp{});
    body_ = body;
    launch_ = launch;
    live_ = n;
    at_barrier_ = 0;
    error_.clear();
    blockIdx = index;
    blockDim = block;
    gridDim = grid;
    for (unsigned i = 0; i < n; ++i) {
      threads_[i].idx = uint3{i % block.x, i / block.x % block.y, i / (block.x * block.y)};
      make_context(threads_[i].context, *stacks_[i], &Block::entry, this);
    }
    Block* const outer = current();
    current() = this;
    while (live_ > 0 && error_.empty()) {
      bool ran = false;
      for (unsigned k = 0; k < n && error_.empty(); ++k) {
        const unsigned i = reverse ? n - 1 - k : k;
        if (threads_[i].state != State::ready) continue;
        resume(i);
        ran = true;
      }
      if (!ran && live_ > 0 && error_.empty()) error_ = deadlock();
    }
    current() = outer;
    return error_;
  }

  /// __syncthreads(): waits until every thread of the block that has not exited is here.
  void sync_threads() {
    threads_[running_].state = State::at_barrier;
    if (++at_barrier_ == live_) {
      release_barrier();
      return;
    }
    yield();
  }

  /// A warp collective of the running thread: `value` is its contribution, `arg` the source
  /// lane, delta or lane mask of a shuffle. Returns what the collective gives this lane.
  std::uint64_t warp_collective(Collective op, unsigned mask, std::uint64_t value, int arg,
                                int width) {
    const unsigned lane = running_ % 32;
    Warp& w = warps_[running_ / 32];
    if (width <= 0 || width > 32 || (width & (width - 1)) != 0) {
      fault(describe_lane(lane) + " called " + collective_name(op) + " with width " +
            std::to_string(width) + ", not a power of 2 up to 32");
    }
    if (((mask >> lane) & 1u) == 0) {
      fault(describe_lane(lane) + " called " + collective_name(op) + " with mask " + hex(mask) +
            ", which leaves the lane out");
    }
    if (w.arrived == 0) {
      w.mask = mask;
      w.op = op;
      w.width = width;
    } else if (w.mask != mask || w.op != op || w.width != width) {
      fault(describe_lane(lane) + " called " + collective_name(op) + " with mask " + hex(mask) +
            " while other lanes of its warp wait in " + collective_name(w.op) + " with mask " +
            hex(w.mask));
    }
    w.value[lane] = value;
    w.arg[lane] = arg;
    w.arrived |= 1u << lane;
    if ((w.arrived & mask) == mask) {
      complete(w, running_ / 32);
      return w.result[lane];
    }
    threads_[running_].state = State::at_warp;
    yield();
    return w.result[lane];
  }

  /// Ends the launch with an error: the running thread never resumes.
  [[noreturn]] void fault(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    for (;;) switch_context(threads_[running_].context, scheduler_);
  }

  /// The block whose threads run on this OS thread now (null outside a launch).
  static Block*& current() {
    static thread_local Block* block = nullptr;
    return block;
  }

 private:
  enum class State : std::uint8_t { ready, at_barrier, at_warp, done };
  struct Thread {
    Context context;
    uint3 idx{};
    State state = State::ready;
  };
  struct Warp {
    unsigned arrived = 0;
    unsigned mask = 0;
    Collective op = Collective::sync;
    int width = 32;
    std::array<std::uint64_t, 32> value{};
    std::array<int, 32> arg{};
    std::array<std::uint64_t, 32> result{};
  };

  static void entry(void* self) {
    auto* b = static_cast<Block*>(self);
    b->body_(b->launch_);
    b->exit_thread();
  }

  void resume(unsigned i) {
    running_ = i;
    threadIdx = threads_[i].idx;
    switch_context(scheduler_, threads_[i].context);
  }

  void yield() { switch_context(threads_[running_].context, scheduler_); }

  [[noreturn]] void exit_thread() {
    threads_[running_].state = State::done;
    --live_;
    if (live_ > 0 && at_barrier_ == live_) release_barrier();
    for (;;) switch_context(threads_[running_].context, scheduler_);
  }

  void release_barrier() {
    for (Thread& t : threads_) {
      if (t.state == State::at_barrier) t.state = State::ready;
    }
    at_barrier_ = 0;
  }

  // Every lane of the mask has arrived: compute each one's result, wake the waiting ones.
  void complete(Warp& w, unsigned warp) {
    const unsigned base_thread = warp * 32;
    unsigned ballot = 0;
    for (unsigned l = 0; l < 32; ++l) {
      if (((w.mask >> l) & 1u) && w.value[l] != 0) ballot |= 1u << l;
    }
    for (unsigned l = 0; l < 32; ++l) {
      if (((w.mask >> l) & 1u) == 0) continue;
      if (w.op == Collective::ballot) {
        w.result[l] = ballot;
      } else if (w.op == Collective::sync) {
        w.result[l] = 0;
      } else {
        const unsigned src = source_lane(w.op, l, w.arg[l], static_cast<unsigned>(w.width));
        if (((w.mask >> src) & 1u) == 0) {
          fault(describe_lane(l) + " read lane " + std::to_string(src) + " with " +
                collective_name(w.op) + ", but the mask " + hex(w.mask) + " leaves that lane out");
        }
        w.result[l] = w.value[src];
      }
      State& s = threads_[base_thread + l].state;
      if (s == State::at_warp) s = State::ready;
    }
    w.arrived = 0;
  }

  // The lane a shuffle reads, with CUDA's rules for a width below 32: lanes are grouped in
  // segments of `width`; an index wraps within the segment, and a shift or xor that leaves it
  // upwards (or, for an up-shift, downwards) reads the lane's own value.
  static unsigned source_lane(Collective op, unsigned lane, int arg, unsigned width) {
    const unsigned segment = lane & ~(width - 1);
    switch (op) {
      case Collective::shfl:
        return segment + (static_cast<unsigned>(arg) & (width - 1));
      case Collective::shfl_up: {
        const int src = static_cast<int>(lane) - arg;
        return src < static_cast<int>(segment) ? lane : static_cast<unsigned>(src);
      }
      case Collective::shfl_down: {
        const unsigned src = lane + static_cast<unsigned>(arg);
        return src >= segment + width ? lane : src;
      }
      case Collective::shfl_xor: {
        const unsigned src = lane ^ static_cast<unsigned>(arg);
        return src >= segment + width ? lane : src;
      }
      default:
        return lane;
    }
  }

  std::string describe_lane(unsigned lane) const {
    return "thread " + std::to_string(running_ / 32 * 32 + lane) + " (lane " +
           std::to_string(lane) + " of warp " + std::to_string(running_ / 32) + ")";
  }

  static std::string hex(unsigned v) {
    std::ostringstream s;
    s << "0x" << std::hex << v;
    return s.str();
  }

  // No thread can run: say who waits where.
  std::string deadlock() const {
    std::ostringstream s;
    s << "deadlock: no thread can go on;";
    const char* names[] = {"ready", "__syncthreads", "a warp collective", "exited"};
    for (int st = 1; st <= 3; ++st) {
      std::vector<unsigned> ids;
      for (unsigned i = 0; i < threads_.size(); ++i) {
        if (static_cast<int>(threads_[i].state) == st) ids.push_back(i);
      }
      if (ids.empty()) continue;
      s << " " << ids.size() << " thread(s) " << (st == 3 ? "" : "wait in ") << names[st] << " (";
      for (std::size_t k = 0; k < ids.size() && k < 8; ++k) s << (k ? ", " : "") << ids[k];
      s << (ids.size() > 8 ? ", ...)" : ")") << ";";
    }
    for (unsigned wi = 0; wi < warps_.size(); ++wi) {
      const Warp& w = warps_[wi];
      if (w.arrived != 0) {
        s << " warp " << wi << " waits in " << collective_name(w.op) << " with mask " << hex(w.mask)
          << " for lanes " << hex(w.mask & ~w.arrived) << ";";
      }
    }
    return s.str();
  }

  std::vector<std::unique_ptr<FiberStack>> stacks_;  // kept for the OS thread's next blocks
  std::vector<Thread> threads_;
  std::vector<Warp> warps_;
  Context scheduler_;
  Body body_ = nullptr;
  const void* launch_ = nullptr;
  unsigned running_ = 0;
  unsigned live_ = 0;
  unsigned at_barrier_ = 0;
  std::string error_;
};

/// The block running on this OS thread; device functions call it.
inline Block& this_block() { return *Block::current(); }

}  // namespace ember::emulated
