// Running part of a test in a child process: for limits (RLIMIT_FSIZE, RLIMIT_AS) and kills
// that must not reach the test program itself.
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

namespace ember::testing {

/// Runs `child` in a forked process and returns its exit status (-signal if killed; 98 if it
/// threw). The child must not use OpenMP (the parent's thread pool is gone after fork) and
/// leaves through _exit with what `child` returned.
template <class F>
int run_in_child(F&& child) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 99;
    try {
      code = child();
    } catch (...) {
      code = 98;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

}  // namespace ember::testing
