// The CPU's float matrix product on oneDNN's matmul (its AVX-512 brgemm kernels): as fast as
// OpenBLAS 0.3.21 where OpenBLAS recognises the CPU and about twice as fast where it falls back to
// AVX2 or SSE3 kernels (docs/benchmarks.md), and on the same OpenMP threads as the rest of ember,
// where OpenBLAS's own threads compete with them for the cores. bf16 too, where the CPU has
// AVX512-BF16: bf16 operands, float accumulation, C rounded to bf16 once (matmul() in
// ops/matmul/matmul.hpp).
//
// C = alpha A B + beta C for one product or a batch of them (A's and B's batch extents broadcast
// to C's), with A, B and C strided as ember's views are: alpha is the primitive's output scale,
// beta a sum post-op (none for beta 0, so C is only written); a linear's bias and ReLU ride in
// the same call (MatmulEpilogue). One primitive per (element type, batch, sizes, strides, alpha,
// beta, epilogue, thread count), made on first use and kept. gemm() and gemm_batch() in
// ops/matmul/gemm_cpu.hpp call this outside OpenMP regions (inside one, a product per thread runs
// on the BLAS in the calling thread instead), and fall back to the BLAS where oneDNN offers only
// its reference kernel (strides it cannot read) or EMBER_CPU_GEMM=blas is set.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

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

/// A matmul primitive for one (batch, sizes, strides, alpha, beta).
struct Matmul {
  PrimitiveDesc pd;
  Primitive primitive;
  dnnl_memory_desc_t a, b, c, bias;
  std::size_t scratchpad = 0;
  bool reference = false;
  // B reordered into the primitive's own layout first (plain_b_reordered), where it differs.
  dnnl_memory_desc_t b_inner;
  Primitive b_reorder;
  std::size_t b_inner_bytes = 0;
};

/// Whether B is given to oneDNN's matmul in a layout of its choosing, reordered first: a plain
/// [K, N] B (unit column stride) with N past 2,048, which oneDNN 2.6 reads at about half speed
/// (docs/benchmarks.md, "The CPU matrix product"). A linear's weight is read transposed and never
/// needs it; its input gradient, dY W, does.
template <class T>
bool plain_b_reordered(const MatrixBatch<const T>& B) {
  return B.batch_rank == 0 && B.first.rows > 1 && B.first.cs == 1 && B.first.cols > 2048;
}

/// The descriptor of a batch of matrices by its strides. A broadcast batch extent (stride 0) is
/// given to oneDNN as an extent of 1, which its matmul broadcasts (`broadcast` false: C, whose
/// extents are the batch's). A stride along an extent of 1 is set to what a dense layout would
/// have (oneDNN checks strides even where they are never applied).
template <class T>
dnnl_memory_desc_t batch_desc(const MatrixBatch<T>& m, bool broadcast) {
  using Element = std::remove_const_t<T>;
  const int nb = m.batch_rank, nd = nb + 2;
  dnnl_dims_t dims{}, strides{};
  dims[nb] = m.first.rows;
  dims[nb + 1] = m.first.cols;
  strides[nb] = m.first.rows == 1 ? std::max<std::int64_t>(m.first.cols, 1) : m.first.rs;
  strides[nb + 1] = m.first.cols == 1 ? 1 : m.first.cs;
  std::int64_t span = std::max(dims[nb] * strides[nb], dims[nb + 1] * strides[nb + 1]);
  for (int d = nb - 1; d >= 0; --d) {
    const bool one = m.batch_sizes[d] == 1 || (broadcast && m.batch_strides[d] == 0);
    dims[d] = one ? 1 : m.batch_sizes[d];
    strides[d] = one ? span : m.batch_strides[d];
    span = std::max(span, dims[d] * strides[d]);
  }
  dnnl_memory_desc_t md;
  check(dnnl_memory_desc_init_by_strides(&md, nd, dims, data_type<Element>(), strides),
        "dnnl_memory_desc_init_by_strides");
  return md;
}

/// What a matmul adds to alpha A B + beta C: a bias row [N] broadcast over the rows, then ReLU.
struct MatmulEpilogue {
  bool bias = false;
  bool relu = false;
};

template <class T>
std::unique_ptr<Matmul> make_matmul(const MatrixBatch<const T>& A, const MatrixBatch<const T>& B,
                                    const MatrixBatch<T>& C, float alpha, float beta,
                                    MatmulEpilogue epilogue) {
  using Element = std::remove_const_t<T>;
  auto m = std::make_unique<Matmul>();
  m->a = batch_desc(A, true);
  m->b = batch_desc(B, true);
  m->c = batch_desc(C, false);
  if (epilogue.bias) {
    const int nd = C.batch_rank + 2;
    dnnl_dims_t dims{}, strides{};
    for (int d = 0; d < nd; ++d) dims[d] = 1;
    dims[nd - 1] = C.first.cols;
    for (int d = 0; d < nd; ++d) strides[d] = d == nd - 1 ? 1 : C.first.cols;
    check(dnnl_memory_desc_init_by_strides(&m->bias, nd, dims, data_type<Element>(), strides),
          "dnnl_memory_desc_init_by_strides");
  }
  const bool reorder_b = plain_b_reordered(B);
  dnnl_memory_desc_t b_any = m->b;
  if (reorder_b) {
    const dnnl_dims_t dims{B.first.rows, B.first.cols};
    check(dnnl_memory_desc_init_by_tag(&b_any, 2, dims, data_type<Element>(), dnnl_format_tag_any),
          "dnnl_memory_desc_init_by_tag");
  }
  dnnl_matmul_desc_t desc;
  check(dnnl_matmul_desc_init(&desc, &m->a, &b_any, epilogue.bias ? &m->bias : nullptr, &m->c),
        "dnnl_matmul_desc_init");
  dnnl_primitive_attr_t attr = nullptr;
  check(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (alpha != 1.0f) dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha);
  if (beta != 0.0f || epilogue.relu) {
    dnnl_post_ops_t post = nullptr;
    check(dnnl_post_ops_create(&post), "dnnl_post_ops_create");
    if (beta != 0.0f) dnnl_post_ops_append_sum(post, beta);
    if (epilogue.relu) dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
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
  m->b_inner = m->b;
  if (reorder_b && !m->reference) {
    m->b_inner = query_md(m->pd, dnnl_query_weights_md);
    if (!dnnl_memory_desc_equal(&m->b, &m->b_inner)) {
      dnnl_primitive_desc_t rpd = nullptr;
      check(dnnl_reorder_primitive_desc_create(&rpd, &m->b, cpu_engine(), &m->b_inner, cpu_engine(),
                                               nullptr),
            "dnnl_reorder_primitive_desc_create");
      m->b_reorder = make_primitive(PrimitiveDesc(rpd));
      m->b_inner_bytes = dnnl_memory_desc_get_size(&m->b_inner);
    }
  }
  return m;
}

/// The cached matmul for these operands, made on first use (never destroyed, like the
/// convolutions).
template <class T>
const Matmul& matmul(const MatrixBatch<const T>& A, const MatrixBatch<const T>& B,
                     const MatrixBatch<T>& C, float alpha, float beta, MatmulEpilogue epilogue) {
  using Key = std::vector<std::int64_t>;
  static std::mutex mutex;
  static auto* cache = new std::map<Key, std::unique_ptr<Matmul>>();
  Key key{static_cast<std::int64_t>(data_type<T>()),
          C.first.rows,
          C.first.cols,
          A.first.cols,
          A.first.rs,
          A.first.cs,
          B.first.rs,
          B.first.cs,
          C.first.rs,
          C.first.cs,
          std::bit_cast<std::int32_t>(alpha),
          std::bit_cast<std::int32_t>(beta),
          omp_get_max_threads(),
          epilogue.bias,
          epilogue.relu,
          C.batch_rank};
  for (int d = 0; d < C.batch_rank; ++d) {
    key.insert(key.end(),
               {C.batch_sizes[d], A.batch_strides[d], B.batch_strides[d], C.batch_strides[d]});
  }
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache->find(key);
  if (it == cache->end()) {
    it = cache->emplace(key, make_matmul(A, B, C, alpha, beta, epilogue)).first;
  }
  return *it->second;
}

/// C = alpha A B + beta C for every matrix of a batch (A's and B's batch extents broadcast to C's)
/// on oneDNN, for float or bf16 (on a CPU with AVX512-BF16: check cpu_has_bf16() first); false,
/// with nothing done, where oneDNN has only its reference kernel for these strides.
/// With `bias` (C's row length), C = relu?(alpha A B + bias), the bias and ReLU as `epilogue`
/// says, in the same pass.
template <class T>
bool gemm(const MatrixBatch<const T>& A, const MatrixBatch<const T>& B, const MatrixBatch<T>& C,
          float alpha, float beta, MatmulEpilogue epilogue = {}, const T* bias = nullptr) {
  static_assert(kSupported<T>, "ember: oneDNN's matmul is used for float and bf16");
  const Matmul& m = matmul<T>(A, B, C, alpha, beta, epilogue);
  if (m.reference) return false;
  const dnnl_stream_t stream = thread_stream();
  const Memory a = make_memory(m.a, const_cast<T*>(A.first.data));
  Memory b = make_memory(m.b, const_cast<T*>(B.first.data));
  const Buffer b_inner(m.b_inner_bytes);
  if (m.b_reorder) {
    Memory inner = make_memory(m.b_inner, b_inner.data());
    dnnl_exec_arg_t reorder_args[2] = {{DNNL_ARG_FROM, b.get()}, {DNNL_ARG_TO, inner.get()}};
    check(dnnl_primitive_execute(m.b_reorder.get(), stream, 2, reorder_args), "reorder");
    b = std::move(inner);
  }
  const Memory c = make_memory(m.c, C.first.data);
  Memory bias_memory;
  const Buffer scratchpad(m.scratchpad);
  Memory s;
  dnnl_exec_arg_t args[5] = {
      {DNNL_ARG_SRC, a.get()}, {DNNL_ARG_WEIGHTS, b.get()}, {DNNL_ARG_DST, c.get()}, {}, {}};
  int nargs = 3;
  if (epilogue.bias) {
    bias_memory = make_memory(m.bias, const_cast<T*>(bias));
    args[nargs++] = {DNNL_ARG_BIAS, bias_memory.get()};
  }
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

/// C = alpha A B + beta C on oneDNN for one product (a batch of one).
template <class T>
bool gemm(const MatrixView<const T>& A, const MatrixView<const T>& B, const MatrixView<T>& C,
          float alpha, float beta) {
  return gemm<T>(MatrixBatch<const T>{A}, MatrixBatch<const T>{B}, MatrixBatch<T>{C}, alpha, beta);
}

}  // namespace ember::ops::onednn
