// Emulated warps: a row functor's rows run on the CPU with 32 lanes in lockstep, as a CUDA warp
// runs them under exec::for_each_row, so the multi-lane code of the row operators (which
// elements a lane owns, the butterflies that combine lanes, the lane that writes a shared term)
// is tested on machines without a GPU.
//
// Each lane is a std::thread; `across.sum(v)` and `across.max(v)` are the warp's butterflies
// (for step = 16, 8, ..., 1: v combined with lane ^ step's v), each exchange a barrier on which
// every lane waits, so the values are combined in the order the shuffles combine them. A row
// functor whose lanes do not all reach the same collectives (undefined behaviour in a real warp,
// whose shuffles name every lane) stops at a barrier: after 60 s the emulation throws
// ember::Error instead of hanging.
//
// Test-only and slow (threads and barriers per row): exec::EmulatedRowLanes switches it on for
// the calling thread's CPU row launches, in host-compiled translation units.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "../core/error.hpp"

namespace ember::exec {

namespace detail {
inline int& emulated_row_lanes() {
  static thread_local int lanes = 0;  // 0: CPU rows run one lane per row, as usual
  return lanes;
}
}  // namespace detail

/// While alive, exec::for_each_row on the CPU (called from this thread, in a host-compiled
/// translation unit) runs every row with `lanes` emulated lanes, as a CUDA warp would.
class EmulatedRowLanes {
 public:
  explicit EmulatedRowLanes(int lanes = 32) : previous_(detail::emulated_row_lanes()) {
    EMBER_CHECK(lanes >= 1 && lanes <= 32 && (lanes & (lanes - 1)) == 0,
                "ember: EmulatedRowLanes: lanes must be a power of two up to 32, got ", lanes);
    detail::emulated_row_lanes() = lanes;
  }
  ~EmulatedRowLanes() { detail::emulated_row_lanes() = previous_; }
  EmulatedRowLanes(const EmulatedRowLanes&) = delete;
  EmulatedRowLanes& operator=(const EmulatedRowLanes&) = delete;

 private:
  int previous_;
};

/// The lanes of one emulated warp: a slot per lane for exchanges, and a barrier.
class EmulatedWarp {
 public:
  EmulatedWarp(int lanes, std::chrono::milliseconds patience)
      : lanes_(lanes), patience_(patience), slots_(static_cast<std::size_t>(lanes)) {}
  int lanes() const { return lanes_; }

  /// Lane `lane` publishes v; returns lane `other`'s published value (every lane calls it).
  template <class A>
  A exchange(int lane, A v, int other) {
    static_assert(std::is_trivially_copyable_v<A> && sizeof(A) <= kSlotBytes);
    std::memcpy(slots_[static_cast<std::size_t>(lane)].data(), &v, sizeof(A));
    sync();
    A theirs;
    std::memcpy(&theirs, slots_[static_cast<std::size_t>(other)].data(), sizeof(A));
    sync();
    return theirs;
  }

  /// Thrown to the other lanes when one lane has failed (its own error is the one reported).
  struct Aborted {};

  /// Releases every waiting lane with Aborted (a lane failed).
  void abort() {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  static constexpr std::size_t kSlotBytes = 16;

  void sync() {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t generation = generation_;
    if (++arrived_ == lanes_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    const bool released =
        cv_.wait_for(lock, patience_, [&] { return generation_ != generation || aborted_; });
    if (aborted_) throw Aborted{};
    if (!released) {
      aborted_ = true;
      cv_.notify_all();
      fail(
          "ember: emulated warp: lanes did not all reach the same collective (a row functor's "
          "lanes diverged at across.sum/max)");
    }
  }

  int lanes_;
  std::chrono::milliseconds patience_;
  std::vector<std::array<unsigned char, kSlotBytes>> slots_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  bool aborted_ = false;
};

/// The `across` of an emulated lane: the warp's butterflies (exec::gpu::WarpLanes) as exchanges.
struct EmulatedLanes {
  EmulatedWarp* warp;
  int lane;
  template <class A>
  A sum(A v) const {
    for (int step = warp->lanes() / 2; step > 0; step /= 2)
      v += warp->exchange(lane, v, lane ^ step);
    return v;
  }
  template <class A>
  A max(A v) const {
    for (int step = warp->lanes() / 2; step > 0; step /= 2) {
      const A other = warp->exchange(lane, v, lane ^ step);
      v = other > v ? other : v;
    }
    return v;
  }
};

/// f.row(r, lane, lanes, across) for every row, each row by `lanes` threads in lockstep; a lane
/// kept waiting at a collective longer than `patience` means the lanes diverged.
template <class F>
void run_rows_emulated(const F& f, std::int64_t rows, int lanes,
                       std::chrono::milliseconds patience = std::chrono::seconds(60)) {
  EmulatedWarp warp(lanes, patience);
  std::mutex error_mutex;
  std::exception_ptr error;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(lanes));
  for (int lane = 0; lane < lanes; ++lane) {
    threads.emplace_back([&, lane] {
      try {
        for (std::int64_t r = 0; r < rows; ++r) f.row(r, lane, lanes, EmulatedLanes{&warp, lane});
      } catch (const EmulatedWarp::Aborted&) {
        // Another lane failed first and reports why.
      } catch (...) {
        {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
        }
        warp.abort();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace ember::exec
