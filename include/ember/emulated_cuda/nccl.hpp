// NCCL on the emulated device: the calls ember::dist makes (a communicator per rank from a
// unique id; all-reduce with sum, avg, max and min, broadcast, all-gather, reduce-scatter), queued
// on the stream like NCCL's kernels and run when the stream gets there. The ranks are processes
// (one per rank, as mpirun starts them) that meet in a POSIX shared-memory segment named by the
// unique id, as NCCL's own shared-memory transport does between processes of one machine: each
// rank copies a chunk of its input into its slot, waits for the others, then computes its own
// output from every rank's slot, reducing in rank order in the element's type.
//
// A rank that waits for the others longer than EMBER_DIST_TIMEOUT seconds (600 by default)
// ends the process with a message naming the collective: on a real GPU NCCL would hang.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <type_traits>

#include "../core/bf16.hpp"
#include "../core/half.hpp"
#include "runtime_api.hpp"

enum ncclResult_t {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
};
enum ncclDataType_t {
  ncclInt32 = 2,
  ncclInt64 = 4,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
};
enum ncclRedOp_t { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };

inline constexpr int NCCL_UNIQUE_ID_BYTES = 128;
struct ncclUniqueId {
  char internal[NCCL_UNIQUE_ID_BYTES];
};

namespace ember::emulated {

/// The shared segment's header; every field is a lock-free atomic, valid across processes.
struct NcclShared {
  std::atomic<std::uint32_t> waiting;
  std::atomic<std::uint64_t> generation;
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free &&
                  std::atomic<std::uint64_t>::is_always_lock_free,
              "the emulated NCCL's barrier needs lock-free atomics in shared memory");

inline constexpr std::size_t kNcclSlotBytes = std::size_t{1} << 20;

inline double nccl_timeout_seconds() {
  const char* v = std::getenv("EMBER_DIST_TIMEOUT");
  const double s = v != nullptr ? std::atof(v) : 0.0;
  return s > 0 ? s : 600.0;
}

}  // namespace ember::emulated

struct ncclComm {
  int rank = 0, nranks = 1, device = 0;
  std::size_t bytes = 0;
  ember::emulated::NcclShared* shared = nullptr;
  unsigned char* slots = nullptr;  // nranks slots of kNcclSlotBytes

  unsigned char* slot(int r) const {
    return slots + static_cast<std::size_t>(r) * ember::emulated::kNcclSlotBytes;
  }
  /// Every rank arrives before any leaves (sense by generation).
  void barrier(const char* what) const {
    const std::uint64_t gen = shared->generation.load(std::memory_order_acquire);
    if (shared->waiting.fetch_add(1, std::memory_order_acq_rel) + 1 ==
        static_cast<std::uint32_t>(nranks)) {
      shared->waiting.store(0, std::memory_order_relaxed);
      shared->generation.fetch_add(1, std::memory_order_acq_rel);
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    const double limit = ember::emulated::nccl_timeout_seconds();
    while (shared->generation.load(std::memory_order_acquire) == gen) {
      std::this_thread::yield();
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit) {
        std::fprintf(stderr,
                     "ember: emulated NCCL: rank %d of %d waited %.0f s in %s for the other ranks "
                     "(EMBER_DIST_TIMEOUT); ending the process\n",
                     rank, nranks, limit, what);
        std::abort();
      }
    }
  }
};
using ncclComm_t = ncclComm*;

inline const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error (the emulated NCCL's shared memory)";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
  }
  return "unknown result code";
}

/// A fresh name for the ranks' shared segment.
inline ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static std::atomic<unsigned> counter{0};
  std::random_device random;
  const std::string name = "/ember-nccl-" + std::to_string(::getpid()) + "-" +
                           std::to_string(counter++) + "-" + std::to_string(random());
  *id = ncclUniqueId{};
  std::memcpy(id->internal, name.c_str(), name.size());
  return ncclSuccess;
}

/// Joins the communicator of `nranks` ranks that share `id`: rank 0 creates the segment, the
/// others open it; all meet at a barrier, after which the name is removed (the mappings stay).
inline ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  using namespace ember::emulated;
  if (comm == nullptr || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  const std::string name(id.internal, strnlen(id.internal, NCCL_UNIQUE_ID_BYTES));
  if (name.empty()) return ncclInvalidArgument;
  const std::size_t bytes = 64 + static_cast<std::size_t>(nranks) * kNcclSlotBytes;
  int fd = -1;
  if (rank == 0) {
    fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return ncclSystemError;
  } else {
    // Rank 0 may not have made it yet, or not sized it.
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      fd = ::shm_open(name.c_str(), O_RDWR, 0600);
      struct stat st {};
      if (fd >= 0 && ::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) == bytes) break;
      if (fd >= 0) ::close(fd);
      fd = -1;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
          nccl_timeout_seconds()) {
        return ncclSystemError;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return ncclSystemError;
  auto* c = new ncclComm;
  c->rank = rank;
  c->nranks = nranks;
  c->device = current_device();
  c->bytes = bytes;
  c->shared = static_cast<NcclShared*>(p);
  c->slots = static_cast<unsigned char*>(p) + 64;
  c->barrier("ncclCommInitRank");
  if (rank == 0) ::shm_unlink(name.c_str());
  *comm = c;
  return ncclSuccess;
}

inline ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  ::munmap(comm->shared, comm->bytes);
  delete comm;
  return ncclSuccess;
}

namespace ember::emulated {

inline std::size_t nccl_size(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

/// a op b in T (float arithmetic rounded to T for the 2-byte types).
template <class T>
T nccl_combine(T a, T b, ncclRedOp_t op) {
  using C = std::conditional_t<std::is_integral_v<T> || std::is_same_v<T, double>, T, float>;
  const C x = static_cast<C>(a), y = static_cast<C>(b);
  switch (op) {
    case ncclMax:
      return T(x > y ? x : y);
    case ncclMin:
      return T(x < y ? x : y);
    case ncclProd:
      return T(x * y);
    default:
      return T(x + y);
  }
}

enum class NcclKind { all_reduce, broadcast, all_gather, reduce_scatter };

/// Runs one collective on the worker: `count` elements per rank's block (all_reduce and
/// broadcast: the whole buffer; all_gather: each rank's input; reduce_scatter: each output).
template <class T>
void nccl_run(const ncclComm& c, NcclKind kind, const void* in, void* out, std::size_t count,
              ncclRedOp_t op, int root, const char* what) {
  const int n = c.nranks;
  const std::size_t blocks = kind == NcclKind::reduce_scatter ? static_cast<std::size_t>(n) : 1;
  const std::size_t chunk = kNcclSlotBytes / (sizeof(T) * blocks);
  const T* src = static_cast<const T*>(in);
  T* dst = static_cast<T*>(out);
  for (std::size_t off = 0; off < count; off += chunk) {
    const std::size_t len = std::min(chunk, count - off);
    T* mine = reinterpret_cast<T*>(c.slot(c.rank));
    for (std::size_t b = 0; b < blocks; ++b) {
      std::memcpy(mine + b * len, src + b * count + off, len * sizeof(T));
    }
    c.barrier(what);
    const auto slot_of = [&](int r) { return reinterpret_cast<const T*>(c.slot(r)); };
    switch (kind) {
      case NcclKind::broadcast:
        std::memcpy(dst + off, slot_of(root), len * sizeof(T));
        break;
      case NcclKind::all_gather:
        for (int r = 0; r < n; ++r) {
          std::memcpy(dst + static_cast<std::size_t>(r) * count + off, slot_of(r), len * sizeof(T));
        }
        break;
      case NcclKind::all_reduce:
      case NcclKind::reduce_scatter: {
        const std::size_t block = kind == NcclKind::reduce_scatter ? c.rank : 0;
        for (std::size_t i = 0; i < len; ++i) {
          T acc = slot_of(0)[block * len + i];
          for (int r = 1; r < n; ++r) acc = nccl_combine(acc, slot_of(r)[block * len + i], op);
          if (op == ncclAvg) {
            if constexpr (std::is_integral_v<T> || std::is_same_v<T, double>) {
              acc = static_cast<T>(acc / n);
            } else {
              acc = T(static_cast<float>(acc) / static_cast<float>(n));
            }
          }
          dst[off + i] = acc;
        }
        break;
      }
    }
    c.barrier(what);  // every rank has read the slots before they are written again
  }
}

/// Checks the arguments now and queues the collective on `stream`.
inline ncclResult_t nccl_enqueue(ncclComm_t c, NcclKind kind, const void* in, void* out,
                                 std::size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                                 cudaStream_t stream, const char* what) {
  if (c == nullptr || root < 0 || root >= c->nranks) return ncclInvalidArgument;
  if (count == 0) return ncclSuccess;
  const std::size_t n = static_cast<std::size_t>(c->nranks), bytes = count * nccl_size(type);
  const std::size_t in_bytes = kind == NcclKind::reduce_scatter ? bytes * n : bytes;
  const std::size_t out_bytes = kind == NcclKind::all_gather ? bytes * n : bytes;
  if (Arena::get().device_of(in, in_bytes) != c->device ||
      Arena::get().device_of(out, out_bytes) != c->device) {
    return ncclInvalidArgument;
  }
  const auto run = [=]<class T>(T) { nccl_run<T>(*c, kind, in, out, count, op, root, what); };
  switch (type) {
    case ncclInt32:
      enqueue(stream, [=] { run(std::int32_t{}); });
      break;
    case ncclInt64:
      enqueue(stream, [=] { run(std::int64_t{}); });
      break;
    case ncclFloat16:
      enqueue(stream, [=] { run(ember::half{}); });
      break;
    case ncclBfloat16:
      enqueue(stream, [=] { run(ember::bf16{}); });
      break;
    case ncclFloat32:
      enqueue(stream, [=] { run(float{}); });
      break;
    case ncclFloat64:
      enqueue(stream, [=] { run(double{}); });
      break;
    default:
      return ncclInvalidArgument;
  }
  return ncclSuccess;
}

}  // namespace ember::emulated

inline ncclResult_t ncclAllReduce(const void* in, void* out, std::size_t count, ncclDataType_t type,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return ember::emulated::nccl_enqueue(comm, ember::emulated::NcclKind::all_reduce, in, out, count,
                                       type, op, 0, stream, "ncclAllReduce");
}
inline ncclResult_t ncclBroadcast(const void* in, void* out, std::size_t count, ncclDataType_t type,
                                  int root, ncclComm_t comm, cudaStream_t stream) {
  return ember::emulated::nccl_enqueue(comm, ember::emulated::NcclKind::broadcast, in, out, count,
                                       type, ncclSum, root, stream, "ncclBroadcast");
}
inline ncclResult_t ncclAllGather(const void* in, void* out, std::size_t count, ncclDataType_t type,
                                  ncclComm_t comm, cudaStream_t stream) {
  return ember::emulated::nccl_enqueue(comm, ember::emulated::NcclKind::all_gather, in, out, count,
                                       type, ncclSum, 0, stream, "ncclAllGather");
}
inline ncclResult_t ncclReduceScatter(const void* in, void* out, std::size_t count,
                                      ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream) {
  return ember::emulated::nccl_enqueue(comm, ember::emulated::NcclKind::reduce_scatter, in, out,
                                       count, type, op, 0, stream, "ncclReduceScatter");
}
