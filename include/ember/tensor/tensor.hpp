// Tensor<T>: a cheap, refcounted handle onto a Storage (offset, shape, strides), rank 0 to 8.
//
// Copying a Tensor copies the handle; both name the same memory. Assigning an expression
// (`y = a * b + 1`) evaluates it into y's memory in one pass; see exec/assign.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "../core/concepts.hpp"
#include "../core/cuda.hpp"
#include "../core/device.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"
#include "../exec/store_op.hpp"
#include "../memory/storage.hpp"

namespace ember {

/// How a rank-4 tensor is laid out in memory; the logical order is always NCHW.
enum class MemoryFormat { contiguous, channels_last };

/// Whether elements of `shape` at `strides` lie dense in `format`'s order (unit dimensions may
/// have any stride).
inline bool is_dense_in(const Shape& shape, const Strides& strides, MemoryFormat format) {
  const Strides want =
      format == MemoryFormat::contiguous ? contiguous_strides(shape) : channels_last_strides(shape);
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape[i] != 1 && strides[i] != want[i]) return false;
  }
  return true;
}

/// channels_last where `shape` has rank 4 and `strides` are dense in NHWC order but not in NCHW
/// order, else contiguous (Tensor::memory_format). A tensor dense in both (one channel, or 1x1
/// images) is channels_last when its strides are exactly NHWC's, as PyTorch decides: a
/// one-channel image batch made channels-last keeps that layout through the layers that follow
/// their input's (the stem convolution's output, say).
inline MemoryFormat memory_format_of(const Shape& shape, const Strides& strides) {
  if (shape.rank() != 4 || !is_dense_in(shape, strides, MemoryFormat::channels_last)) {
    return MemoryFormat::contiguous;
  }
  if (!is_dense_in(shape, strides, MemoryFormat::contiguous)) return MemoryFormat::channels_last;
  return strides == channels_last_strides(shape) && strides != contiguous_strides(shape)
             ? MemoryFormat::channels_last
             : MemoryFormat::contiguous;
}

/// Whether elements of `shape` at `strides` lie dense in memory with their dims in the order of
/// `order`'s strides (the largest outermost; ties in dim order): one dense layout, whichever it
/// is (NCHW, NHWC, a projection's heads after its rows). Unit dimensions may have any stride.
inline bool is_dense_in_order_of(const Shape& shape, const Strides& strides, const Strides& order) {
  const int r = shape.rank();
  std::array<int, kMaxRank> dims{};
  std::iota(dims.begin(), dims.begin() + r, 0);
  std::stable_sort(dims.begin(), dims.begin() + r,
                   [&](int a, int b) { return order[a] > order[b]; });
  std::int64_t step = 1;
  for (int i = r - 1; i >= 0; --i) {
    const int d = dims[static_cast<std::size_t>(i)];
    if (shape[d] == 1) continue;
    if (strides[d] != step) return false;
    step *= shape[d];
  }
  return true;
}

template <Storable T>
class Tensor;

// What Tensor's evaluating members call, defined in exec/assign.hpp. They live in the unit's kind
// (core/config.hpp); a member calling them is tagged once, by its `Mode` default.
namespace exec::inline EMBER_UNIT_KIND {
/// Evaluates expression `e` into `out` with store `Op` (allocating `out` when undefined).
template <StoreOp Op, Storable T, class E>
void evaluate_into(Tensor<T>& out, const E& e);
/// `out Op= operand`, the operand a tensor, a scalar or an expression.
template <StoreOp Op, Storable T, class E>
void update(Tensor<T>& out, const E& operand);
/// Every element of `out` set to `value`.
template <Storable T, Scalar S>
void fill(Tensor<T>& out, S value);
/// `src`'s values (from any device, broadcast to out's shape) converted into `out`.
template <Storable T, Storable U>
void copy_values(Tensor<T>& out, const Tensor<U>& src);
/// A dense copy of `t` in `format`, on t's device.
template <Storable T>
Tensor<T> copy_of(const Tensor<T>& t, MemoryFormat format);
/// A copy of `t` on another device (see Tensor::to).
template <Storable T>
Tensor<T> copy_to(const Tensor<T>& t, Device target, bool non_blocking);
/// A dense copy of host tensor `t` in page-locked memory.
template <Storable T>
Tensor<T> pinned_copy(const Tensor<T>& t);
}  // namespace exec::inline EMBER_UNIT_KIND

template <Storable T>
class Tensor {
 public:
  using value_type = T;

  /// An undefined tensor: no storage. Assigning an expression to it allocates.
  Tensor() = default;

  Tensor(std::shared_ptr<Storage> storage, std::int64_t offset, Shape shape, Strides strides)
      : storage_(std::move(storage)), offset_(offset), shape_(shape), strides_(strides) {
    EMBER_CHECK(shape_.rank() == strides_.rank(), "ember: shape ", shape_.str(), " and strides ",
                strides_.str(), " differ in rank");
    for (int i = 0; i < shape_.rank(); ++i) {
      EMBER_CHECK(shape_[i] >= 0, "ember: negative extent in shape ", shape_.str());
    }
  }

  /// Evaluates `e` into a new tensor of its shape on its device (one launch).
  template <Expression E, class Mode = exec::mode>
  Tensor(const E& e) {  // NOLINT(google-explicit-constructor): `Tensor<float> y = a * b;`
    exec::evaluate_into<exec::StoreOp::set>(*this, e);
  }

  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  /// Rebinds this handle (no data is copied). To copy values, assign an expression.
  Tensor& operator=(const Tensor&) = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  /// Evaluates `e` into this tensor's memory (allocating first if undefined).
  template <Expression E, class Mode = exec::mode>
  Tensor& operator=(const E& e) {
    exec::evaluate_into<exec::StoreOp::set>(*this, e);
    return *this;
  }
  /// Fills every element with `value`.
  template <Scalar S, class Mode = exec::mode>
  Tensor& operator=(S value) {
    require_defined("operator=");
    exec::fill(*this, value);
    return *this;
  }
  template <Operand E, class Mode = exec::mode>
  Tensor& operator+=(const E& e) {
    require_defined("+=");
    exec::update<exec::StoreOp::add>(*this, e);
    return *this;
  }
  template <Operand E, class Mode = exec::mode>
  Tensor& operator-=(const E& e) {
    require_defined("-=");
    exec::update<exec::StoreOp::sub>(*this, e);
    return *this;
  }
  template <Operand E, class Mode = exec::mode>
  Tensor& operator*=(const E& e) {
    require_defined("*=");
    exec::update<exec::StoreOp::mul>(*this, e);
    return *this;
  }
  template <Operand E, class Mode = exec::mode>
  Tensor& operator/=(const E& e) {
    require_defined("/=");
    exec::update<exec::StoreOp::div>(*this, e);
    return *this;
  }
  /// Copies the values of `src` (broadcast to this shape) into this tensor's memory.
  template <Storable U, class Mode = exec::mode>
  Tensor& copy_(const Tensor<U>& src) {
    require_defined("copy_");
    exec::copy_values(*this, src);
    return *this;
  }

  // ---- properties ----
  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int rank() const { return shape_.rank(); }
  int dim() const { return shape_.rank(); }
  std::int64_t numel() const { return shape_.numel(); }
  std::int64_t size(int d) const { return shape_[normalize_axis(d, rank(), "size")]; }
  std::int64_t stride(int d) const { return strides_[normalize_axis(d, rank(), "stride")]; }
  std::int64_t offset() const { return offset_; }
  Device device() const {
    require_defined("device");
    return storage_->device();
  }
  /// Pointer to element 0 of this view (device memory for CUDA tensors).
  T* data() const {
    require_defined("data");
    return static_cast<T*>(storage_->data()) + offset_;
  }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  static constexpr DType dtype() { return dtype_of<T>; }

  /// True when the elements are dense in row-major order (or, for channels_last, NHWC).
  bool is_contiguous(MemoryFormat format = MemoryFormat::contiguous) const {
    return is_dense_in(shape_, strides_, format);
  }

  /// Whether this tensor and `other`, of the same shape, lie dense in one layout: other's elements
  /// fill their memory in the order of its strides, and this tensor's in the same order.
  template <Storable U>
  bool is_dense_like(const Tensor<U>& other) const {
    return other.shape() == shape_ &&
           is_dense_in_order_of(shape_, other.strides(), other.strides()) &&
           is_dense_in_order_of(shape_, strides_, other.strides());
  }

  /// channels_last for a rank-4 tensor dense in NHWC order (and not also in NCHW order, as
  /// tensors with a unit dimension can be), else contiguous: the format results should keep.
  MemoryFormat memory_format() const { return memory_format_of(shape_, strides_); }

  // ---- views (no copy) ----

  /// Same elements, new shape; one extent may be -1. Throws unless viewable without a copy.
  Tensor view(const Shape& shape) const {
    const Shape target = infer_shape(shape, "view");
    Strides st;
    EMBER_CHECK(view_strides(target, st), "ember: view: a tensor of shape ", shape_.str(),
                " and strides ", strides_.str(), " cannot be viewed as ", target.str(),
                " without a copy; use reshape");
    return Tensor(storage_, offset_, target, st);
  }
  /// Same elements, new shape; one extent may be -1. A view when possible, else a copy.
  template <class Mode = exec::mode>
  Tensor reshape(const Shape& shape) const {
    const Shape target = infer_shape(shape, "reshape");
    Strides st;
    if (view_strides(target, st)) return Tensor(storage_, offset_, target, st);
    return contiguous().view(target);
  }
  template <class Mode = exec::mode>
  Tensor flatten() const {
    return reshape(Shape{numel()});
  }

  /// Reorders dimensions: result dimension i is this tensor's dimension order[i].
  Tensor permute(const Dims& order) const {
    EMBER_CHECK(order.rank() == rank(), "ember: permute: order ", order.str(), " has ",
                order.rank(), " entries for a tensor of rank ", rank());
    Shape sh = Shape::filled(rank(), 0);
    Strides st = Strides::filled(rank(), 0);
    std::uint32_t seen = 0;
    for (int i = 0; i < rank(); ++i) {
      const int d = normalize_axis(order[i], rank(), "permute");
      EMBER_CHECK(!(seen & (1u << d)), "ember: permute: order ", order.str(), " repeats dimension ",
                  d);
      seen |= 1u << d;
      sh[i] = shape_[d];
      st[i] = strides_[d];
    }
    return Tensor(storage_, offset_, sh, st);
  }
  Tensor transpose(int d0, int d1) const {
    const int a = normalize_axis(d0, rank(), "transpose");
    const int b = normalize_axis(d1, rank(), "transpose");
    Shape sh = shape_;
    Strides st = strides_;
    std::swap(sh[a], sh[b]);
    std::swap(st[a], st[b]);
    return Tensor(storage_, offset_, sh, st);
  }
  /// Transpose of a rank-2 tensor.
  Tensor t() const {
    EMBER_CHECK(rank() == 2, "ember: t() needs a rank-2 tensor, got shape ", shape_.str());
    return transpose(0, 1);
  }

  /// Elements start, start+step, ... below stop along `dim`. Negative start/stop count from
  /// the end; a range outside the dimension throws.
  Tensor slice(int dim, std::int64_t start, std::int64_t stop, std::int64_t step = 1) const {
    const int d = normalize_axis(dim, rank(), "slice");
    const std::int64_t n = shape_[d];
    if (start < 0) start += n;
    if (stop < 0) stop += n;
    EMBER_CHECK(step > 0, "ember: slice: step must be positive, got ", step);
    EMBER_CHECK(start >= 0 && start <= n && stop >= 0 && stop <= n, "ember: slice: range [", start,
                ", ", stop, ") is outside dimension ", d, " of size ", n, " (shape ", shape_.str(),
                ")");
    const std::int64_t len = stop > start ? (stop - start + step - 1) / step : 0;
    Shape sh = shape_;
    Strides st = strides_;
    sh[d] = len;
    st[d] = strides_[d] * step;
    return Tensor(storage_, offset_ + start * strides_[d], sh, st);
  }
  Tensor narrow(int dim, std::int64_t start, std::int64_t length) const {
    const int d = normalize_axis(dim, rank(), "narrow");
    EMBER_CHECK(length >= 0, "ember: narrow: negative length ", length);
    if (start < 0) start += shape_[d];
    EMBER_CHECK(start >= 0 && start + length <= shape_[d], "ember: narrow: [", start, ", ",
                start + length, ") is outside dimension ", d, " of size ", shape_[d]);
    return slice(d, start, start + length);
  }
  /// The sub-tensor at `index` along `dim` (that dimension removed).
  Tensor select(int dim, std::int64_t index) const {
    const int d = normalize_axis(dim, rank(), "select");
    if (index < 0) index += shape_[d];
    EMBER_CHECK(index >= 0 && index < shape_[d], "ember: select: index ", index,
                " is outside dimension ", d, " of size ", shape_[d]);
    Shape sh = shape_;
    Strides st = strides_;
    sh.erase(d);
    st.erase(d);
    return Tensor(storage_, offset_ + index * strides_[d], sh, st);
  }
  /// Removes every size-1 dimension.
  Tensor squeeze() const {
    Shape sh;
    Strides st;
    for (int i = 0; i < rank(); ++i) {
      if (shape_[i] != 1) {
        sh.push_back(shape_[i]);
        st.push_back(strides_[i]);
      }
    }
    return Tensor(storage_, offset_, sh, st);
  }
  /// Removes dimension `dim`, which must have size 1.
  Tensor squeeze(int dim) const {
    const int d = normalize_axis(dim, rank(), "squeeze");
    EMBER_CHECK(shape_[d] == 1, "ember: squeeze: dimension ", d, " of shape ", shape_.str(),
                " has size ", shape_[d], ", not 1");
    Shape sh = shape_;
    Strides st = strides_;
    sh.erase(d);
    st.erase(d);
    return Tensor(storage_, offset_, sh, st);
  }
  /// Inserts a size-1 dimension at `dim` (in [-rank-1, rank]).
  Tensor unsqueeze(int dim) const {
    EMBER_CHECK(rank() < kMaxRank, "ember: unsqueeze: rank would exceed ", kMaxRank);
    const int d = normalize_axis(dim, rank() + 1, "unsqueeze");
    Shape sh = shape_;
    Strides st = strides_;
    const std::int64_t inner = d < rank() ? strides_[d] * shape_[d] : 1;
    sh.insert(d, 1);
    st.insert(d, inner);
    return Tensor(storage_, offset_, sh, st);
  }
  /// Broadcasts to `shape` (NumPy rules; -1 keeps an extent) with stride 0 on new dims.
  Tensor expand(const Shape& shape) const {
    EMBER_CHECK(shape.rank() >= rank(), "ember: expand: cannot expand shape ", shape_.str(),
                " to the lower rank shape ", shape.str());
    Shape target = shape;
    const int lead = shape.rank() - rank();
    for (int i = lead; i < shape.rank(); ++i) {
      if (target[i] == -1) target[i] = shape_[i - lead];
    }
    EMBER_CHECK(broadcastable_to(shape_, target), "ember: expand: shape ", shape_.str(),
                " cannot be broadcast to ", target.str());
    return Tensor(storage_, offset_, target, broadcast_strides(shape_, strides_, target));
  }
  Tensor broadcast_to(const Shape& shape) const { return expand(shape); }

  // ---- copies ----

  /// This tensor if already dense in `format` (a view restrided to `format` when the tensor is
  /// dense in both layouts), else a dense copy (one launch).
  template <class Mode = exec::mode>
  Tensor contiguous(MemoryFormat format = MemoryFormat::contiguous) const {
    require_defined("contiguous");
    if (!is_contiguous(format)) return exec::copy_of(*this, format);
    // Dense in both layouts (see memory_format_of): the same memory, restrided to name `format`.
    if (rank() == 4 && memory_format() != format) {
      return Tensor(storage_, offset_, shape_,
                    format == MemoryFormat::contiguous ? contiguous_strides(shape_)
                                                       : channels_last_strides(shape_));
    }
    return *this;
  }
  /// A dense copy in row-major order.
  template <class Mode = exec::mode>
  Tensor clone() const {
    require_defined("clone");
    return exec::copy_of(*this, MemoryFormat::contiguous);
  }
  /// A copy on `device` (this tensor itself when already there), channels-last when this tensor
  /// is (as PyTorch's preserve_format), else contiguous. The copy is done when `to`
  /// returns, except with `non_blocking` from pinned memory (pin_memory()) to a GPU: then it is
  /// queued on ember's stream, ahead of the kernels that will read it, and the host goes on.
  /// Writing to this tensor before the stream reaches the copy races with it.
  template <class Mode = exec::mode>
  Tensor to(Device device, bool non_blocking = false) const {
    require_defined("to");
    if (device == this->device()) return *this;
    return exec::copy_to(*this, device, non_blocking);
  }
  /// A dense copy of this CPU tensor in page-locked memory, whose copies to a GPU can be
  /// non-blocking (this tensor itself when already pinned and dense). Needs a CUDA device.
  template <class Mode = exec::mode>
  Tensor pin_memory() const {
    require_defined("pin_memory");
    EMBER_CHECK(device().is_cpu(), "ember: pin_memory: the tensor is on ", device().str(),
                "; only host tensors can be pinned");
    if (is_pinned() && is_contiguous()) return *this;
    return exec::pinned_copy(*this);
  }
  /// True when the elements live in page-locked host memory.
  bool is_pinned() const { return storage_ && storage_->pinned(); }
  /// The elements in row-major order, copied to the host.
  template <class Mode = exec::mode>
  std::vector<T> to_vector() const {
    require_defined("to_vector");
    if (numel() == 0) return {};
    const Tensor host = to(Device::cpu()).contiguous();
    return std::vector<T>(host.data(), host.data() + numel());  // std::vector<bool> too
  }
  /// The value of a one-element tensor.
  template <class Mode = exec::mode>
  T item() const {
    EMBER_CHECK(numel() == 1, "ember: item() needs exactly one element, the tensor has shape ",
                shape_.str());
    return to_vector()[0];
  }

 private:
  void require_defined(const char* what) const {
    EMBER_CHECK(defined(), "ember: ", what, "() called on an undefined tensor");
  }

  Shape infer_shape(const Shape& shape, const char* what) const {
    Shape out = shape;
    int infer = -1;
    std::int64_t known = 1;
    for (int i = 0; i < out.rank(); ++i) {
      if (out[i] == -1) {
        EMBER_CHECK(infer < 0, "ember: ", what, ": more than one -1 in ", shape.str());
        infer = i;
      } else {
        EMBER_CHECK(out[i] >= 0, "ember: ", what, ": negative extent in ", shape.str());
        known *= out[i];
      }
    }
    if (infer >= 0) {
      EMBER_CHECK(known != 0 && numel() % known == 0, "ember: ", what, ": cannot infer -1 in ",
                  shape.str(), " for ", numel(), " elements (shape ", shape_.str(), ")");
      out[infer] = numel() / known;
    }
    EMBER_CHECK(out.numel() == numel(), "ember: ", what, ": shape ", shape_.str(), " has ", numel(),
                " elements, which cannot be reshaped to ", out.str(), " (", out.numel(),
                " elements)");
    return out;
  }

  // Strides that show this view's elements, in row-major order, with shape `target`; false
  // when that needs a copy. The old dimensions split into runs that are dense with respect to
  // each other; every run must be covered exactly by consecutive new dimensions.
  bool view_strides(const Shape& target, Strides& out) const {
    out = Strides::filled(target.rank(), 0);
    if (numel() == 0 || rank() == 0) {
      out = contiguous_strides(target);
      return true;
    }
    int vd = target.rank() - 1;
    std::int64_t run_stride = strides_[rank() - 1];  // stride of the run's innermost element
    std::int64_t run_numel = 1;
    std::int64_t view_numel = 1;
    for (int d = rank() - 1; d >= 0; --d) {
      run_numel *= shape_[d];
      const bool run_ends =
          d == 0 || (shape_[d - 1] != 1 && strides_[d - 1] != run_numel * run_stride);
      if (!run_ends) continue;
      while (vd >= 0 && (view_numel < run_numel || target[vd] == 1)) {
        out[vd] = view_numel * run_stride;
        view_numel *= target[vd];
        --vd;
      }
      if (view_numel != run_numel) return false;
      if (d > 0) {
        run_stride = strides_[d - 1];
        run_numel = 1;
        view_numel = 1;
      }
    }
    return vd == -1;
  }

  std::shared_ptr<Storage> storage_;
  std::int64_t offset_ = 0;
  Shape shape_;
  Strides strides_;
};

}  // namespace ember

namespace ember::inline EMBER_UNIT_KIND {
/// Free-function spellings of the common views.
template <Storable T>
Tensor<T> transpose(const Tensor<T>& t, int d0, int d1) {
  return t.transpose(d0, d1);
}
template <Storable T>
Tensor<T> permute(const Tensor<T>& t, const Dims& order) {
  return t.permute(order);
}
template <Storable T>
Tensor<T> reshape(const Tensor<T>& t, const Shape& shape) {
  return t.reshape(shape);
}
template <Storable T>
Tensor<T> contiguous(const Tensor<T>& t, MemoryFormat format = MemoryFormat::contiguous) {
  return t.contiguous(format);
}
}  // namespace ember::inline EMBER_UNIT_KIND
