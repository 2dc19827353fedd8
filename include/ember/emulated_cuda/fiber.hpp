// Fibers: the threads of an emulated CUDA block. Each runs on a stack of its own and hands the
// CPU back only where a CUDA thread can wait for others (__syncthreads, a warp collective) or
// when it finishes, so a block's threads are really concurrent with respect to its barriers,
// on one OS thread and in a fixed order.
//
// On x86-64 a switch saves the callee-saved registers and swaps stack pointers (a few nanoseconds:
// an elementwise launch starts a fiber per CUDA thread). Elsewhere it is POSIX ucontext, correct
// but slower (it saves the signal mask with a system call).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "../core/error.hpp"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace ember::emulated {

/// A fiber's stack: mapped on first use, with an inaccessible guard page below it, so that an
/// overflow faults instead of writing into the next fiber's stack.
class FiberStack {
 public:
  static constexpr std::size_t kBytes = std::size_t{256} << 10;

  FiberStack() = default;
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;
  ~FiberStack() {
    if (base_) ::munmap(base_, kBytes + guard());
  }

  /// The highest address of the stack (stacks grow down), mapping it on first use.
  void* top() {
    if (!base_) {
      void* p = ::mmap(nullptr, kBytes + guard(), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) fail("ember: emulated CUDA: cannot map a fiber stack");
      if (::mprotect(p, guard(), PROT_NONE) != 0) fail("ember: emulated CUDA: no guard page");
      base_ = static_cast<char*>(p);
    }
    return base_ + guard() + kBytes;
  }
  void* bottom() { return static_cast<char*>(top()) - kBytes; }

 private:
  static std::size_t guard() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }
  char* base_ = nullptr;
};

using FiberEntry = void (*)(void* arg);

#if defined(__x86_64__)

/// Where a suspended fiber (or the scheduler) resumes: its saved stack pointer.
struct Context {
  void* sp = nullptr;
};

extern "C" void ember_emulated_switch(void** save_sp, void* load_sp);
extern "C" void ember_emulated_fiber_start();

// Weak symbols: every translation unit that includes this header emits them, the linker keeps
// one. The frame a switch pushes, lowest address first: r15, r14, r13, r12, rbx, rbp, the return
// address. The floating-point control words are not switched: every fiber of the emulation runs
// with the worker thread's (kernels do not change rounding modes).
__asm__(R"(
  .text
  .weak ember_emulated_switch
  .type ember_emulated_switch, @function
ember_emulated_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size ember_emulated_switch, .-ember_emulated_switch

  .weak ember_emulated_fiber_start
  .type ember_emulated_fiber_start, @function
ember_emulated_fiber_start:
  movq %rbx, %rdi
  callq *%r12
  ud2
  .size ember_emulated_fiber_start, .-ember_emulated_fiber_start
)");

/// Prepares `ctx` so that switching to it calls entry(arg) on `stack`. entry must never return:
/// it ends by switching away for good.
inline void make_context(Context& ctx, FiberStack& stack, FiberEntry entry, void* arg) {
  // After the switch pops the frame's seven words the stack pointer is `top`, 16-byte aligned,
  // as the start routine's call expects.
  auto top = reinterpret_cast<std::uintptr_t>(stack.top()) & ~std::uintptr_t{15};
  auto* frame = reinterpret_cast<std::uint64_t*>(top) - 7;
  frame[0] = 0;                                       // r15
  frame[1] = 0;                                       // r14
  frame[2] = 0;                                       // r13
  frame[3] = reinterpret_cast<std::uint64_t>(entry);  // r12
  frame[4] = reinterpret_cast<std::uint64_t>(arg);    // rbx
  frame[5] = 0;                                       // rbp
  frame[6] = reinterpret_cast<std::uint64_t>(&ember_emulated_fiber_start);
  ctx.sp = frame;
}

/// Saves the running context in `from` and resumes `to`.
inline void switch_context(Context& from, Context& to) { ember_emulated_switch(&from.sp, to.sp); }

#else

struct Context {
  ucontext_t uc;
};

namespace detail {
// makecontext passes int arguments: the entry and its argument travel as 32-bit halves.
inline void fiber_trampoline(unsigned e_lo, unsigned e_hi, unsigned a_lo, unsigned a_hi) {
  const auto join = [](unsigned lo, unsigned hi) {
    return (static_cast<std::uintptr_t>(hi) << 32) | lo;
  };
  reinterpret_cast<FiberEntry>(join(e_lo, e_hi))(reinterpret_cast<void*>(join(a_lo, a_hi)));
}
}  // namespace detail

inline void make_context(Context& ctx, FiberStack& stack, FiberEntry entry, void* arg) {
  if (::getcontext(&ctx.uc) != 0) fail("ember: emulated CUDA: getcontext failed");
  ctx.uc.uc_stack.ss_sp = stack.bottom();
  ctx.uc.uc_stack.ss_size = FiberStack::kBytes;
  ctx.uc.uc_link = nullptr;
  const auto e = reinterpret_cast<std::uintptr_t>(entry);
  const auto a = reinterpret_cast<std::uintptr_t>(arg);
  ::makecontext(&ctx.uc, reinterpret_cast<void (*)()>(&detail::fiber_trampoline), 4,
                static_cast<unsigned>(e), static_cast<unsigned>(e >> 32), static_cast<unsigned>(a),
                static_cast<unsigned>(a >> 32));
}

inline void switch_context(Context& from, Context& to) {
  if (::swapcontext(&from.uc, &to.uc) != 0) fail("ember: emulated CUDA: swapcontext failed");
}

#endif

}  // namespace ember::emulated
