// What ember's oneDNN paths share (ops/conv/conv_dnnl.hpp, ops/matmul/gemm_dnnl.hpp): the CPU
// engine, a stream per host thread, owning handles for oneDNN's C objects, and buffers from ember's
// host allocator. oneDNN's C API (dnnl.h) rather than dnnl.hpp: nvcc 13's C++20 front end stops
// with an internal error on dnnl.hpp (and on a std::vector of one of its unnamed C structs), and
// every ember header must compile in .cu translation units too.
#pragma once

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "../core/bf16.hpp"
#include "../core/cpu_features.hpp"
#include "../core/error.hpp"
#include "../memory/host_allocator.hpp"

namespace ember::ops::onednn {

/// Whether this CPU runs bf16 convolutions and products natively (AVX512-BF16); elsewhere bf16 is
/// widened to float by the caller.
inline bool cpu_has_bf16() { return cpu_has_avx512_bf16(); }

/// The element types ember hands to oneDNN, and their oneDNN names.
template <class T>
constexpr bool kSupported = std::is_same_v<T, float> || std::is_same_v<T, bf16>;

template <class T>
constexpr dnnl_data_type_t data_type() {
  if constexpr (std::is_same_v<T, float>) return dnnl_f32;
  if constexpr (std::is_same_v<T, bf16>) return dnnl_bf16;
}

inline void check(dnnl_status_t status, const char* what) {
  if (status != dnnl_success) fail("ember: oneDNN ", what, " failed: ", dnnl_status2str(status));
}

/// The CPU engine, made once and kept for the process.
inline dnnl_engine_t cpu_engine() {
  static const dnnl_engine_t engine = [] {
    dnnl_engine_t e = nullptr;
    check(dnnl_engine_create(&e, dnnl_cpu, 0), "dnnl_engine_create");
    return e;
  }();
  return engine;
}

/// This host thread's stream.
inline dnnl_stream_t thread_stream() {
  struct Stream {
    dnnl_stream_t handle = nullptr;
    Stream() {
      check(dnnl_stream_create(&handle, cpu_engine(), dnnl_stream_default_flags),
            "dnnl_stream_create");
    }
    ~Stream() { dnnl_stream_destroy(handle); }
  };
  thread_local Stream stream;
  return stream.handle;
}

struct PrimitiveDescDeleter {
  void operator()(dnnl_primitive_desc_t pd) const { dnnl_primitive_desc_destroy(pd); }
};
struct PrimitiveDeleter {
  void operator()(dnnl_primitive_t p) const { dnnl_primitive_destroy(p); }
};
struct MemoryDeleter {
  void operator()(dnnl_memory_t m) const { dnnl_memory_destroy(m); }
};
using PrimitiveDesc = std::unique_ptr<dnnl_primitive_desc, PrimitiveDescDeleter>;
using Primitive = std::unique_ptr<dnnl_primitive, PrimitiveDeleter>;
using Memory = std::unique_ptr<dnnl_memory, MemoryDeleter>;

namespace detail {
inline std::atomic<std::int64_t>& primitives_created_counter() {
  static std::atomic<std::int64_t> count{0};
  return count;
}
}  // namespace detail

/// oneDNN primitives (convolutions, matmuls, reorders) ember has made since the process started.
/// Each is made once per shape and kept: a training step whose shapes equal the last step's
/// makes none (tests/examples check it on both trainers' steps).
inline std::int64_t primitives_created() { return detail::primitives_created_counter().load(); }

inline Primitive make_primitive(const PrimitiveDesc& pd) {
  dnnl_primitive_t p = nullptr;
  check(dnnl_primitive_create(&p, pd.get()), "dnnl_primitive_create");
  detail::primitives_created_counter().fetch_add(1);
  return Primitive(p);
}

inline Memory make_memory(const dnnl_memory_desc_t& md, void* data) {
  dnnl_memory_t m = nullptr;
  check(dnnl_memory_create(&m, &md, cpu_engine(), data), "dnnl_memory_create");
  return Memory(m);
}

inline dnnl_memory_desc_t query_md(const PrimitiveDesc& pd, dnnl_query_t what) {
  return *dnnl_primitive_desc_query_md(pd.get(), what, 0);
}

/// Bytes from ember's host allocator for one call (a scratchpad or a reordered operand).
class Buffer {
 public:
  explicit Buffer(std::size_t bytes)
      : bytes_(bytes), data_(bytes ? ember::memory::host_allocate(bytes) : nullptr) {}
  ~Buffer() {
    if (data_) ember::memory::host_free(data_, bytes_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }

 private:
  std::size_t bytes_;
  void* data_;
};

/// The implementation oneDNN chose for a primitive ("brgconv:avx512_core", "ref:any", ...).
inline std::string impl_name(const PrimitiveDesc& pd) {
  const char* impl = nullptr;
  check(dnnl_primitive_desc_query(pd.get(), dnnl_query_impl_info_str, 0, &impl),
        "dnnl_primitive_desc_query");
  return impl ? impl : "";
}

/// Whether oneDNN chose only its reference implementation for a primitive: orders of magnitude
/// slower than its JIT kernels, so ember's callers take their own path instead.
inline bool is_reference(const PrimitiveDesc& pd) { return impl_name(pd).starts_with("ref"); }

/// The scratchpad size a primitive asks for (ember's callers pass it in: scratchpad mode user).
inline std::size_t scratchpad_bytes(const PrimitiveDesc& pd) {
  return dnnl_memory_desc_get_size(
      dnnl_primitive_desc_query_md(pd.get(), dnnl_query_scratchpad_md, 0));
}

}  // namespace ember::ops::onednn
