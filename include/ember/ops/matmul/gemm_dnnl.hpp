// The CPU's float matrix product on oneDNN's matmul (its AVX-512 brgemm kernels): about twice
// OpenBLAS 0.3.21's speed on this project's CPUs, whose kernels it picks are AVX2 ones
// (docs/benchmarks.md), and on the same OpenMP threads as the rest of ember, where OpenBLAS's
// own threads compete with them for the cores. bf16 too, where the CPU has AVX512-BF16: bf16
// operands, float accumulation, C rounded to bf16 once (matmul() in ops/matmul/matmul.hpp).
//
// C = alpha A B + beta C with A, B and C strided as ember's views are: alpha is the primitive's
// output scale, beta a sum post-op (none for beta 0, so C is only written). One primitive per
// (element type, sizes, strides, alpha, beta, thread count), made on first use and kept. gemm() in
// ops/matmul/gemm_cpu.hpp calls this outside OpenMP regions (inside one, a product per thread runs
// on the BLAS in the calling thread instead), and falls back to the BLAS where oneDNN offers only
// its reference kernel (strides it cannot read) or EMBER_CPU_GEMM=blas is set.
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>

#include "../onednn.hpp"
#include "matrix_view.hpp"

namespace ember::ops::onednn {

/// Whether gemm() may take oneDNN's matmul (not when EMBER_CPU_GEMM=blas).
inline bool gemm_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("EMBER_CPU_GEMM");
    return !(env && std::strcmp(env, "blas") == 0);
  }();
  return enabled;
}

namespace detail {
inline std::atomic<std::uint64_t>& gemm_call_counter() {
  static std::atomic<std::uint64_t> counter{0};
  return counter;
}
inline std::atomic<std::uint64_t>& bf16_gemm_call_counter() {
  static std::atomic<std::uint64_t> counter{0};
  return counter;
}
}  // namespace detail

/// Matrix products run on oneDNN since the program started (tests prove which path ran).
inline std::uint64_t gemm_calls() { return detail::gemm_call_counter().load(); }
/// Of those, the products oneDNN ran on bf16 operands (not through float copies).
inline std::uint64_t bf16_gemm_calls() { return detail::bf16_gemm_call_counter().load(); }

/// A matmul primitive for one (sizes, strides, alpha, beta).
struct Matmul {
  PrimitiveDesc pd;
  Primitive primitive;
  dnnl_memory_desc_t a, b, c;
  std::size_t scratchpad = 0;
  bool reference = false;
};

/// A matrix's descriptor by its strides; a stride along an extent of 1 is set to what a dense
/// matrix would have (oneDNN checks strides even where they are never applied).
template <class T>
dnnl_memory_desc_t matrix_desc(const MatrixView<T>& m) {
  using Element = std::remove_const_t<T>;
  const dnnl_dims_t dims{m.rows, m.cols};
  const dnnl_dims_t strides{m.rows == 1 ? std::max<std::int64_t>(m.cols, 1) : m.rs,
                            m.cols == 1 ? 1 : m.cs};
  dnnl_memory_desc_t md;
  check(dnnl_memory_desc_init_by_strides(&md, 2, dims, data_type<Element>(), strides),
        "dnnl_memory_desc_init_by_strides");
  return md;
}

template <class T>
std::unique_ptr<Matmul> make_matmul(const MatrixView<const T>& A, const MatrixView<const T>& B,
                                    const MatrixView<T>& C, float alpha, float beta) {
  auto m = std::make_unique<Matmul>();
  m->a = matrix_desc(A);
  m->b = matrix_desc(B);
  m->c = matrix_desc(C);
  dnnl_matmul_desc_t desc;
  check(dnnl_matmul_desc_init(&desc, &m->a, &m->b, nullptr, &m->c), "dnnl_matmul_desc_init");
  dnnl_primitive_attr_t attr = nullptr;
  check(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (alpha != 1.0f) dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha);
  if (beta != 0.0f) {
    dnnl_post_ops_t post = nullptr;
    check(dnnl_post_ops_create(&post), "dnnl_post_ops_create");
    dnnl_post_ops_append_sum(post, beta);
    dnnl_primitive_attr_set_post_ops(attr, post);
    dnnl_post_ops_destroy(post);
  }
  dnnl_primitive_desc_t pd = nullptr;
  const dnnl_status_t status = dnnl_primitive_desc_create(&pd, &desc, attr, cpu_engine(), nullptr);
  dnnl_primitive_attr_destroy(attr);
  check(status, "dnnl_primitive_desc_create (matmul)");
  m->pd = PrimitiveDesc(pd);
  m->reference = is_reference(m->pd);
  if (!m->reference) m->primitive = make_primitive(m->pd);
  m->scratchpad = scratchpad_bytes(m->pd);
  return m;
}

/// The cached matmul for these operands, made on first use (never destroyed, like the
/// convolutions).
template <class T>
const Matmul& matmul(const MatrixView<const T>& A, const MatrixView<const T>& B,
                     const MatrixView<T>& C, float alpha, float beta) {
  using Key = std::array<std::int64_t, 13>;
  static std::mutex mutex;
  static auto* cache = new std::map<Key, std::unique_ptr<Matmul>>();
  const Key key{static_cast<std::int64_t>(data_type<T>()),
                C.rows,
                C.cols,
                A.cols,
                A.rs,
                A.cs,
                B.rs,
                B.cs,
                C.rs,
                C.cs,
                std::bit_cast<std::int32_t>(alpha),
                std::bit_cast<std::int32_t>(beta),
                omp_get_max_threads()};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache->find(key);
  if (it == cache->end()) it = cache->emplace(key, make_matmul(A, B, C, alpha, beta)).first;
  return *it->second;
}

/// C = alpha A B + beta C on oneDNN, for float or bf16 (on a CPU with AVX512-BF16: check
/// cpu_has_bf16() first); false, with nothing done, where oneDNN has only its reference kernel
/// for these strides.
template <class T>
bool gemm(const MatrixView<const T>& A, const MatrixView<const T>& B, const MatrixView<T>& C,
          float alpha, float beta) {
  static_assert(kSupported<T>, "ember: oneDNN's matmul is used for float and bf16");
  const Matmul& m = matmul<T>(A, B, C, alpha, beta);
  if (m.reference) return false;
  const dnnl_stream_t stream = thread_stream();
  const Memory a = make_memory(m.a, const_cast<T*>(A.data));
  const Memory b = make_memory(m.b, const_cast<T*>(B.data));
  const Memory c = make_memory(m.c, C.data);
  const Buffer scratchpad(m.scratchpad);
  Memory s;
  dnnl_exec_arg_t args[4] = {
      {DNNL_ARG_SRC, a.get()}, {DNNL_ARG_WEIGHTS, b.get()}, {DNNL_ARG_DST, c.get()}, {}};
  int nargs = 3;
  if (m.scratchpad > 0) {
    s = make_memory(*dnnl_primitive_desc_query_md(m.pd.get(), dnnl_query_scratchpad_md, 0),
                    scratchpad.data());
    args[nargs++] = {DNNL_ARG_SCRATCHPAD, s.get()};
  }
  check(dnnl_primitive_execute(m.primitive.get(), stream, nargs, args), "matmul");
  check(dnnl_stream_wait(stream), "dnnl_stream_wait");
  detail::gemm_call_counter().fetch_add(1, std::memory_order_relaxed);
  if constexpr (std::is_same_v<T, bf16>) {
    detail::bf16_gemm_call_counter().fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

}  // namespace ember::ops::onednn
