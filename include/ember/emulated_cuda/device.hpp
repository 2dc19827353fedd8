// The emulated CUDA devices: their memory, their work queues and kernel launches.
//
// Memory. Device allocations come from one arena of reserved address space that host code cannot
// touch: it is mapped inaccessible except while a device's worker runs an operation, so a host
// read or write of a device pointer faults, and the fault handler names it before the process
// dies ("host code read or wrote emulated device memory"). Kernels, copies and the vendor
// libraries' substitutes run on the worker and see it mapped.
//
// Work. Each device has one worker thread that runs everything queued on any of its streams in
// the order it was queued: a stream's operations stay in order, and an event or a synchronise
// waits for what was queued before it, as on the device. Host code goes on while the worker runs,
// so a missing synchronisation (reading a copy's destination before the stream finished) reads
// stale data here too. A failed kernel makes the device's error sticky, as a real launch failure
// does: every later call reports it.
//
// Kernels. launch() checks the grid, block and shared-memory sizes against sm_90's limits and
// queues the grid; the worker runs its blocks one after another (block.hpp runs a block's
// threads). The properties are an H100's (132 SMs, 80 GB), so code that sizes its grid from them
// launches what it would launch there.
#pragma once

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "block.hpp"

namespace ember::emulated {

/// What the emulated devices report: an H100 SXM's figures, sm_90's limits.
struct Limits {
  static constexpr int kSms = 132;
  static constexpr int kMajor = 9, kMinor = 0;
  static constexpr std::size_t kGlobalMemory = std::size_t{80} << 30;
  static constexpr unsigned kThreadsPerBlock = 1024;
  static constexpr unsigned kBlockDim[3] = {1024, 1024, 64};
  static constexpr unsigned kGridDim[3] = {2147483647u, 65535u, 65535u};
  static constexpr std::size_t kSharedPerBlock = 48 << 10;        // without opting in
  static constexpr std::size_t kSharedPerBlockOptin = 227 << 10;  // 232,448 bytes
  static constexpr int kThreadsPerSm = 2048;
  static constexpr int kMaxDevices = 8;
};

/// The device memory arena (one for all emulated devices, so peer copies need nothing more).
class Arena {
 public:
  static constexpr std::size_t kReserve = std::size_t{1} << 40;  // address space, not memory
  static constexpr std::size_t kAlign = 256;                     // cudaMalloc's alignment

  static Arena& get() {
    static Arena* arena = new Arena();  // never destroyed: static destructors may still free
    return *arena;
  }

  /// An allocation of `bytes` on `device`, or nullptr when the device's memory is used up.
  void* allocate(std::size_t bytes, int device) {
    std::lock_guard lock(mutex_);
    const std::size_t size = (std::max<std::size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    if (used_[static_cast<std::size_t>(device)] + size > Limits::kGlobalMemory) return nullptr;
    std::size_t offset = end_;
    auto fit = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second >= size) {
        fit = it;
        break;
      }
    }
    if (fit != free_.end()) {
      offset = fit->first;
      const std::size_t rest = fit->second - size;
      free_.erase(fit);
      if (rest) free_[offset + size] = rest;
    } else {
      if (end_ + size > kReserve) return nullptr;
      end_ += size;
      if (open_ > 0) protect(PROT_READ | PROT_WRITE);
    }
    blocks_[offset] = Allocation{size, device};
    used_[static_cast<std::size_t>(device)] += size;
    return base_ + offset;
  }

  /// Frees an allocation; false when `p` is not the start of one.
  bool release(void* p) {
    std::lock_guard lock(mutex_);
    const auto it = blocks_.find(offset_of(p));
    if (!contains(p) || it == blocks_.end()) return false;
    std::size_t offset = it->first, size = it->second.size;
    used_[static_cast<std::size_t>(it->second.device)] -= size;
    blocks_.erase(it);
    if (size >= (std::size_t{1} << 20)) ::madvise(base_ + offset, size, MADV_DONTNEED);
    // Merge with free neighbours.
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && next->first == offset + size) {
      size += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += size;
        return true;
      }
    }
    free_[offset] = size;
    return true;
  }

  bool contains(const void* p) const {
    const auto* c = static_cast<const char*>(p);
    return c >= base_ && c < base_ + kReserve;
  }
  /// The device of the allocation that holds [p, p + bytes), or -1 when none holds all of it.
  int device_of(const void* p, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    if (!contains(p)) return -1;
    const std::size_t off = offset_of(p);
    auto it = blocks_.upper_bound(off);
    if (it == blocks_.begin()) return -1;
    --it;
    if (off + bytes > it->first + it->second.size) return -1;
    return it->second.device;
  }
  std::size_t used(int device) {
    std::lock_guard lock(mutex_);
    return used_[static_cast<std::size_t>(device)];
  }

  /// Device memory is readable and writable between open() and close() (nested: a count).
  void open() {
    std::lock_guard lock(mutex_);
    if (open_++ == 0) protect(PROT_READ | PROT_WRITE);
  }
  void close() {
    std::lock_guard lock(mutex_);
    if (--open_ == 0) protect(PROT_NONE);
  }
  bool is_open() const { return open_.load() > 0; }

 private:
  struct Allocation {
    std::size_t size;
    int device;
  };

  Arena() {
    void* p =
        ::mmap(nullptr, kReserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fputs("ember: emulated CUDA: cannot reserve address space for device memory\n", stderr);
      std::abort();
    }
    base_ = static_cast<char*>(p);
    install_fault_handler();
  }

  std::size_t offset_of(const void* p) const {
    return static_cast<std::size_t>(static_cast<const char*>(p) - base_);
  }

  void protect(int prot) {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t bytes = (end_ + page - 1) / page * page;
    if (bytes) ::mprotect(base_, bytes, prot);
  }

  // A fault inside the arena while no device operation runs is host code using a device
  // pointer: say so, then let the fault kill the process as it would have.
  static void install_fault_handler() {
    struct sigaction sa {};
    sa.sa_sigaction = &Arena::on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, &previous());
  }
  static struct sigaction& previous() {
    static struct sigaction p {};
    return p;
  }
  static void on_fault(int sig, siginfo_t* info, void* ucontext) {
    Arena& a = get();
    if (a.contains(info->si_addr)) {
      const char* msg =
          a.is_open()
              ? "ember: emulated CUDA: a kernel or copy touched device memory outside every "
                "allocation (an index out of range?)\n"
              : "ember: emulated CUDA: host code read or wrote emulated device memory (a device "
                "pointer used on the host: copy the data with cudaMemcpy, or Tensor::to(cpu))\n";
      [[maybe_unused]] const auto n = ::write(2, msg, std::strlen(msg));
      ::sigaction(SIGSEGV, &previous(), nullptr);
      return;  // the faulting access runs again, under the previous handler
    }
    struct sigaction& p = previous();
    if ((p.sa_flags & SA_SIGINFO) && p.sa_sigaction) {
      p.sa_sigaction(sig, info, ucontext);
    } else {
      ::sigaction(SIGSEGV, &p, nullptr);
    }
  }

  std::mutex mutex_;
  char* base_ = nullptr;
  std::size_t end_ = 0;                         // bytes of the arena handed out so far
  std::map<std::size_t, std::size_t> free_;     // offset -> size, below end_
  std::map<std::size_t, Allocation> blocks_;    // live allocations by offset
  std::size_t used_[Limits::kMaxDevices] = {};  // bytes allocated per device
  std::atomic<int> open_{0};
};

/// CUDA's error codes as the emulation reports them (the real numbers).
enum class Status : int {
  success = 0,
  invalid_value = 1,
  memory_allocation = 2,
  invalid_configuration = 9,
  invalid_device = 101,
  no_device = 100,
  invalid_handle = 400,
  not_ready = 600,
  launch_failure = 719,
};

/// One emulated device: its worker and what runs on it.
class Device {
 public:
  explicit Device(int index) : index_(index), worker_([this] { work(); }) { worker_.detach(); }

  int index() const { return index_; }

  /// Queues `op`; returns its ticket (what an event or a synchronise waits for).
  std::uint64_t push(std::function<void()> op) {
    std::lock_guard lock(mutex_);
    queue_.emplace_back(++queued_, std::move(op));
    ready_.notify_one();
    return queued_;
  }
  /// Waits until the operation with `ticket` (and all before it) has run.
  void wait(std::uint64_t ticket) {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return done_ >= ticket; });
  }
  bool finished(std::uint64_t ticket) {
    std::lock_guard lock(mutex_);
    return done_ >= ticket;
  }
  std::uint64_t last_ticket() {
    std::lock_guard lock(mutex_);
    return queued_;
  }
  void synchronize() { wait(last_ticket()); }

  /// The sticky error of a failed kernel (success while none has failed).
  Status sticky() const { return sticky_.load(); }
  void set_sticky(const std::string& why) {
    std::fprintf(stderr, "ember: emulated CUDA device %d: %s\n", index_, why.c_str());
    std::fflush(stderr);
    sticky_ = Status::launch_failure;
  }

  /// Launches so far (alternates the order in which blocks run their threads).
  unsigned next_launch() { return launches_++; }

 private:
  void work() {
    for (;;) {
      std::pair<std::uint64_t, std::function<void()>> op;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty(); });
        op = std::move(queue_.front());
        queue_.pop_front();
      }
      Arena::get().open();
      op.second();
      Arena::get().close();
      std::lock_guard lock(mutex_);
      done_ = op.first;
      done_cv_.notify_all();
    }
  }

  int index_;
  std::mutex mutex_;
  std::condition_variable ready_, done_cv_;
  std::deque<std::pair<std::uint64_t, std::function<void()>>> queue_;
  std::uint64_t queued_ = 0, done_ = 0;
  std::atomic<Status> sticky_{Status::success};
  std::atomic<unsigned> launches_{0};
  std::thread worker_;
};

/// How many devices the emulation offers: EMBER_EMULATED_CUDA_DEVICES (1 to 8), 1 by default.
inline int device_count() {
  static const int n = [] {
    const char* s = std::getenv("EMBER_EMULATED_CUDA_DEVICES");
    const int v = s ? std::atoi(s) : 1;
    return v < 0 ? 0 : (v > Limits::kMaxDevices ? Limits::kMaxDevices : v);
  }();
  return n;
}

/// Device `index` (0 <= index < device_count()), started on first use and never destroyed.
inline Device& device(int index) {
  static std::once_flag once[Limits::kMaxDevices];
  static Device* devices[Limits::kMaxDevices] = {};
  std::call_once(once[index], [index] { devices[index] = new Device(index); });
  return *devices[index];
}

/// Whether a launch's sizes fit sm_90; "" when they do, else why not.
inline std::string launch_config_error(dim3 grid, dim3 block, std::size_t shared) {
  const unsigned g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  for (int d = 0; d < 3; ++d) {
    const char axis = static_cast<char>('x' + d);
    if (g[d] == 0 || g[d] > Limits::kGridDim[d]) {
      return std::string("grid.") + axis + " = " + std::to_string(g[d]) + " (1 to " +
             std::to_string(Limits::kGridDim[d]) + " on sm_90)";
    }
    if (b[d] == 0 || b[d] > Limits::kBlockDim[d]) {
      return std::string("block.") + axis + " = " + std::to_string(b[d]) + " (1 to " +
             std::to_string(Limits::kBlockDim[d]) + " on sm_90)";
    }
  }
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  if (threads > Limits::kThreadsPerBlock) {
    return "a block of " + std::to_string(threads) + " threads (at most 1024 on sm_90)";
  }
  if (shared > Limits::kSharedPerBlock) {
    return std::to_string(shared) +
           " bytes of dynamic shared memory (at most 49152 without "
           "cudaFuncSetAttribute, 232448 with it, on sm_90)";
  }
  return "";
}

/// Runs a kernel's grid on the calling (worker) thread, block after block.
template <class Launch>
void run_grid(const Launch& launch, dim3 grid, dim3 block, unsigned order, Device& dev) {
  static thread_local Block runner;
  const Block::Body body = [](const void* l) { static_cast<const Launch*>(l)->run_thread(); };
  std::uint64_t linear = 0;
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x, ++linear) {
        const bool reverse = ((linear + order) & 1u) != 0;
        const std::string error = runner.run(body, &launch, uint3{x, y, z}, grid, block, reverse);
        if (!error.empty()) {
          dev.set_sticky("kernel " + launch.name + ", block (" + std::to_string(x) + ", " +
                         std::to_string(y) + ", " + std::to_string(z) + "): " + error);
          return;
        }
      }
    }
  }
}

/// A kernel with its parameters, copied at the launch as CUDA copies them.
template <class... P>
struct KernelLaunch {
  void (*kernel)(P...);
  std::tuple<P...> params;
  std::string name;

  void run_thread() const { std::apply(kernel, params); }
};

}  // namespace ember::emulated
