// ember::dist::World: the processes of a data-parallel job, on MPI.
//
//   int main(int argc, char** argv) {
//     ember::dist::World world = ember::dist::init(argc, argv);
//     // world.rank(), world.size(), world.local_rank() (for Device::cuda(world.local_rank()))
//   }
//
// Started by mpirun or mpiexec (recognised from the launcher's environment: OpenMPI, MPICH and
// Intel MPI through PMI, PMIx), init() initialises MPI and gives the job's world. Started
// plainly, it gives a world of one and leaves MPI alone, so a single-process run needs no
// launcher and behaves as before. There is one World per process; the collectives
// (collectives.hpp) and DistributedDataParallel (ddp.hpp) use it. A program that never calls
// init() is a world of one as well (unless a launcher started it: that is an Error).
//
// Every wait on another rank is bounded (Options::timeout, or EMBER_DIST_TIMEOUT in seconds): a
// rank that died or hangs makes the others throw an ember::Error naming the operation instead of
// waiting forever. The World's destructor finalises MPI, except when MPI was initialised before
// init() (then its owner finalises it) or after a failed collective or during an exception's
// unwinding: then the process leaves without finalising, which makes the launcher stop the other
// ranks rather than leave them waiting for this one.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <thread>

#include "../core/error.hpp"

// MPI: on where the build says so (CMake's ember::dist target defines EMBER_WITH_MPI as 1 or 0),
// and otherwise where the compiler sees <mpi.h>: MPI's own compiler (mpicxx) puts it on the
// include path and links the library. EMBER_WITH_MPI=0 keeps MPI out.
#if !defined(EMBER_WITH_MPI)
#if __has_include(<mpi.h>)
#define EMBER_WITH_MPI 1
#else
#define EMBER_WITH_MPI 0
#endif
#endif
#if EMBER_WITH_MPI
// MPI's C API is all ember uses; the C++ bindings some MPIs still ship only warn.
#if !defined(OMPI_SKIP_MPICXX)
#define OMPI_SKIP_MPICXX 1
#endif
#if !defined(MPICH_SKIP_MPICXX)
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#endif

namespace ember::dist {

struct Options {
  /// How long a collective may wait for the other ranks before it throws (EMBER_DIST_TIMEOUT,
  /// in seconds, overrides it).
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  /// Before each collective, compare its operation, element type and size across the ranks and
  /// throw on a mismatch (one small extra collective each). EMBER_DIST_CHECK=1 turns it on.
  bool check_collectives = false;
};

class World;

namespace detail {

// The process's one World, as the collectives see it.
struct WorldState {
  bool active = false;  // between init() and the World's destruction
  bool mpi = false;     // collectives go through MPI (false: a world of one without MPI)
  bool owns_mpi = false;
  bool failed = false;  // a collective failed or timed out: do not finalise
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  bool check_collectives = false;
#if EMBER_WITH_MPI
  MPI_Comm comm = MPI_COMM_NULL;  // ember's own duplicate of MPI_COMM_WORLD
#endif
  // Set by collectives.hpp: destroys the NCCL communicators before MPI goes away.
  void (*release_nccl)() = nullptr;
};

inline WorldState& state() {
  static WorldState s;
  return s;
}

/// True when a process launcher (mpirun, mpiexec, srun with PMI/PMIx) started this process.
inline bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK",
                           "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

// The World's state for a collective: a program that never called dist::init is a world of one
// (library code, a test), unless a launcher started it: then N copies would each think they are
// alone, so that is an Error.
inline const WorldState& active_state(const char* what) {
  const WorldState& s = state();
  EMBER_CHECK(s.active || !started_by_launcher(), "ember::dist: ", what,
              " in a program started by mpirun, before dist::init(argc, argv): create the World "
              "first thing in main");
  return s;
}

inline std::chrono::milliseconds timeout_from_environment(std::chrono::milliseconds fallback) {
  const char* text = std::getenv("EMBER_DIST_TIMEOUT");
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  EMBER_CHECK(end != text && *end == '\0' && seconds > 0 && seconds < 1e9,
              "ember::dist: EMBER_DIST_TIMEOUT must be a positive number of seconds, got '", text,
              "'");
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0 + 0.5));
}

inline bool flag_from_environment(const char* name, bool fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  const std::string_view v(text);
  if (v == "1" || v == "on" || v == "true") return true;
  if (v == "0" || v == "off" || v == "false") return false;
  fail("ember::dist: ", name, " must be 1 or 0, got '", text, "'");
}

#if EMBER_WITH_MPI
/// Throws ember::Error with MPI's own description unless `rc` is MPI_SUCCESS.
inline void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  state().failed = true;
  fail("ember::dist: rank ", state().rank, " of ", state().size, ": ", what,
       " failed: ", std::string(text, static_cast<std::size_t>(length)));
}

/// Waits for `count` requests, polling until the World's timeout; then throws, naming the
/// operation (`what()` gives its description: built only when it is needed).
template <class Describe>
void wait_all(int count, MPI_Request* requests, const Describe& what) {
  WorldState& s = state();
  const auto start = std::chrono::steady_clock::now();
  for (unsigned polls = 0;; ++polls) {
    int done = 0;
    check_mpi(MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    if (done) return;
    if (polls % 64 == 63) {
      // Progress needs this thread's MPI calls; between them, let the ranks sharing a core run.
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() - start > s.timeout) {
        s.failed = true;
        fail("ember::dist: rank ", s.rank, " of ", s.size, ": ", what(),
             " did not complete within ", std::chrono::duration<double>(s.timeout).count(),
             " s: another rank has died, hangs, or called a different collective (the timeout "
             "is dist::Options::timeout or EMBER_DIST_TIMEOUT, in seconds)");
      }
    }
  }
}

inline void wait(MPI_Request& request, const char* what) {
  wait_all(1, &request, [what] { return std::string(what); });
}
#endif

}  // namespace detail

/// The processes of this job. Created by dist::init; one per process.
class World {
 public:
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  World(World&&) = delete;
  World& operator=(World&&) = delete;

  ~World() {
    detail::WorldState& s = detail::state();
    if (s.release_nccl != nullptr) s.release_nccl();
#if EMBER_WITH_MPI
    const bool leave = s.failed || std::uncaught_exceptions() > 0;
    if (s.mpi && !leave) {
      MPI_Comm_free(&s.comm);
      if (s.owns_mpi) MPI_Finalize();
    }
#endif
    s = detail::WorldState{};
  }

  /// This process's rank, in [0, size()).
  int rank() const { return detail::state().rank; }
  /// The number of processes.
  int size() const { return detail::state().size; }
  /// The rank among the processes on this host (the GPU to use: Device::cuda(local_rank())).
  int local_rank() const { return detail::state().local_rank; }
  /// The number of processes on this host.
  int local_size() const { return detail::state().local_size; }
  /// True for rank 0, the one that prints, logs and writes checkpoints.
  bool is_main() const { return rank() == 0; }
  /// Whether the collectives go through MPI (false: a world of one started without a launcher).
  bool uses_mpi() const { return detail::state().mpi; }
  std::chrono::milliseconds timeout() const { return detail::state().timeout; }
  void set_timeout(std::chrono::milliseconds timeout) {
    EMBER_CHECK(timeout.count() > 0, "ember::dist: the timeout must be positive");
    detail::state().timeout = timeout;
  }

 private:
  friend World init(int& argc, char**& argv, Options options);
  World() = default;
};

/// This process's rank and the number of processes (of the World dist::init made).
inline int rank() { return detail::active_state("dist::rank").rank; }
inline int world_size() { return detail::active_state("dist::world_size").size; }

/// Turns Options::check_collectives on or off for the collectives that follow (every rank must
/// make the same choice at the same point).
inline void set_check_collectives(bool on) {
  detail::state().check_collectives = on && detail::active_state("set_check_collectives").mpi;
}

/// The World of this process: MPI's when a launcher started it, else a world of one.
inline World init(int& argc, char**& argv, Options options = {}) {
  detail::WorldState& s = detail::state();
  EMBER_CHECK(!s.active, "ember::dist::init called twice: one World per process");
  EMBER_CHECK(options.timeout.count() > 0, "ember::dist: Options::timeout must be positive");
  const std::chrono::milliseconds timeout = detail::timeout_from_environment(options.timeout);
  const bool check = detail::flag_from_environment("EMBER_DIST_CHECK", options.check_collectives);
  const bool launched = detail::started_by_launcher();
#if EMBER_WITH_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (launched || initialised) {
    if (!initialised) {
      // OpenMPI's non-blocking all-reduce (libnbc, which ember's collectives use so that every wait
      // is bounded) picks an algorithm slower than its blocking one on one host from 64 KiB up;
      // its ring is as fast or faster (docs/distributed.md). The user's choice stands.
      setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", /*overwrite=*/0);
      // FUNNELED: only the thread that called init() calls MPI (OpenMP's workers never do).
      int provided = 0;
      const int rc = MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
      EMBER_CHECK(rc == MPI_SUCCESS, "ember::dist::init: MPI_Init_thread failed (", rc, ")");
      s.owns_mpi = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    detail::check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &s.comm), "MPI_Comm_dup");
    detail::check_mpi(MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN),
                      "MPI_Comm_set_errhandler");
    detail::check_mpi(MPI_Comm_rank(s.comm, &s.rank), "MPI_Comm_rank");
    detail::check_mpi(MPI_Comm_size(s.comm, &s.size), "MPI_Comm_size");
    MPI_Comm host = MPI_COMM_NULL;
    detail::check_mpi(
        MPI_Comm_split_type(s.comm, MPI_COMM_TYPE_SHARED, s.rank, MPI_INFO_NULL, &host),
        "MPI_Comm_split_type");
    detail::check_mpi(MPI_Comm_rank(host, &s.local_rank), "MPI_Comm_rank");
    detail::check_mpi(MPI_Comm_size(host, &s.local_size), "MPI_Comm_size");
    MPI_Comm_free(&host);
    s.mpi = true;
  }
#else
  (void)argc;
  (void)argv;
  EMBER_CHECK(!launched,
              "ember::dist::init: this program was started by an MPI launcher but built without "
              "MPI: link ember::dist with CMake (it finds MPI; Debian: libopenmpi-dev), or "
              "compile with mpicxx, or define EMBER_WITH_MPI=1 and link MPI yourself");
#endif
  s.timeout = timeout;
  s.check_collectives = check;
  s.active = true;
  return World();
}

}  // namespace ember::dist
