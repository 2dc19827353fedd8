// The CUDA runtime API as the emulated device implements it: the calls ember makes and the
// common ones around them, with CUDA's names, types, error codes and ordering rules (device.hpp
// says how the work runs). Errors are CUDA's: a bad argument returns cudaErrorInvalidValue and
// sets the calling thread's last error; a failed kernel makes the device's error sticky.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "builtins.hpp"
#include "device.hpp"

// ---- Types -------------------------------------------------------------------------------------

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719,
};
using cudaError_t = cudaError;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};

enum cudaMemPoolAttr {
  cudaMemPoolAttrReleaseThreshold = 4,
  cudaMemPoolAttrReservedMemCurrent = 5,
  cudaMemPoolAttrUsedMemCurrent = 7,
};

struct CUstream_st {
  int device;
  unsigned flags;
  std::uint64_t last = 0;  // ticket of the last operation queued on it
};
struct CUevent_st {
  int device = -1;
  std::uint64_t ticket = 0;
  unsigned flags = 0;
  std::shared_ptr<std::chrono::steady_clock::time_point> when;  // set when the worker gets there
};
struct CUmemPoolHandle_st {
  int device;
  std::uint64_t release_threshold = 0;
};
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
using cudaMemPool_t = CUmemPoolHandle_st*;
using cudaHostFn_t = void (*)(void* user_data);
#define CUDART_CB

inline constexpr unsigned cudaStreamDefault = 0x0;
inline constexpr unsigned cudaStreamNonBlocking = 0x1;
inline constexpr unsigned cudaEventDefault = 0x0;
inline constexpr unsigned cudaEventBlockingSync = 0x1;
inline constexpr unsigned cudaEventDisableTiming = 0x2;
inline constexpr unsigned cudaHostAllocDefault = 0x0;
inline constexpr unsigned cudaHostAllocPortable = 0x1;

struct cudaDeviceProp {
  char name[256];
  std::size_t totalGlobalMem;
  std::size_t sharedMemPerBlock;
  std::size_t sharedMemPerBlockOptin;
  std::size_t sharedMemPerMultiprocessor;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int multiProcessorCount;
  int maxThreadsPerMultiProcessor;
  int l2CacheSize;
  int memoryBusWidth;
  int major;
  int minor;
};

namespace ember::emulated {

/// The host side's bookkeeping: the calling thread's current device and last error, the pinned
/// host blocks, the streams' and pools' objects.
struct Runtime {
  std::mutex mutex;
  std::map<const char*, std::size_t> pinned;  // start -> bytes
  CUstream_st null_stream[Limits::kMaxDevices];
  CUmemPoolHandle_st pools[Limits::kMaxDevices];

  static Runtime& get() {
    static Runtime* r = new Runtime();  // never destroyed, like the devices
    return *r;
  }
  Runtime() {
    for (int i = 0; i < Limits::kMaxDevices; ++i) {
      null_stream[i] = CUstream_st{i, cudaStreamDefault, 0};
      pools[i] = CUmemPoolHandle_st{i, 0};
    }
  }
  bool is_pinned(const void* p, std::size_t bytes) {
    std::lock_guard lock(mutex);
    const auto* c = static_cast<const char*>(p);
    auto it = pinned.upper_bound(c);
    if (it == pinned.begin()) return false;
    --it;
    return c + bytes <= it->first + it->second;
  }
};

inline int& current_device() {
  static thread_local int d = 0;
  return d;
}
inline cudaError_t& last_error() {
  static thread_local cudaError_t e = cudaSuccess;
  return e;
}
/// Why the last call failed, in a sentence (appended to cudaGetErrorString's text).
inline std::string& last_detail() {
  static thread_local std::string s;
  return s;
}
inline cudaError_t error(cudaError_t e, std::string detail = "") {
  last_error() = e;
  last_detail() = std::move(detail);
  return e;
}
/// cudaSuccess, or the sticky error of `dev`'s failed kernel.
inline cudaError_t sticky(int dev) {
  return emulated::device(dev).sticky() == Status::success ? cudaSuccess
                                                           : error(cudaErrorLaunchFailure);
}
inline bool valid_device(int d) { return d >= 0 && d < device_count(); }
inline CUstream_st* resolve(cudaStream_t s) {
  return s ? s : &Runtime::get().null_stream[current_device()];
}
/// Queues `op` on stream `s` and returns its ticket.
inline std::uint64_t enqueue(cudaStream_t s, std::function<void()> op) {
  CUstream_st* st = resolve(s);
  st->last = emulated::device(st->device).push(std::move(op));
  return st->last;
}

/// Where a pointer lives, for copies.
enum class Space { device, pinned, pageable };
inline Space space_of(const void* p, std::size_t bytes) {
  if (Arena::get().contains(p)) return Space::device;
  return Runtime::get().is_pinned(p, bytes) ? Space::pinned : Space::pageable;
}

/// Checks a copy's pointers against its kind; "" when they agree.
inline std::string copy_error(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  const bool d_dev = Arena::get().contains(dst), s_dev = Arena::get().contains(src);
  if (d_dev && Arena::get().device_of(dst, bytes) < 0) {
    return "the destination range is not inside one device allocation";
  }
  if (s_dev && Arena::get().device_of(src, bytes) < 0) {
    return "the source range is not inside one device allocation";
  }
  const bool want_d = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool want_s = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind != cudaMemcpyDefault && (want_d != d_dev || want_s != s_dev)) {
    return "the pointers do not match the copy's kind";
  }
  return "";
}

}  // namespace ember::emulated

// ---- Errors and devices ------------------------------------------------------------------------

inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}

/// CUDA's description, followed by the emulation's reason for the calling thread's last error.
inline const char* cudaGetErrorString(cudaError_t e) {
  static thread_local std::string text;
  switch (e) {
    case cudaSuccess:
      text = "no error";
      break;
    case cudaErrorInvalidValue:
      text = "invalid argument";
      break;
    case cudaErrorMemoryAllocation:
      text = "out of memory";
      break;
    case cudaErrorInvalidConfiguration:
      text = "invalid configuration argument";
      break;
    case cudaErrorNoDevice:
      text = "no CUDA-capable device is detected";
      break;
    case cudaErrorInvalidDevice:
      text = "invalid device ordinal";
      break;
    case cudaErrorInvalidResourceHandle:
      text = "invalid resource handle";
      break;
    case cudaErrorNotReady:
      text = "device not ready";
      break;
    case cudaErrorLaunchFailure:
      text = "unspecified launch failure (the emulated device printed the kernel's fault)";
      break;
  }
  const std::string& detail = ember::emulated::last_detail();
  if (e == ember::emulated::last_error() && !detail.empty()) text += ": " + detail;
  return text.c_str();
}

inline cudaError_t cudaGetLastError() {
  const cudaError_t e = ember::emulated::last_error();
  if (e != cudaErrorLaunchFailure) ember::emulated::last_error() = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return ember::emulated::last_error(); }

inline cudaError_t cudaGetDeviceCount(int* count) {
  *count = ember::emulated::device_count();
  return *count == 0 ? ember::emulated::error(cudaErrorNoDevice) : cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* device) {
  *device = ember::emulated::current_device();
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int device) {
  if (!ember::emulated::valid_device(device)) return ember::emulated::error(cudaErrorInvalidDevice);
  ember::emulated::current_device() = device;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() {
  const int d = ember::emulated::current_device();
  ember::emulated::device(d).synchronize();
  return ember::emulated::sticky(d);
}

inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  using L = ember::emulated::Limits;
  if (!ember::emulated::valid_device(device)) return ember::emulated::error(cudaErrorInvalidDevice);
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof(p->name), "NVIDIA H100 80GB HBM3 (emulated by ember)");
  p->totalGlobalMem = L::kGlobalMemory;
  p->sharedMemPerBlock = L::kSharedPerBlock;
  p->sharedMemPerBlockOptin = L::kSharedPerBlockOptin;
  p->sharedMemPerMultiprocessor = 228 << 10;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = static_cast<int>(L::kThreadsPerBlock);
  for (int d = 0; d < 3; ++d) {
    p->maxThreadsDim[d] = static_cast<int>(L::kBlockDim[d]);
    p->maxGridSize[d] = static_cast<int>(L::kGridDim[d]);
  }
  p->multiProcessorCount = L::kSms;
  p->maxThreadsPerMultiProcessor = L::kThreadsPerSm;
  p->l2CacheSize = 50 << 20;
  p->memoryBusWidth = 5120;
  p->major = L::kMajor;
  p->minor = L::kMinor;
  return cudaSuccess;
}

inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  cudaDeviceProp p;
  if (const cudaError_t e = cudaGetDeviceProperties(&p, device); e != cudaSuccess) return e;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      *value = p.maxThreadsPerBlock;
      return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = static_cast<int>(p.sharedMemPerBlock);
      return cudaSuccess;
    case cudaDevAttrWarpSize:
      *value = p.warpSize;
      return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
      *value = p.multiProcessorCount;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
      *value = p.major;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = p.minor;
      return cudaSuccess;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *value = p.maxThreadsPerMultiProcessor;
      return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(p.sharedMemPerBlockOptin);
      return cudaSuccess;
  }
  return ember::emulated::error(cudaErrorInvalidValue, "an attribute the emulation does not know");
}

// ---- Streams and events ------------------------------------------------------------------------

inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  *s = new CUstream_st{ember::emulated::current_device(), flags, 0};
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) {
  return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (!s) return ember::emulated::error(cudaErrorInvalidResourceHandle);
  // CUDA lets queued work finish after the destroy; the worker holds no reference to `s`.
  delete s;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  CUstream_st* st = ember::emulated::resolve(s);
  ember::emulated::device(st->device).wait(st->last);
  return ember::emulated::sticky(st->device);
}
inline cudaError_t cudaStreamQuery(cudaStream_t s) {
  CUstream_st* st = ember::emulated::resolve(s);
  return ember::emulated::device(st->device).finished(st->last) ? cudaSuccess : cudaErrorNotReady;
}

inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags) {
  *e = new CUevent_st{};
  (*e)->flags = flags;
  return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  return cudaEventCreateWithFlags(e, cudaEventDefault);
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (!e) return ember::emulated::error(cudaErrorInvalidResourceHandle);
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr) {
  if (!e) return ember::emulated::error(cudaErrorInvalidResourceHandle);
  auto when = std::make_shared<std::chrono::steady_clock::time_point>();
  e->when = when;
  e->device = ember::emulated::resolve(s)->device;
  e->ticket = ember::emulated::enqueue(s, [when] { *when = std::chrono::steady_clock::now(); });
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (!e) return ember::emulated::error(cudaErrorInvalidResourceHandle);
  if (e->device < 0) return cudaSuccess;  // never recorded: complete, as in CUDA
  ember::emulated::device(e->device).wait(e->ticket);
  return ember::emulated::sticky(e->device);
}
inline cudaError_t cudaEventQuery(cudaEvent_t e) {
  if (!e) return ember::emulated::error(cudaErrorInvalidResourceHandle);
  if (e->device < 0) return cudaSuccess;
  return ember::emulated::device(e->device).finished(e->ticket) ? cudaSuccess : cudaErrorNotReady;
}
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start || !end || !start->when || !end->when || (start->flags & cudaEventDisableTiming) ||
      (end->flags & cudaEventDisableTiming)) {
    return ember::emulated::error(cudaErrorInvalidResourceHandle);
  }
  if (cudaEventQuery(start) != cudaSuccess || cudaEventQuery(end) != cudaSuccess) {
    return cudaErrorNotReady;
  }
  *ms = std::chrono::duration<float, std::milli>(*end->when - *start->when).count();
  return cudaSuccess;
}
/// Work queued on `s` after this waits for `e`: on the same device the queue's order already
/// does; another device's event is waited for by s's worker.
inline cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned = 0) {
  if (!e) return ember::emulated::error(cudaErrorInvalidResourceHandle);
  CUstream_st* st = ember::emulated::resolve(s);
  if (e->device >= 0 && e->device != st->device) {
    const int other = e->device;
    const std::uint64_t ticket = e->ticket;
    ember::emulated::enqueue(s, [other, ticket] { ember::emulated::device(other).wait(ticket); });
  }
  return cudaSuccess;
}
inline cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  ember::emulated::enqueue(s, [fn, data] { fn(data); });
  return cudaSuccess;
}

// ---- Memory ------------------------------------------------------------------------------------

inline cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  const int d = ember::emulated::current_device();
  if (const cudaError_t e = ember::emulated::sticky(d); e != cudaSuccess) return e;
  *p = ember::emulated::Arena::get().allocate(bytes, d);
  return *p ? cudaSuccess : ember::emulated::error(cudaErrorMemoryAllocation);
}
/// Frees at once, after the device has finished what was queued (cudaFree synchronises).
inline cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  const int d = ember::emulated::Arena::get().device_of(p, 1);
  if (d < 0) return ember::emulated::error(cudaErrorInvalidValue, "not a device allocation");
  ember::emulated::device(d).synchronize();
  return ember::emulated::Arena::get().release(p)
             ? cudaSuccess
             : ember::emulated::error(cudaErrorInvalidValue, "not the start of an allocation");
}
inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  if (!ember::emulated::valid_device(device)) return ember::emulated::error(cudaErrorInvalidDevice);
  *pool = &ember::emulated::Runtime::get().pools[device];
  return cudaSuccess;
}
/// Stream-ordered: the memory is the caller's from now on; cudaFreeAsync gives it back when the
/// stream reaches the free.
inline cudaError_t cudaMallocFromPoolAsync(void** p, std::size_t bytes, cudaMemPool_t pool,
                                           cudaStream_t) {
  if (const cudaError_t e = ember::emulated::sticky(pool->device); e != cudaSuccess) return e;
  *p = ember::emulated::Arena::get().allocate(bytes, pool->device);
  return *p ? cudaSuccess : ember::emulated::error(cudaErrorMemoryAllocation);
}
inline cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t s) {
  return cudaMallocFromPoolAsync(
      p, bytes, &ember::emulated::Runtime::get().pools[ember::emulated::resolve(s)->device], s);
}
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  if (!p) return cudaSuccess;
  if (ember::emulated::Arena::get().device_of(p, 1) < 0) {
    return ember::emulated::error(cudaErrorInvalidValue, "cudaFreeAsync of a non-device pointer");
  }
  ember::emulated::enqueue(s, [p] { ember::emulated::Arena::get().release(p); });
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  if (attr != cudaMemPoolAttrReleaseThreshold) return ember::emulated::error(cudaErrorInvalidValue);
  std::memcpy(&pool->release_threshold, value, sizeof(std::uint64_t));
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  std::uint64_t v = 0;
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold:
      v = pool->release_threshold;
      break;
    case cudaMemPoolAttrReservedMemCurrent:
    case cudaMemPoolAttrUsedMemCurrent:
      v = ember::emulated::Arena::get().used(pool->device);
      break;
  }
  std::memcpy(value, &v, sizeof(v));
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolTrimTo(cudaMemPool_t, std::size_t) { return cudaSuccess; }
inline cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total) {
  *total = ember::emulated::Limits::kGlobalMemory;
  *free_bytes = *total - ember::emulated::Arena::get().used(ember::emulated::current_device());
  return cudaSuccess;
}

inline cudaError_t cudaHostAlloc(void** p, std::size_t bytes, unsigned = cudaHostAllocDefault) {
  const std::size_t page = 4096, size = (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
  *p = std::aligned_alloc(page, size);
  if (!*p) return ember::emulated::error(cudaErrorMemoryAllocation);
  auto& r = ember::emulated::Runtime::get();
  std::lock_guard lock(r.mutex);
  r.pinned[static_cast<const char*>(*p)] = size;
  return cudaSuccess;
}
inline cudaError_t cudaMallocHost(void** p, std::size_t bytes) { return cudaHostAlloc(p, bytes); }
inline cudaError_t cudaFreeHost(void* p) {
  auto& r = ember::emulated::Runtime::get();
  {
    std::lock_guard lock(r.mutex);
    if (r.pinned.erase(static_cast<const char*>(p)) == 0) {
      return ember::emulated::error(cudaErrorInvalidValue, "not a cudaHostAlloc block");
    }
  }
  std::free(p);
  return cudaSuccess;
}

/// A copy queued on `s`. As in CUDA, a copy from pageable host memory reads the source before
/// returning, and a copy to pageable host memory returns only once it is done; pinned memory and
/// device memory are read and written when the stream gets there.
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes,
                                   cudaMemcpyKind kind, cudaStream_t s = nullptr) {
  using namespace ember::emulated;
  CUstream_st* st = resolve(s);
  if (const cudaError_t e = sticky(st->device); e != cudaSuccess) return e;
  if (bytes == 0) return cudaSuccess;
  if (const std::string why = copy_error(dst, src, bytes, kind); !why.empty()) {
    return error(cudaErrorInvalidValue, "cudaMemcpy: " + why);
  }
  const Space from = space_of(src, bytes), to = space_of(dst, bytes);
  std::uint64_t ticket = 0;
  if (from == Space::pageable) {
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + bytes);
    ticket = enqueue(st, [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
  } else {
    ticket = enqueue(st, [dst, src, bytes] { std::memcpy(dst, src, bytes); });
  }
  if (to == Space::pageable) device(st->device).wait(ticket);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, nullptr); e != cudaSuccess) {
    return e;
  }
  return cudaStreamSynchronize(nullptr);
}
inline cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device,
                                       std::size_t bytes, cudaStream_t s = nullptr) {
  using namespace ember::emulated;
  if (!valid_device(dst_device) || !valid_device(src_device)) {
    return error(cudaErrorInvalidDevice);
  }
  if (bytes && (Arena::get().device_of(dst, bytes) != dst_device ||
                Arena::get().device_of(src, bytes) != src_device)) {
    return error(cudaErrorInvalidValue, "cudaMemcpyPeerAsync: a pointer is not on its device");
  }
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s);
}
inline cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes,
                                   cudaStream_t s = nullptr) {
  using namespace ember::emulated;
  if (bytes == 0) return cudaSuccess;
  if (Arena::get().device_of(p, bytes) < 0) {
    return error(cudaErrorInvalidValue,
                 "cudaMemset: the range is not inside one device allocation");
  }
  enqueue(s, [p, value, bytes] { std::memset(p, value, bytes); });
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int value, std::size_t bytes) {
  if (const cudaError_t e = cudaMemsetAsync(p, value, bytes, nullptr); e != cudaSuccess) return e;
  return cudaStreamSynchronize(nullptr);
}

// ---- Kernel launches ---------------------------------------------------------------------------

namespace ember::emulated {

/// kernel<<<grid, block, shared, stream>>>(args...): checks the sizes against sm_90, copies the
/// parameters and queues the grid. `name` appears in the report of a kernel that fails.
template <class... P, class... A>
cudaError_t launch(const char* name, void (*kernel)(P...), dim3 grid, dim3 block,
                   std::size_t shared, cudaStream_t stream, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "a kernel launch passes one argument per parameter");
  CUstream_st* st = resolve(stream);
  if (const cudaError_t e = sticky(st->device); e != cudaSuccess) return e;
  if (const std::string why = launch_config_error(grid, block, shared); !why.empty()) {
    return error(cudaErrorInvalidConfiguration, std::string("kernel ") + name + ": " + why);
  }
  Device& dev = device(st->device);
  auto l = std::make_shared<KernelLaunch<P...>>(
      KernelLaunch<P...>{kernel, std::tuple<P...>(static_cast<P>(std::forward<A>(args))...), name});
  const unsigned order = dev.next_launch();
  enqueue(st, [l, grid, block, order, &dev] {
    if (dev.sticky() == Status::success) run_grid(*l, grid, block, order, dev);
  });
  return cudaSuccess;
}

}  // namespace ember::emulated
