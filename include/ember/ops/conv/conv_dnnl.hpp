// conv2d on the CPU through oneDNN (2.6, the library PyTorch's CPU convolutions run on): forward,
// backward-data and backward-weights for float, and for bf16 where the CPU has AVX512-BF16, with
// strides, padding, dilation and groups.
//
// Layouts. oneDNN picks the weights' layout (a blocked one: its JIT kernels want it), so the
// logical [O, C/groups, KH, KW] weight is reordered into it and the weight gradient out of it;
// both are small. Activations: a channels-last tensor is handed over as it is (NHWC is what the
// fast brgconv kernels read and write, no reorder); an NCHW tensor goes through oneDNN's blocked
// layout, reordered in and out, because its plain-NCHW kernels are im2col + GEMM again (measured
// in docs/benchmarks.md). Where oneDNN has only its reference implementation for a shape, which
// is orders of magnitude slower, the convolution is not taken: the caller falls back to im2col.
// The input gradient of a stride-1 channels-last convolution may run as a forward convolution of
// dy with the flipped weights, on oneDNN's faster forward kernel (Convolution::data_as_forward).
//
// Caching. A Convolution (the three primitive descriptors, the primitives and the reorders they
// need) is made once per (dtype, sizes, options, memory format, thread count) and kept for the
// process, as the cuDNN path keeps its algorithm choices: a training step whose shapes equal the
// last step's creates nothing. Scratchpads and reorder buffers come from ember's host allocator
// (cached for large blocks). Each host thread executes on its own oneDNN stream.
// On oneDNN's C API, through the handles of ops/onednn.hpp.
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../core/bf16.hpp"
#include "../../core/cpu_features.hpp"
#include "../../core/error.hpp"
#include "../../memory/host_allocator.hpp"
#include "../../tensor/tensor.hpp"
#include "../matmul/gemm_dnnl.hpp"
#include "../matmul/matrix_view.hpp"
#include "../onednn.hpp"
#include "conv_backend.hpp"
#include "conv_geometry.hpp"

namespace ember::ops::onednn::inline EMBER_UNIT_KIND {

/// One operand of a primitive: its oneDNN argument, the tensor's own layout (`user`), the
/// primitive's (`inner`), and the reorder between them where they differ (user -> inner for
/// inputs, inner -> user for outputs).
struct Operand {
  int arg;
  dnnl_memory_desc_t user, inner;
  Primitive reorder;

  static bool is_output(int arg) {
    return arg == DNNL_ARG_DST || arg == DNNL_ARG_DIFF_SRC || arg == DNNL_ARG_DIFF_WEIGHTS;
  }
  Operand(int argument, const dnnl_memory_desc_t& user_desc, const dnnl_memory_desc_t& inner_desc)
      : arg(argument), user(user_desc), inner(inner_desc) {
    if (dnnl_memory_desc_equal(&user, &inner)) return;
    const bool out = is_output(arg);
    dnnl_primitive_desc_t pd = nullptr;
    check(dnnl_reorder_primitive_desc_create(&pd, out ? &inner : &user, cpu_engine(),
                                             out ? &user : &inner, cpu_engine(), nullptr),
          "dnnl_reorder_primitive_desc_create");
    reorder = make_primitive(PrimitiveDesc(pd));
  }
};

/// An output of a call, reordered out of the primitive's layout after it ran.
struct PendingOutput {
  const Operand* op;
  dnnl_memory_t inner, user;
};

/// A primitive with its operands and its scratchpad size.
struct Pass {
  static constexpr int kMaxArgs = 4;  // three operands and the scratchpad
  PrimitiveDesc pd;
  Primitive primitive;
  std::vector<Operand> operands;
  std::size_t scratchpad_bytes = 0;
  bool reference = false;  // oneDNN found only its reference implementation

  Pass() = default;
  Pass(PrimitiveDesc desc, std::vector<Operand> ops)
      : pd(std::move(desc)), operands(std::move(ops)) {
    primitive = make_primitive(pd);
    scratchpad_bytes = onednn::scratchpad_bytes(pd);
    reference = is_reference(pd);
  }

  /// Runs the pass over `pointers` (one per operand, in order), reordering inputs in and outputs
  /// out where the layouts differ.
  void run(const std::vector<void*>& pointers) const {
    const dnnl_stream_t stream = thread_stream();
    std::vector<Memory> memories;  // owns every memory object of the call
    std::vector<std::unique_ptr<Buffer>> buffers;
    // A plain array: dnnl_exec_arg_t is an unnamed C struct, and nvcc's front end fails on a
    // std::vector of one.
    dnnl_exec_arg_t args[kMaxArgs];
    int nargs = 0;
    std::vector<PendingOutput> outputs;
    for (std::size_t i = 0; i < operands.size(); ++i) {
      const Operand& op = operands[i];
      memories.push_back(make_memory(op.user, pointers[i]));
      const dnnl_memory_t user = memories.back().get();
      if (!op.reorder) {
        args[nargs++] = {op.arg, user};
        continue;
      }
      buffers.push_back(std::make_unique<Buffer>(dnnl_memory_desc_get_size(&op.inner)));
      memories.push_back(make_memory(op.inner, buffers.back()->data()));
      const dnnl_memory_t inner = memories.back().get();
      if (Operand::is_output(op.arg)) {
        outputs.push_back({&op, inner, user});
      } else {
        execute_reorder(op, user, inner, stream);
      }
      args[nargs++] = {op.arg, inner};
    }
    const Buffer scratchpad(scratchpad_bytes);
    if (scratchpad_bytes > 0) {
      memories.push_back(make_memory(
          *dnnl_primitive_desc_query_md(pd.get(), dnnl_query_scratchpad_md, 0), scratchpad.data()));
      args[nargs++] = {DNNL_ARG_SCRATCHPAD, memories.back().get()};
    }
    check(dnnl_primitive_execute(primitive.get(), stream, nargs, args), "convolution");
    for (const PendingOutput& out : outputs) execute_reorder(*out.op, out.inner, out.user, stream);
    check(dnnl_stream_wait(stream), "dnnl_stream_wait");
  }

 private:
  static void execute_reorder(const Operand& op, dnnl_memory_t from, dnnl_memory_t to,
                              dnnl_stream_t stream) {
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    check(dnnl_primitive_execute(op.reorder.get(), stream, 2, args), "reorder");
  }
};

/// The three passes of one convolution shape: the forward made at once, the backward ones on
/// first use.
class Convolution {
 public:
  Convolution(const ConvGeometry& g, dnnl_data_type_t dt) : g_(g), dt_(dt) {
    dnnl_convolution_desc_t d;
    const dnnl_memory_desc_t x = x_inner(), w = weights_any(), y = y_inner();
    check(dnnl_dilated_convolution_forward_desc_init(
              &d, dnnl_forward_training, dnnl_convolution_direct, &x, &w, nullptr, &y,
              strides_.data(), dilates_.data(), padding_.data(), padding_.data()),
          "convolution forward descriptor");
    PrimitiveDesc pd = primitive_desc(&d, nullptr);
    std::vector<Operand> ops = operands({{DNNL_ARG_SRC, user_x(), dnnl_query_src_md},
                                         {DNNL_ARG_WEIGHTS, user_w(), dnnl_query_weights_md},
                                         {DNNL_ARG_DST, user_y(), dnnl_query_dst_md}},
                                        pd);
    forward_ = Pass(std::move(pd), std::move(ops));
  }
  Convolution(const Convolution&) = delete;
  Convolution& operator=(const Convolution&) = delete;

  const Pass& forward() const { return forward_; }
  /// The input gradient's pass. Its operands are (dy, w, dx), or (dy, w flipped, dx) where
  /// data_as_forward(): see flip_taps().
  const Pass& backward_data() {
    std::call_once(data_once_, [this] {
      dnnl_convolution_desc_t d;
      const dnnl_memory_desc_t x = x_inner(), w = weights_any(), y = y_inner();
      check(dnnl_dilated_convolution_backward_data_desc_init(&d, dnnl_convolution_direct, &x, &w,
                                                             &y, strides_.data(), dilates_.data(),
                                                             padding_.data(), padding_.data()),
            "convolution backward-data descriptor");
      PrimitiveDesc pd = primitive_desc(&d, forward_.pd.get());
      if (PrimitiveDesc as_forward = data_as_forward_desc(pd)) {
        std::vector<Operand> ops = operands({{DNNL_ARG_SRC, user_y(), dnnl_query_src_md},
                                             {DNNL_ARG_WEIGHTS, flipped_w(), dnnl_query_weights_md},
                                             {DNNL_ARG_DST, user_x(), dnnl_query_dst_md}},
                                            as_forward);
        backward_data_ = Pass(std::move(as_forward), std::move(ops));
        data_as_forward_ = true;
        return;
      }
      std::vector<Operand> ops = operands({{DNNL_ARG_DIFF_DST, user_y(), dnnl_query_diff_dst_md},
                                           {DNNL_ARG_WEIGHTS, user_w(), dnnl_query_weights_md},
                                           {DNNL_ARG_DIFF_SRC, user_x(), dnnl_query_diff_src_md}},
                                          pd);
      backward_data_ = Pass(std::move(pd), std::move(ops));
    });
    return backward_data_;
  }
  /// Whether the input gradient runs as a forward convolution (made by backward_data()).
  bool data_as_forward() const { return data_as_forward_; }
  const Pass& backward_weights() {
    std::call_once(weights_once_, [this] {
      dnnl_convolution_desc_t d;
      const dnnl_memory_desc_t x = x_inner(), w = weights_any(), y = y_inner();
      check(dnnl_dilated_convolution_backward_weights_desc_init(
                &d, dnnl_convolution_direct, &x, &w, nullptr, &y, strides_.data(), dilates_.data(),
                padding_.data(), padding_.data()),
            "convolution backward-weights descriptor");
      PrimitiveDesc pd = primitive_desc(&d, forward_.pd.get());
      std::vector<Operand> ops =
          operands({{DNNL_ARG_SRC, user_x(), dnnl_query_src_md},
                    {DNNL_ARG_DIFF_DST, user_y(), dnnl_query_diff_dst_md},
                    {DNNL_ARG_DIFF_WEIGHTS, user_w(), dnnl_query_diff_weights_md}},
                   pd);
      backward_weights_ = Pass(std::move(pd), std::move(ops));
    });
    return backward_weights_;
  }

 private:
  struct OperandSpec {
    int arg;
    dnnl_memory_desc_t user;
    dnnl_query_t inner;
  };
  static std::vector<Operand> operands(std::initializer_list<OperandSpec> specs,
                                       const PrimitiveDesc& pd) {
    std::vector<Operand> ops;
    for (const OperandSpec& s : specs) ops.emplace_back(s.arg, s.user, query_md(pd, s.inner));
    return ops;
  }
  static PrimitiveDesc primitive_desc(const dnnl_convolution_desc_t* d,
                                      const_dnnl_primitive_desc_t hint) {
    dnnl_primitive_attr_t attr = nullptr;
    check(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    dnnl_primitive_desc_t pd = nullptr;
    const dnnl_status_t status = dnnl_primitive_desc_create(&pd, d, attr, cpu_engine(), hint);
    dnnl_primitive_attr_destroy(attr);
    check(status, "dnnl_primitive_desc_create (convolution)");
    return PrimitiveDesc(pd);
  }

  dnnl_memory_desc_t desc(std::initializer_list<std::int64_t> dims, dnnl_format_tag_t tag) const {
    dnnl_memory_desc_t md;
    dnnl_dims_t d{};
    int n = 0;
    for (const std::int64_t v : dims) d[n++] = v;
    check(dnnl_memory_desc_init_by_tag(&md, n, d, dt_, tag), "dnnl_memory_desc_init_by_tag");
    return md;
  }
  /// An activation as the tensor holds it (`user`), or as the primitive may (channels-last as
  /// it is; NCHW in whatever layout oneDNN prefers).
  dnnl_memory_desc_t activation(std::int64_t c, std::int64_t h, std::int64_t w, bool user) const {
    const dnnl_format_tag_t tag = g_.channels_last ? dnnl_nhwc
                                  : user           ? dnnl_nchw
                                                   : dnnl_format_tag_any;
    return desc({g_.N, c, h, w}, tag);
  }
  dnnl_memory_desc_t x_inner() const { return activation(g_.C, g_.H, g_.W, false); }
  dnnl_memory_desc_t y_inner() const { return activation(g_.O, g_.OH, g_.OW, false); }
  dnnl_memory_desc_t user_x() const { return activation(g_.C, g_.H, g_.W, true); }
  dnnl_memory_desc_t user_y() const { return activation(g_.O, g_.OH, g_.OW, true); }
  /// The weight [O, C/groups, KH, KW] dense as ember holds it (`goihw` with groups), or in
  /// oneDNN's choice.
  dnnl_memory_desc_t weights(dnnl_format_tag_t plain) const {
    const bool grouped = g_.groups > 1;
    const dnnl_format_tag_t tag = plain == dnnl_format_tag_any ? plain
                                  : grouped                    ? dnnl_goihw
                                                               : dnnl_oihw;
    return grouped ? desc({g_.groups, g_.og(), g_.cg(), g_.KH, g_.KW}, tag)
                   : desc({g_.O, g_.C, g_.KH, g_.KW}, tag);
  }
  dnnl_memory_desc_t weights_any() const { return weights(dnnl_format_tag_any); }
  dnnl_memory_desc_t user_w() const { return weights(dnnl_oihw); }
  /// The flipped weight (flip_taps) as the forward's weight [C, O, KH, KW]: [O, C, KH, KW] in
  /// memory, so O and C trade strides.
  dnnl_memory_desc_t flipped_w() const {
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims{g_.C, g_.O, g_.KH, g_.KW};
    const dnnl_dims_t strides{g_.KH * g_.KW, g_.C * g_.KH * g_.KW, g_.KW, 1};
    check(dnnl_memory_desc_init_by_strides(&md, 4, dims, dt_, strides),
          "dnnl_memory_desc_init_by_strides");
    return md;
  }

  /// The input gradient of a stride-1 convolution is a forward convolution of dy with the
  /// weights transposed (O and C trade places) and flipped in space, padded by K - 1 - p. oneDNN
  /// 3.x computes it so; 2.6 runs its older JIT kernel for the input gradient of channels-last
  /// tensors, while its forward is a brgconv kernel. On AVX-512 the forward kernel is faster from
  /// 32 channels and 7x7 outputs up, slower on smaller maps and on 16 channels
  /// (docs/benchmarks.md has the table). So where the shape is of that
  /// kind and oneDNN's choices are those two kernels, this returns the forward's descriptor; null
  /// elsewhere. The rule depends on the shape and the library only: the same program takes the
  /// same path every run.
  PrimitiveDesc data_as_forward_desc(const PrimitiveDesc& native) const {
    const bool suits = g_.channels_last && g_.groups == 1 && strides_ == decltype(strides_){1, 1} &&
                       dilates_ == decltype(dilates_){0, 0} && g_.KH * g_.KW > 1 &&
                       padding_[0] < g_.KH && padding_[1] < g_.KW && std::min(g_.C, g_.O) >= 32 &&
                       g_.OH * g_.OW >= 49;
    if (!suits || impl_name(native).starts_with("brgconv")) return nullptr;
    dnnl_convolution_desc_t d;
    const dnnl_memory_desc_t src = y_inner(), dst = x_inner();
    const dnnl_memory_desc_t w = desc({g_.C, g_.O, g_.KH, g_.KW}, dnnl_format_tag_any);
    const std::array<std::int64_t, 2> pad{g_.KH - 1 - padding_[0], g_.KW - 1 - padding_[1]};
    check(dnnl_dilated_convolution_forward_desc_init(
              &d, dnnl_forward_inference, dnnl_convolution_direct, &src, &w, nullptr, &dst,
              strides_.data(), dilates_.data(), pad.data(), pad.data()),
          "convolution forward descriptor (input gradient)");
    PrimitiveDesc pd = primitive_desc(&d, nullptr);
    if (!impl_name(pd).starts_with("brgconv")) return nullptr;
    return pd;
  }

  ConvGeometry g_;
  dnnl_data_type_t dt_;
  // oneDNN's dilation counts the gaps: 0 is a dense kernel.
  std::array<std::int64_t, 2> strides_{g_.opt.stride[0], g_.opt.stride[1]};
  std::array<std::int64_t, 2> dilates_{g_.opt.dilation[0] - 1, g_.opt.dilation[1] - 1};
  std::array<std::int64_t, 2> padding_{g_.opt.padding[0], g_.opt.padding[1]};
  Pass forward_, backward_data_, backward_weights_;  // forward_'s desc: the backward's hint
  bool data_as_forward_ = false;
  std::once_flag data_once_, weights_once_;
};
}  // namespace ember::ops::onednn::inline EMBER_UNIT_KIND

namespace ember::ops::onednn::detail::inline EMBER_UNIT_KIND {

/// The convolutions made so far, by (dtype, sizes, options, memory format, thread count): the
/// primitives oneDNN JIT-compiles depend on the thread count too. Never destroyed, like the
/// cuDNN handles, so no primitive outlives oneDNN's own statics.
struct Cache {
  using Key = std::array<std::int64_t, 17>;
  std::mutex mutex;
  std::map<Key, std::unique_ptr<Convolution>> convolutions;
  static Cache& instance() {
    static Cache* cache = new Cache();
    return *cache;
  }
};
}  // namespace ember::ops::onednn::detail::inline EMBER_UNIT_KIND

namespace ember::ops::onednn::inline EMBER_UNIT_KIND {

/// The cached convolution for this shape, made on first use.
template <class T>
Convolution& convolution(const ConvGeometry& g) {
  const detail::Cache::Key key{static_cast<std::int64_t>(data_type<T>()),
                               g.N,
                               g.C,
                               g.H,
                               g.W,
                               g.O,
                               g.KH,
                               g.KW,
                               g.opt.stride[0],
                               g.opt.stride[1],
                               g.opt.padding[0],
                               g.opt.padding[1],
                               g.opt.dilation[0],
                               g.opt.dilation[1],
                               g.groups,
                               g.channels_last ? 1 : 0,
                               omp_get_max_threads()};
  detail::Cache& cache = detail::Cache::instance();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.convolutions.find(key);
  if (it == cache.convolutions.end()) {
    it = cache.convolutions.emplace(key, std::make_unique<Convolution>(g, data_type<T>())).first;
  }
  return *it->second;
}

/// How many convolution shapes have primitives made (a step that repeats the last one's shapes
/// adds none).
inline std::size_t cached_convolutions() {
  detail::Cache& cache = detail::Cache::instance();
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.convolutions.size();
}

/// The tensor as oneDNN reads it: dense in the convolution's memory format.
template <class T>
Tensor<T> dense(const Tensor<T>& t, const ConvGeometry& g) {
  return t.contiguous(g.channels_last ? MemoryFormat::channels_last : MemoryFormat::contiguous);
}

/// Runs `pass` over the operands' data and counts it; true. (Callers test pass.reference first,
/// before making their operands dense.)
inline bool run_counted(const Pass& pass, const std::vector<void*>& pointers) {
  pass.run(pointers);
  ops::detail::count_conv_call(ConvBackend::onednn);
  return true;
}
template <class T>
bool run_counted(const Pass& pass, const Tensor<T>& a, const Tensor<T>& b, const Tensor<T>& out) {
  return run_counted(pass, {a.data(), b.data(), out.data()});
}

/// w [O, C, KH, KW] with each kernel turned by 180 degrees, w[o][c][KH-1-i][KW-1-j], into `out`:
/// the weight of the input gradient run as a forward convolution (Convolution::data_as_forward).
template <class T>
void flip_taps(const T* w, T* out, std::int64_t kernels, std::int64_t taps) {
#pragma omp parallel for if (kernels * taps >= (std::int64_t{1} << 16))
  for (std::int64_t k = 0; k < kernels; ++k) {
    const T* from = w + k * taps;
    T* to = out + k * taps;
    for (std::int64_t t = 0; t < taps; ++t) to[t] = from[taps - 1 - t];
  }
}

/// Whether a convolution runs as matrix products over its pixels: a 1x1, stride-1, unpadded,
/// ungrouped channels-last one is y [N*H*W, O] = x [N*H*W, C] w^T, its input gradient dy w and
/// its weight gradient dy^T x. oneDNN's matmul reads the plain weight where its 1x1 convolution
/// kernels want it reordered into and out of a blocked layout, each pass of each step, so the
/// products win where the weight outweighs the pixels: up to 1,024 pixels (N*OH*OW), by the
/// measured crossover of the three passes with their reorders (docs/benchmarks.md, "ResNet and
/// BERT on the AMD EPYC").
inline bool pointwise_as_matmul(const ConvGeometry& g) {
  return g.channels_last && g.groups == 1 && g.KH == 1 && g.KW == 1 && g.opt.stride[0] == 1 &&
         g.opt.stride[1] == 1 && g.opt.padding[0] == 0 && g.opt.padding[1] == 0 &&
         g.N * g.OH * g.OW <= 1024;
}

/// A dense channels-last activation of a pointwise convolution (whose input and output have
/// the same size) as the matrix [N*H*W, channels].
template <class T>
MatrixView<T> pixel_rows(T* data, const ConvGeometry& g, std::int64_t channels) {
  return {data, g.N * g.OH * g.OW, channels, channels, 1};
}

/// C = A B on oneDNN's matmul, counted as a oneDNN convolution pass; false where oneDNN has only
/// its reference kernel for these strides.
template <class T>
bool run_counted_product(const MatrixView<const T>& A, const MatrixView<const T>& B,
                         const MatrixView<T>& C) {
  if (!gemm<T>(A, B, C, 1.0f, 0.0f)) return false;
  ops::detail::count_conv_call(ConvBackend::onednn);
  return true;
}

/// y = conv(x, w) into y (dense, in x's memory format); false, with nothing done, where oneDNN
/// has only a reference implementation for this shape.
template <class T>
bool conv_forward(const Tensor<T>& x, const Tensor<T>& w, const ConvGeometry& g,
                  const Tensor<T>& y) {
  if (pointwise_as_matmul(g)) {
    const Tensor<T> dense_w = w.contiguous();
    if (run_counted_product<T>(pixel_rows<const T>(dense(x, g).data(), g, g.C),
                               {dense_w.data(), g.C, g.O, 1, g.C},  // w^T
                               pixel_rows(y.data(), g, g.O))) {
      return true;
    }
  }
  const Pass& pass = convolution<T>(g).forward();
  return !pass.reference && run_counted(pass, dense(x, g), w.contiguous(), y);
}

/// dx (dense, in x's memory format) of conv(x, w) given dy; false as conv_forward.
template <class T>
bool conv_backward_data(const Tensor<T>& w, const Tensor<T>& dy, const ConvGeometry& g,
                        const Tensor<T>& dx) {
  if (pointwise_as_matmul(g)) {
    const Tensor<T> dense_w = w.contiguous();
    if (run_counted_product<T>(pixel_rows<const T>(dense(dy, g).data(), g, g.O),
                               {dense_w.data(), g.O, g.C, g.C, 1}, pixel_rows(dx.data(), g, g.C))) {
      return true;
    }
  }
  Convolution& conv = convolution<T>(g);
  const Pass& pass = conv.backward_data();
  if (pass.reference) return false;
  if (!conv.data_as_forward()) return run_counted(pass, dense(dy, g), w.contiguous(), dx);
  const Tensor<T> dense_w = w.contiguous();
  const Buffer flipped(static_cast<std::size_t>(dense_w.numel()) * sizeof(T));
  flip_taps(dense_w.data(), static_cast<T*>(flipped.data()), g.O * g.C, g.KH * g.KW);
  return run_counted(pass, {dense(dy, g).data(), flipped.data(), dx.data()});
}

/// dw (dense) of conv(x, w) given dy; false as conv_forward.
template <class T>
bool conv_backward_weights(const Tensor<T>& x, const Tensor<T>& dy, const ConvGeometry& g,
                           const Tensor<T>& dw) {
  if (pointwise_as_matmul(g)) {
    const Tensor<T> dense_dy = dense(dy, g);
    const std::int64_t pixels = g.N * g.OH * g.OW;
    if (run_counted_product<T>({dense_dy.data(), g.O, pixels, 1, g.O},  // dy^T
                               pixel_rows<const T>(dense(x, g).data(), g, g.C),
                               {dw.data(), g.O, g.C, g.C, 1})) {
      return true;
    }
  }
  const Pass& pass = convolution<T>(g).backward_weights();
  return !pass.reference && run_counted(pass, dense(x, g), dense(dy, g), dw);
}
}  // namespace ember::ops::onednn::inline EMBER_UNIT_KIND
