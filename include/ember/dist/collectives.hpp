// Collectives on tensors across the World's ranks: CPU tensors through MPI, CUDA tensors through
// NCCL on ember's stream for their device (one communicator per device, its id broadcast over
// MPI).
//
//   dist::all_reduce(t, dist::ReduceOp::avg);   // in place, on every rank
//   dist::broadcast(t, 0);                      // rank 0's values everywhere
//   dist::all_gather(out, in);                  // out: every rank's `in`, in rank order
//   dist::reduce_scatter(out, in, op);          // out: this rank's share of the reduced `in`
//   dist::Work w = dist::all_reduce_async(t);   // ... other work ...; w.wait();
//
// Element types: float, double, bf16, half, int32, int64. Over MPI, bf16 and half are reduced in
// float and rounded once at the end (never accumulated in 16 bits); NCCL reduces them natively.
// avg is sum / size(), for floating tensors only. A non-contiguous CPU tensor goes through a
// contiguous copy (written back after the collective); CUDA tensors must be contiguous. Every
// rank must call the same collectives in the same order with the same element types and sizes;
// with Options::check_collectives (EMBER_DIST_CHECK=1) a mismatch throws instead of corrupting
// data or hanging. In a world of one without MPI every collective is local: sum, avg, max and
// min leave the tensor as it is, all_gather and reduce_scatter copy.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/bf16.hpp"
#include "../core/cuda.hpp"
#include "../core/dtype.hpp"
#include "../core/half.hpp"
#include "../exec/assign.hpp"
#include "../tensor/factories.hpp"
#include "../tensor/tensor.hpp"
#include "world.hpp"

#if defined(EMBER_WITH_NCCL)
#include <nccl.h>
#endif

namespace ember::dist {

enum class ReduceOp { sum, avg, max, min };
}  // namespace ember::dist

namespace ember::dist::inline EMBER_UNIT_KIND {

inline const char* name_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::avg:
      return "avg";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "?";
}

/// The element types the collectives carry.
template <class T>
concept Communicable = std::same_as<T, float> || std::same_as<T, double> || std::same_as<T, bf16> ||
    std::same_as<T, half> || std::same_as<T, std::int32_t> || std::same_as<T, std::int64_t>;
}  // namespace ember::dist::inline EMBER_UNIT_KIND

namespace ember::dist {

/// A collective started by an *_async call and not yet completed. wait() blocks until it is
/// (bounded by the World's timeout) and writes the result into the tensor; it is idempotent. A
/// Work destroyed unwaited waits first: the tensors it writes stay alive until then.
class Work {
 public:
  Work() = default;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  Work(Work&& other) noexcept { *this = std::move(other); }
  Work& operator=(Work&& other) noexcept {
    if (this != &other) {
      finish_quietly();
#if EMBER_WITH_MPI
      requests_ = std::move(other.requests_);
#endif
      finish_ = std::move(other.finish_);
      label_ = other.label_;
      other.finish_ = nullptr;
    }
    return *this;
  }
  ~Work() { finish_quietly(); }

  void wait() {
#if EMBER_WITH_MPI
    if (!requests_.empty()) {
      detail::wait_all(static_cast<int>(requests_.size()), requests_.data(),
                       [this] { return label_.str(); });
      requests_.clear();
    }
#endif
    if (finish_) std::exchange(finish_, nullptr)();
  }
  /// True once the collective is done (tests without blocking; the result is written by wait()).
  bool test() {
#if EMBER_WITH_MPI
    if (!requests_.empty()) {
      int done = 0;
      detail::check_mpi(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done,
                                    MPI_STATUSES_IGNORE),
                        "MPI_Testall");
      if (!done) return false;
      requests_.clear();
    }
#endif
    return true;
  }

  // ---- for the *_async calls below, which start the collective ----
#if EMBER_WITH_MPI
  void add_request(MPI_Request r) { requests_.push_back(r); }
#endif
  /// What the collective is, for a timeout's message (built only then).
  struct Label {
    const char* collective = "collective";
    const char* op = nullptr;  // the reduction, if any
    std::int64_t numel = 0;
    std::string_view dtype;
    int root = -1;
    std::string str() const {
      std::string text = ember::detail::concat(collective);
      if (op != nullptr) text += ember::detail::concat(" (", op, ")");
      text += ember::detail::concat(" of ", numel, " ", dtype, " elements");
      if (root >= 0) text += ember::detail::concat(" from rank ", root);
      return text;
    }
  };
  /// Names the collective and gives what to run once it completed.
  void then(Label label, std::function<void()> finish) {
    label_ = label;
    finish_ = std::move(finish);
  }

 private:
  void finish_quietly() noexcept {
    try {
      wait();
    } catch (...) {
      detail::state().failed = true;  // a destructor must not throw; the job is failing anyway
    }
  }

#if EMBER_WITH_MPI
  std::vector<MPI_Request> requests_;
#endif
  std::function<void()> finish_;  // after completion: scale, convert, copy back
  Label label_;
};
}  // namespace ember::dist

namespace ember::dist::detail::inline EMBER_UNIT_KIND {

// The type a reduction runs in: bf16 and half in float, rounded once afterwards.
template <class T>
using reduce_t = std::conditional_t<std::is_same_v<T, bf16> || std::is_same_v<T, half>, float, T>;

template <class T>
inline constexpr bool is_16bit_float = std::is_same_v<T, bf16> || std::is_same_v<T, half>;

enum class Collective : std::int64_t { all_reduce = 1, broadcast, all_gather, reduce_scatter };

inline const char* name_of(Collective c) {
  switch (c) {
    case Collective::all_reduce:
      return "all_reduce";
    case Collective::broadcast:
      return "broadcast";
    case Collective::all_gather:
      return "all_gather";
    case Collective::reduce_scatter:
      return "reduce_scatter";
  }
  return "?";
}

template <class T>
void check_op(ReduceOp op, const char* what) {
  EMBER_CHECK(op != ReduceOp::avg || FloatingElement<T>, "ember::dist::", what,
              ": avg of an integer tensor (", dtype_name<T>, "); reduce with sum and divide");
}

// A contiguous tensor of element type W holding t's values: t itself when it already is one.
template <class W, class T>
Tensor<W> contiguous_as(const Tensor<T>& t) {
  if constexpr (std::is_same_v<W, T>) {
    if (t.is_contiguous()) return t;
    return t.contiguous();
  } else {
    Tensor<W> out = empty<W>(t.shape(), t.device());
    out.template copy_<T>(t);
    return out;
  }
}

// Writes `buf` back into `t` unless it is t's own storage (rounding once for bf16 and half).
template <class T, class W>
void write_back(const Tensor<T>& t, const Tensor<W>& buf) {
  if constexpr (std::is_same_v<W, T>) {
    if (buf.storage() == t.storage() && buf.offset() == t.offset()) return;
  }
  Tensor<T> dst = t;
  dst.template copy_<W>(buf);
}

inline std::string describe(Collective c, std::string_view dtype, std::int64_t numel) {
  return ember::detail::concat(name_of(c), " of ", numel, " ", dtype, " elements");
}

#if EMBER_WITH_MPI
template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  if constexpr (std::is_same_v<T, std::int32_t>) return MPI_INT32_T;
  if constexpr (std::is_same_v<T, std::int64_t>) return MPI_INT64_T;
  if constexpr (is_16bit_float<T>) return MPI_UINT16_T;  // moved, never reduced, as 16 bits
}

inline MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      return MPI_MIN;
    default:
      return MPI_SUM;  // avg: the sum, divided afterwards
  }
}

// The element count of one MPI call (MPI's counts are int).
inline int mpi_count(std::int64_t n, const char* what) {
  EMBER_CHECK(n <= std::numeric_limits<int>::max(), "ember::dist::", what, ": ", n,
              " elements per rank in one call; MPI counts are int (split the tensor)");
  return static_cast<int>(n);
}

// With check_collectives: every rank's (collective, dtype, size, root) against rank 0's.
inline void check_signature(Collective c, DType dtype, std::int64_t numel, std::int64_t root) {
  WorldState& s = state();
  if (!s.check_collectives || !s.mpi) return;
  const std::array<std::int64_t, 4> mine{static_cast<std::int64_t>(c),
                                         static_cast<std::int64_t>(dtype), numel, root};
  std::vector<std::int64_t> all(4 * static_cast<std::size_t>(s.size));
  MPI_Request r = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallgather(mine.data(), 4, MPI_INT64_T, all.data(), 4, MPI_INT64_T, s.comm, &r),
            "MPI_Iallgather");
  wait_all(1, &r, [&] {
    return describe(c, ember::name_of(dtype), numel) + " (checking that the ranks agree)";
  });
  const auto said = [&](int rank) {
    const std::int64_t* v = &all[4 * static_cast<std::size_t>(rank)];
    std::string text =
        describe(static_cast<Collective>(v[0]), ember::name_of(static_cast<DType>(v[1])), v[2]);
    if (v[3] >= 0) text += ember::detail::concat(" from root ", v[3]);
    return text;
  };
  for (int rank = 1; rank < s.size; ++rank) {
    // Every rank sees the same table and throws here, before any data moved: the world stays
    // usable.
    if (!std::equal(all.begin(), all.begin() + 4, all.begin() + 4 * rank)) {
      fail("ember::dist: rank ", s.rank, " of ", s.size,
           ": the ranks called different collectives: rank 0 ", said(0), ", rank ", rank, " ",
           said(rank));
    }
  }
}
#endif

#if defined(EMBER_WITH_NCCL)
inline void check_nccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  state().failed = true;
  fail("ember::dist: rank ", state().rank, " of ", state().size, ": ", what,
       " failed: ", ncclGetErrorString(r));
}

inline std::array<ncclComm_t, cuda::detail::kMaxDevices>& nccl_comms() {
  static std::array<ncclComm_t, cuda::detail::kMaxDevices> comms{};
  return comms;
}

inline void release_nccl() {
  for (ncclComm_t& c : nccl_comms()) {
    if (c != nullptr) ncclCommDestroy(c);
    c = nullptr;
  }
}

// The communicator of CUDA device `device`: created on first use by every rank together.
inline ncclComm_t nccl_comm(int device) {
  ncclComm_t& c = nccl_comms().at(static_cast<std::size_t>(device));
  if (c != nullptr) return c;
  WorldState& s = state();
  ncclUniqueId id{};
  if (s.rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
#if EMBER_WITH_MPI
  if (s.mpi) {
    MPI_Request r = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibcast(&id, sizeof id, MPI_BYTE, 0, s.comm, &r), "MPI_Ibcast");
    wait(r, "broadcasting NCCL's unique id");
  }
#endif
  cuda::DeviceGuard guard(device);
  check_nccl(ncclCommInitRank(&c, s.size, id, s.rank), "ncclCommInitRank");
  s.release_nccl = &release_nccl;
  return c;
}

template <class T>
ncclDataType_t nccl_type() {
  if constexpr (std::is_same_v<T, float>) return ncclFloat32;
  if constexpr (std::is_same_v<T, double>) return ncclFloat64;
  if constexpr (std::is_same_v<T, bf16>) return ncclBfloat16;
  if constexpr (std::is_same_v<T, half>) return ncclFloat16;
  if constexpr (std::is_same_v<T, std::int32_t>) return ncclInt32;
  if constexpr (std::is_same_v<T, std::int64_t>) return ncclInt64;
}

inline ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::avg:
      return ncclAvg;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
    default:
      return ncclSum;
  }
}
#endif

#if defined(EMBER_WITH_NCCL)
// NCCL's call for a CUDA tensor, enqueued on ember's stream for its device.
template <class T, class Call>
void on_nccl(const Tensor<T>& t, const char* what, Call&& call) {
  EMBER_CHECK(t.is_contiguous(), "ember::dist::", what,
              ": a CUDA tensor must be contiguous (call .contiguous() first)");
  const int device = t.device().index();
  cuda::require_device(device);
  cuda::DeviceGuard guard(device);
  check_nccl(call(nccl_comm(device), cuda::current_stream(device), nccl_type<T>()), what);
}
#define EMBER_DIST_ON_NCCL(t, what, ...) ::ember::dist::detail::on_nccl(t, what, __VA_ARGS__)
#else
#define EMBER_DIST_ON_NCCL(t, what, ...)                                                        \
  ::ember::fail("ember::dist::", what,                                                          \
                ": a CUDA tensor, but this build of ember has no NCCL (CMake finds it next to " \
                "the CUDA toolkit; without CMake, define EMBER_WITH_NCCL and link -lnccl)")
#endif
}  // namespace ember::dist::detail::inline EMBER_UNIT_KIND

namespace ember::dist::inline EMBER_UNIT_KIND {

/// Starts reducing `t` (in place) across the ranks; the result is in `t` after wait().
template <Communicable T>
Work all_reduce_async(const Tensor<T>& t, ReduceOp op = ReduceOp::sum) {
  const detail::WorldState& s = detail::active_state("all_reduce");
  EMBER_CHECK(t.defined(), "ember::dist::all_reduce: an undefined tensor");
  detail::check_op<T>(op, "all_reduce");
  Work work;
  if (t.device().is_cuda()) {
    EMBER_DIST_ON_NCCL(t, "all_reduce", [&](auto comm, auto stream, auto type) {
      return ncclAllReduce(t.data(), t.data(), static_cast<std::size_t>(t.numel()), type,
                           detail::nccl_op(op), comm, stream);
    });
    return work;
  }
  if (!s.mpi || t.numel() == 0) return work;  // a world of one: the tensor is the result
#if EMBER_WITH_MPI
  detail::check_signature(detail::Collective::all_reduce, dtype_of<T>, t.numel(), -1);
  using W = detail::reduce_t<T>;
  Tensor<W> buf = detail::contiguous_as<W>(t);
  // Chunks of at most 2^30 elements: MPI's counts are int.
  constexpr std::int64_t kChunk = std::int64_t{1} << 30;
  for (std::int64_t at = 0; at < buf.numel(); at += kChunk) {
    MPI_Request r = MPI_REQUEST_NULL;
    detail::check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buf.data() + at,
                                     static_cast<int>(std::min(kChunk, buf.numel() - at)),
                                     detail::mpi_type<W>(), detail::mpi_op(op), s.comm, &r),
                      "MPI_Iallreduce");
    work.add_request(r);
  }
  const int size = s.size;
  work.then({"all_reduce", name_of(op), t.numel(), dtype_name<T>}, [t, buf, op, size]() mutable {
    if constexpr (FloatingElement<W>) {  // avg of integers is refused up front
      if (op == ReduceOp::avg) buf = expr::Leaf<W>(buf) / static_cast<double>(size);
    }
    detail::write_back(t, buf);
  });
#endif
  return work;
}

/// Reduces `t` across the ranks, in place: every rank ends with the same values.
template <Communicable T>
void all_reduce(const Tensor<T>& t, ReduceOp op = ReduceOp::sum) {
  all_reduce_async<T>(t, op).wait();
}

/// Starts copying rank `root`'s `t` into every rank's `t`.
template <Communicable T>
Work broadcast_async(const Tensor<T>& t, int root = 0) {
  const detail::WorldState& s = detail::active_state("broadcast");
  EMBER_CHECK(t.defined(), "ember::dist::broadcast: an undefined tensor");
  EMBER_CHECK(root >= 0 && root < s.size, "ember::dist::broadcast: root ", root,
              " is not a rank of this world of ", s.size);
  Work work;
  if (t.device().is_cuda()) {
    EMBER_DIST_ON_NCCL(t, "broadcast", [&](auto comm, auto stream, auto type) {
      return ncclBroadcast(t.data(), t.data(), static_cast<std::size_t>(t.numel()), type, root,
                           comm, stream);
    });
    return work;
  }
  if (!s.mpi || t.numel() == 0) return work;
#if EMBER_WITH_MPI
  detail::check_signature(detail::Collective::broadcast, dtype_of<T>, t.numel(), root);
  Tensor<T> buf = detail::contiguous_as<T>(t);
  constexpr std::int64_t kChunk = std::int64_t{1} << 30;
  for (std::int64_t at = 0; at < buf.numel(); at += kChunk) {
    MPI_Request r = MPI_REQUEST_NULL;
    detail::check_mpi(
        MPI_Ibcast(buf.data() + at, static_cast<int>(std::min(kChunk, buf.numel() - at)),
                   detail::mpi_type<T>(), root, s.comm, &r),
        "MPI_Ibcast");
    work.add_request(r);
  }
  const bool receives = s.rank != root;
  work.then({"broadcast", nullptr, t.numel(), dtype_name<T>, root}, [t, buf, receives] {
    if (receives) detail::write_back(t, buf);
  });
#endif
  return work;
}

/// Copies rank `root`'s `t` into every rank's `t`.
template <Communicable T>
void broadcast(const Tensor<T>& t, int root = 0) {
  broadcast_async<T>(t, root).wait();
}

/// Starts gathering every rank's `in` into every rank's `out`, in rank order: `out` has size()
/// times in's elements, shaped [size() * in.size(0), ...] or [size(), in's shape...].
template <Communicable T>
Work all_gather_async(const Tensor<T>& out, const Tensor<T>& in) {
  const detail::WorldState& s = detail::active_state("all_gather");
  EMBER_CHECK(out.defined(), "ember::dist::all_gather: an undefined tensor");
  EMBER_CHECK(in.defined(), "ember::dist::all_gather: an undefined tensor");
  EMBER_CHECK(out.device() == in.device(), "ember::dist::all_gather: out is on ",
              out.device().str(), ", in on ", in.device().str());
  Shape stacked = in.shape(), concatenated = in.shape();
  stacked.insert(0, s.size);
  if (concatenated.rank() == 0) concatenated = Shape{1};
  concatenated[0] *= s.size;
  EMBER_CHECK(out.shape() == stacked || out.shape() == concatenated,
              "ember::dist::all_gather: out has shape ", out.shape().str(), "; gathering ", s.size,
              " of ", in.shape().str(), " needs ", concatenated.str(), " or ", stacked.str());
  Work work;
  if (in.device().is_cuda()) {
    EMBER_CHECK(in.is_contiguous(), "ember::dist::all_gather: a CUDA tensor must be contiguous");
    EMBER_DIST_ON_NCCL(out, "all_gather", [&](auto comm, auto stream, auto type) {
      return ncclAllGather(in.data(), out.data(), static_cast<std::size_t>(in.numel()), type, comm,
                           stream);
    });
    return work;
  }
  if (!s.mpi) {
    Tensor<T> dst = out.reshape(in.shape());
    dst.template copy_<T>(in);
    return work;
  }
#if EMBER_WITH_MPI
  detail::check_signature(detail::Collective::all_gather, dtype_of<T>, in.numel(), -1);
  const Tensor<T> src = detail::contiguous_as<T>(in);
  Tensor<T> buf = detail::contiguous_as<T>(out);
  const int n = detail::mpi_count(in.numel(), "all_gather");
  MPI_Request r = MPI_REQUEST_NULL;
  detail::check_mpi(MPI_Iallgather(src.data(), n, detail::mpi_type<T>(), buf.data(), n,
                                   detail::mpi_type<T>(), s.comm, &r),
                    "MPI_Iallgather");
  work.add_request(r);
  // `src` is captured so that it lives until MPI is done reading it.
  work.then({"all_gather", nullptr, in.numel(), dtype_name<T>},
            [out, buf, src] { detail::write_back(out, buf); });
#endif
  return work;
}

/// Gathers every rank's `in` into every rank's `out`, in rank order (see all_gather_async).
template <Communicable T>
void all_gather(const Tensor<T>& out, const Tensor<T>& in) {
  all_gather_async<T>(out, in).wait();
}

/// Starts reducing `in` across the ranks and leaving rank r the r-th of size() equal parts of
/// the result in `out` (in has size() times out's elements, split along its flattened order).
template <Communicable T>
Work reduce_scatter_async(const Tensor<T>& out, const Tensor<T>& in, ReduceOp op = ReduceOp::sum) {
  const detail::WorldState& s = detail::active_state("reduce_scatter");
  EMBER_CHECK(out.defined(), "ember::dist::reduce_scatter: an undefined tensor");
  EMBER_CHECK(in.defined(), "ember::dist::reduce_scatter: an undefined tensor");
  detail::check_op<T>(op, "reduce_scatter");
  EMBER_CHECK(out.device() == in.device(), "ember::dist::reduce_scatter: out is on ",
              out.device().str(), ", in on ", in.device().str());
  EMBER_CHECK(in.numel() == out.numel() * s.size, "ember::dist::reduce_scatter: in has ",
              in.numel(), " elements, out ", out.numel(), "; in needs ", s.size,
              " times out's (one part per rank)");
  Work work;
  if (in.device().is_cuda()) {
    EMBER_CHECK(in.is_contiguous(),
                "ember::dist::reduce_scatter: a CUDA tensor must be contiguous");
    EMBER_DIST_ON_NCCL(out, "reduce_scatter", [&](auto comm, auto stream, auto type) {
      return ncclReduceScatter(in.data(), out.data(), static_cast<std::size_t>(out.numel()), type,
                               detail::nccl_op(op), comm, stream);
    });
    return work;
  }
  if (!s.mpi) {
    Tensor<T> dst = out;
    dst.template copy_<T>(in.reshape(out.shape()));
    return work;
  }
#if EMBER_WITH_MPI
  detail::check_signature(detail::Collective::reduce_scatter, dtype_of<T>, in.numel(), -1);
  using W = detail::reduce_t<T>;
  const Tensor<W> src = detail::contiguous_as<W>(in);
  Tensor<W> buf = [&] {
    if constexpr (std::is_same_v<W, T>) {
      if (out.is_contiguous()) return out;
    }
    return empty<W>(out.shape(), out.device());
  }();
  const int n = detail::mpi_count(out.numel(), "reduce_scatter");
  MPI_Request r = MPI_REQUEST_NULL;
  detail::check_mpi(MPI_Ireduce_scatter_block(src.data(), buf.data(), n, detail::mpi_type<W>(),
                                              detail::mpi_op(op), s.comm, &r),
                    "MPI_Ireduce_scatter_block");
  work.add_request(r);
  const int size = s.size;
  work.then({"reduce_scatter", name_of(op), in.numel(), dtype_name<T>},
            [out, buf, src, op, size]() mutable {
              if constexpr (FloatingElement<W>) {  // avg of integers is refused up front
                if (op == ReduceOp::avg) buf = expr::Leaf<W>(buf) / static_cast<double>(size);
              }
              detail::write_back(out, buf);
            });
#endif
  return work;
}

/// Reduces `in` across the ranks; rank r gets the r-th part of the result in `out`.
template <Communicable T>
void reduce_scatter(const Tensor<T>& out, const Tensor<T>& in, ReduceOp op = ReduceOp::sum) {
  reduce_scatter_async<T>(out, in, op).wait();
}

/// Returns once every rank has called barrier() (bounded by the World's timeout).
inline void barrier() {
  const detail::WorldState& s = detail::active_state("barrier");
  if (!s.mpi) return;
#if EMBER_WITH_MPI
  MPI_Request r = MPI_REQUEST_NULL;
  detail::check_mpi(MPI_Ibarrier(s.comm, &r), "MPI_Ibarrier");
  detail::wait(r, "barrier");
#endif
}
}  // namespace ember::dist::inline EMBER_UNIT_KIND
