// Shape and Strides: small fixed-capacity vectors of extents, and the broadcasting rule.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "config.hpp"
#include "error.hpp"

namespace ember {

/// A list of at most kMaxRank 64-bit extents (or strides). Rank 0 is a scalar.
class Dims {
 public:
  Dims() = default;
  Dims(std::initializer_list<std::int64_t> values)
      : Dims(std::span(values.begin(), values.size())) {}
  explicit Dims(std::span<const std::int64_t> values) {
    EMBER_CHECK(values.size() <= static_cast<std::size_t>(kMaxRank), "ember: rank ", values.size(),
                " exceeds the maximum rank ", kMaxRank);
    rank_ = static_cast<int>(values.size());
    std::copy(values.begin(), values.end(), d_.begin());
  }
  explicit Dims(const std::vector<std::int64_t>& values) : Dims(std::span(values)) {}

  /// `rank` copies of `value`.
  static Dims filled(int rank, std::int64_t value) {
    EMBER_CHECK(rank >= 0 && rank <= kMaxRank, "ember: rank ", rank, " is outside [0, ", kMaxRank,
                "]");
    Dims d;
    d.rank_ = rank;
    std::fill_n(d.d_.begin(), rank, value);
    return d;
  }

  int rank() const { return rank_; }
  int size() const { return rank_; }
  bool empty() const { return rank_ == 0; }
  std::int64_t operator[](int i) const { return d_[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](int i) { return d_[static_cast<std::size_t>(i)]; }
  const std::int64_t* begin() const { return d_.data(); }
  const std::int64_t* end() const { return d_.data() + rank_; }
  std::int64_t* begin() { return d_.data(); }
  std::int64_t* end() { return d_.data() + rank_; }
  const std::int64_t* data() const { return d_.data(); }
  std::int64_t back() const { return d_[static_cast<std::size_t>(rank_ - 1)]; }

  void push_back(std::int64_t v) {
    EMBER_CHECK(rank_ < kMaxRank, "ember: rank would exceed the maximum rank ", kMaxRank);
    d_[static_cast<std::size_t>(rank_++)] = v;
  }
  void insert(int pos, std::int64_t v) {
    EMBER_CHECK(rank_ < kMaxRank, "ember: rank would exceed the maximum rank ", kMaxRank);
    for (int i = rank_; i > pos; --i)
      d_[static_cast<std::size_t>(i)] = d_[static_cast<std::size_t>(i - 1)];
    d_[static_cast<std::size_t>(pos)] = v;
    ++rank_;
  }
  void erase(int pos) {
    for (int i = pos; i + 1 < rank_; ++i)
      d_[static_cast<std::size_t>(i)] = d_[static_cast<std::size_t>(i + 1)];
    --rank_;
  }

  /// Product of the extents (1 for rank 0).
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= d_[static_cast<std::size_t>(i)];
    return n;
  }

  std::vector<std::int64_t> vec() const { return {begin(), end()}; }

  friend bool operator==(const Dims& a, const Dims& b) {
    return a.rank_ == b.rank_ && std::equal(a.begin(), a.end(), b.begin());
  }

  std::string str() const {
    std::string s = "[";
    for (int i = 0; i < rank_; ++i) {
      if (i) s += ", ";
      s += std::to_string(d_[static_cast<std::size_t>(i)]);
    }
    return s + "]";
  }
  friend std::ostream& operator<<(std::ostream& os, const Dims& d) { return os << d.str(); }

 private:
  std::array<std::int64_t, kMaxRank> d_{};
  int rank_ = 0;
};

using Shape = Dims;
using Strides = Dims;

/// Row-major strides of a dense tensor of `shape`, in elements. Throws ember::Error when they
/// do not fit in 64 bits (extents from a corrupt file, say: even an empty tensor's strides are
/// the products of its other extents).
inline Strides contiguous_strides(const Shape& shape) {
  Strides s = Strides::filled(shape.rank(), 1);
  std::int64_t acc = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    s[i] = acc;
    EMBER_CHECK(!__builtin_mul_overflow(acc, std::max<std::int64_t>(shape[i], 1), &acc),
                "ember: the shape ", shape.str(), " has more elements than 64 bits can index");
  }
  return s;
}

/// Strides of a rank-4 logical NCHW tensor stored as NHWC (PyTorch's channels_last).
inline Strides channels_last_strides(const Shape& shape) {
  EMBER_CHECK(shape.rank() == 4, "ember: channels_last needs a rank-4 tensor, got shape ",
              shape.str());
  const std::int64_t C = std::max<std::int64_t>(shape[1], 1);
  const std::int64_t H = std::max<std::int64_t>(shape[2], 1);
  const std::int64_t W = std::max<std::int64_t>(shape[3], 1);
  return Strides{H * W * C, 1, W * C, C};
}

/// NumPy broadcasting of two shapes; throws naming `op` and both shapes when they clash.
inline Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  const int r = std::max(a.rank(), b.rank());
  Shape out = Shape::filled(r, 1);
  for (int i = 0; i < r; ++i) {
    const int ia = a.rank() - r + i;
    const int ib = b.rank() - r + i;
    const std::int64_t da = ia >= 0 ? a[ia] : 1;
    const std::int64_t db = ib >= 0 ? b[ib] : 1;
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      fail("ember: cannot broadcast shapes ", a.str(), " and ", b.str(), " in ", op, ": dimension ",
           i, " has sizes ", da, " and ", db);
    }
  }
  return out;
}

/// True when `from` broadcasts to exactly `to`.
inline bool broadcastable_to(const Shape& from, const Shape& to) {
  if (from.rank() > to.rank()) return false;
  for (int i = 0; i < from.rank(); ++i) {
    const std::int64_t f = from[i];
    const std::int64_t t = to[to.rank() - from.rank() + i];
    if (f != t && f != 1) return false;
  }
  return true;
}

/// Strides that read a tensor of (shape, strides) as if broadcast to `to` (0 on broadcast dims).
inline Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& to) {
  Strides out = Strides::filled(to.rank(), 0);
  for (int i = 0; i < shape.rank(); ++i) {
    const int j = to.rank() - shape.rank() + i;
    out[j] = (shape[i] == 1 && to[j] != 1) ? 0 : strides[i];
  }
  return out;
}

/// Maps a possibly negative axis into [0, rank); throws naming `what` when out of range.
inline int normalize_axis(std::int64_t axis, int rank, std::string_view what) {
  const std::int64_t r = rank;
  const std::int64_t lo = rank == 0 ? -1 : -r;
  const std::int64_t hi = rank == 0 ? 0 : r - 1;
  EMBER_CHECK(axis >= lo && axis <= hi, "ember: ", what, ": axis ", axis,
              " is out of range for a tensor of rank ", rank, " (valid: ", lo, " to ", hi, ")");
  return static_cast<int>(axis < 0 ? axis + std::max<std::int64_t>(r, 1) : axis);
}

/// The axes of `shape` along which `from` (broadcastable to it) was broadcast: the leading axes
/// it lacks and the axes where it has extent 1 and `shape` does not.
inline Dims broadcast_axes(const Shape& from, const Shape& shape) {
  Dims axes;
  const int lead = shape.rank() - from.rank();
  for (int d = 0; d < shape.rank(); ++d) {
    if (d < lead || (from[d - lead] == 1 && shape[d] != 1)) axes.push_back(d);
  }
  return axes;
}

}  // namespace ember
