// Test support: an independent float64 model of tensor views, broadcasting and dtype rounding,
// used to check ember's results against references computed in plain C++ on doubles.
//
// A `RefView` mirrors an ember view (offset, shape, strides) over a host array of doubles that
// holds exactly the values the ember tensor stores (inputs are rounded to the tensor's dtype
// first, then read back), so a reference computed from it never counts input rounding as error.
// Views (transpose, slice with step, expand) are re-implemented here, not taken from ember.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ember/ember.hpp>

namespace ref {

using Idx = std::vector<std::int64_t>;

inline std::int64_t numel(const Idx& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
inline Idx row_major_strides(const Idx& s) {
  Idx st(s.size(), 1);
  std::int64_t acc = 1;
  for (std::size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<std::int64_t>(s[i], 1);
  }
  return st;
}
inline ember::Shape to_shape(const Idx& s) { return ember::Shape(s); }
inline Idx from_shape(const ember::Shape& s) { return Idx(s.begin(), s.end()); }
inline std::string str(const Idx& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

/// NumPy broadcasting of two shapes; false when they clash.
inline bool broadcast(const Idx& a, const Idx& b, Idx& out) {
  const std::size_t r = std::max(a.size(), b.size());
  out.assign(r, 1);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const std::int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return false;
    }
  }
  return true;
}

/// Calls f(index) for every index of `shape` in row-major order.
template <class F>
void for_each_index(const Idx& shape, F&& f) {
  const std::int64_t n = numel(shape);
  Idx ix(shape.size(), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    f(static_cast<const Idx&>(ix));
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++ix[d] < shape[d]) break;
      ix[d] = 0;
    }
  }
}

/// A strided view of host doubles, mirroring an ember view.
struct RefView {
  std::shared_ptr<std::vector<double>> data;
  std::int64_t offset = 0;
  Idx shape, strides;

  static RefView dense(std::vector<double> values, const Idx& shape) {
    RefView v;
    v.data = std::make_shared<std::vector<double>>(std::move(values));
    v.shape = shape;
    v.strides = row_major_strides(shape);
    return v;
  }
  std::int64_t numel() const { return ref::numel(shape); }
  int rank() const { return static_cast<int>(shape.size()); }
  double at(const Idx& ix) const {
    std::int64_t o = offset;
    for (std::size_t d = 0; d < shape.size(); ++d) o += ix[d] * strides[d];
    return (*data)[static_cast<std::size_t>(o)];
  }
  /// The element that an index of the (higher or equal rank) broadcast shape `out` reads.
  double at_broadcast(const Idx& out_ix) const {
    std::int64_t o = offset;
    const std::size_t lead = out_ix.size() - shape.size();
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] != 1) o += out_ix[lead + d] * strides[d];
    }
    return (*data)[static_cast<std::size_t>(o)];
  }
  RefView transpose(int a, int b) const {
    RefView r = *this;
    std::swap(r.shape[a], r.shape[b]);
    std::swap(r.strides[a], r.strides[b]);
    return r;
  }
  RefView slice(int d, std::int64_t start, std::int64_t stop, std::int64_t step) const {
    RefView r = *this;
    r.offset += start * strides[d];
    r.shape[d] = stop > start ? (stop - start + step - 1) / step : 0;
    r.strides[d] *= step;
    return r;
  }
  RefView expand(const Idx& to) const {
    RefView r = *this;
    const std::size_t lead = to.size() - shape.size();
    r.shape = to;
    r.strides.assign(to.size(), 0);
    for (std::size_t d = 0; d < shape.size(); ++d) {
      r.strides[lead + d] = shape[d] == 1 && to[lead + d] != 1 ? 0 : strides[d];
    }
    return r;
  }
  std::vector<double> values() const {
    std::vector<double> out;
    out.reserve(static_cast<std::size_t>(numel()));
    for_each_index(shape, [&](const Idx& ix) { out.push_back(at(ix)); });
    return out;
  }
};

// ---- dtypes ----

template <class T>
T to_t(double v) {
  if constexpr (std::is_same_v<T, ember::bf16> || std::is_same_v<T, ember::half>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}
template <class T>
double to_d(T v) {
  if constexpr (std::is_same_v<T, ember::bf16> || std::is_same_v<T, ember::half>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

/// The precision figures a tolerance is built from (see tolerance()).
struct Prec {
  double eps_acc;    // machine epsilon of the compute type acc_t<T> (ulp of 1)
  double eps_store;  // epsilon of the storage type when it is narrower than acc_t<T>, else 0
  double tiny;       // absolute floor: subnormal spacing of the compute and storage types
  const char* name;
  double overflow =
      std::numeric_limits<double>::infinity();  // smallest |x| that rounds to inf in T
};

template <class T>
Prec prec_of() {
  constexpr double f_eps = 0x1p-23, d_eps = 0x1p-52;
  constexpr double f_den = 0x1p-149, d_den = 0x1p-1074;
  if constexpr (std::is_same_v<T, float>) {
    return {f_eps, 0.0, 4 * f_den, "float32", 0x1.FFFFFFp127};
  } else if constexpr (std::is_same_v<T, double>) {
    return {d_eps, 0.0, 4 * d_den, "float64"};
  } else if constexpr (std::is_same_v<T, ember::bf16>) {
    return {f_eps, 0x1p-7, 4 * f_den + 0x1p-133, "bfloat16", 0x1.FFp127};
  } else {
    static_assert(std::is_same_v<T, ember::half>);
    return {f_eps, 0x1p-10, 4 * f_den + 0x1p-24, "float16", 65520.0};
  }
}

/// Allowed |got - ref| for a result that ember computes in acc_t<T> with at most `c` units of
/// eps(acc) of error relative to `scale` (the magnitude the computation's rounding errors are
/// proportional to: |ref| for a single correctly rounded or few-ulp operation, the size of the
/// largest intermediate for formulas with cancellation), then rounds once to T:
///   rounding to T adds at most half an ulp of T, and ulp_T(x) <= eps(T) |x|; we allow one
///   eps(T)|ref| (factor 2 of margin, which also covers a compute error that moves the value
///   across a rounding boundary of T); `tiny` covers results in the subnormal range.
inline double tolerance(const Prec& p, double c, double scale, double ref) {
  return c * p.eps_acc * scale + p.eps_store * std::fabs(ref) + p.tiny;
}

/// Compares got against want elementwise with an explicit absolute tolerance per element.
/// NaN must match NaN, infinities must match exactly, finite values within tol[i] (or be an
/// infinity of their sign when within tol[i] of `overflow`, where T rounds to infinity); with
/// signed_zero the sign of a zero result must match too. Returns "" when all match, else a
/// description of the first mismatches.
inline std::string compare_abs(std::span<const double> got, std::span<const double> want,
                               std::span<const double> tol, const char* dtype_name, double overflow,
                               bool signed_zero = false,
                               const std::function<std::string(std::size_t)>& describe = {}) {
  if (got.size() != want.size()) {
    return "size mismatch: got " + std::to_string(got.size()) + " values, want " +
           std::to_string(want.size());
  }
  std::ostringstream os;
  os.precision(17);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = want[i];
    bool ok;
    if (std::isnan(r)) {
      ok = std::isnan(g);
    } else if (std::isinf(r)) {
      ok = g == r;
    } else {
      ok = !std::isnan(g) && std::fabs(g - r) <= tol[i];
      // A value within tolerance of T's overflow threshold may round to infinity.
      if (!ok && std::isinf(g) && std::signbit(g) == std::signbit(r) &&
          std::fabs(r) + tol[i] >= overflow)
        ok = true;
      if (ok && signed_zero && r == 0 && g == 0) ok = std::signbit(g) == std::signbit(r);
    }
    if (!ok) {
      if (bad < 6) {
        os << "  [" << i << "] got " << g << " want " << r << " (|diff| " << std::fabs(g - r)
           << ", tol " << tol[i] << ")";
        if (describe) os << " " << describe(i);
        os << "\n";
      }
      ++bad;
    }
  }
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(got.size()) + " values differ (" +
         dtype_name + "):\n" + os.str();
}

/// compare_abs with tol[i] = tolerance(p, c, scale[i], want[i]) (scale empty: |want[i]|).
inline std::string compare(std::span<const double> got, std::span<const double> want,
                           std::span<const double> scale, const Prec& p, double c,
                           bool signed_zero = false,
                           const std::function<std::string(std::size_t)>& describe = {}) {
  std::vector<double> tol(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    tol[i] = tolerance(p, c, scale.empty() ? std::fabs(want[i]) : scale[i], want[i]);
  }
  return compare_abs(got, want, tol, p.name, p.overflow, signed_zero, describe);
}

// ---- building ember tensors together with their reference mirror ----

/// How an input tensor is laid out: dense, or a view that makes the executor walk it strided.
enum class ViewKind { contiguous, transposed, stepped, expanded, stepped_transposed, count };

inline const char* view_name(ViewKind k) {
  switch (k) {
    case ViewKind::contiguous:
      return "contiguous";
    case ViewKind::transposed:
      return "transposed";
    case ViewKind::stepped:
      return "sliced with step 2";
    case ViewKind::expanded:
      return "expanded";
    case ViewKind::stepped_transposed:
      return "transposed, then sliced with step 2";
    default:
      return "?";
  }
}

template <class T>
struct Pair {
  ember::Tensor<T> t;
  RefView v;
};

/// A dense tensor of `shape` holding gen() rounded to T, and its mirror (the stored values).
template <class T>
Pair<T> dense_pair(const Idx& shape, const std::function<double()>& gen) {
  const auto n = static_cast<std::size_t>(numel(shape));
  std::vector<T> stored(n);
  std::vector<double> mirror(n);
  for (std::size_t i = 0; i < n; ++i) {
    stored[i] = to_t<T>(gen());
    mirror[i] = to_d<T>(stored[i]);
  }
  return {ember::from_vector<T>(stored, to_shape(shape)), RefView::dense(std::move(mirror), shape)};
}

/// A tensor of logical shape `shape` laid out as `kind` says (built from a larger or smaller
/// dense base through ember's views, mirrored by RefView's own view arithmetic). Kinds that do
/// not apply to the shape (a transpose of rank < 2, ...) fall back to the nearest that does.
template <class T>
Pair<T> make_pair(const Idx& shape, ViewKind kind, const std::function<double()>& gen) {
  const int r = static_cast<int>(shape.size());
  switch (kind) {
    case ViewKind::transposed:
      if (r >= 2) {
        Idx base = shape;
        std::swap(base[0], base[static_cast<std::size_t>(r - 1)]);
        Pair<T> p = dense_pair<T>(base, gen);
        return {p.t.transpose(0, r - 1), p.v.transpose(0, r - 1)};
      }
      [[fallthrough]];
    case ViewKind::stepped:
      if (r >= 1) {
        // Step along the innermost dimension, so no dimension of the result is unit-stride.
        Idx base = shape;
        const int d = r - 1;
        base[static_cast<std::size_t>(d)] = 2 * shape[static_cast<std::size_t>(d)] + 1;
        Pair<T> p = dense_pair<T>(base, gen);
        const std::int64_t stop = base[static_cast<std::size_t>(d)];
        return {p.t.slice(d, 1, stop, 2), p.v.slice(d, 1, stop, 2)};
      }
      return dense_pair<T>(shape, gen);
    case ViewKind::stepped_transposed:
      if (r >= 2) {
        Idx base = shape;
        std::swap(base[0], base[static_cast<std::size_t>(r - 1)]);
        Pair<T> p = make_pair<T>(base, ViewKind::stepped, gen);
        return {p.t.transpose(0, r - 1), p.v.transpose(0, r - 1)};
      }
      return make_pair<T>(shape, ViewKind::stepped, gen);
    case ViewKind::expanded: {
      // Every other non-unit dimension (starting with the first) comes from a size-1 base
      // dimension; a leading such dimension is dropped from the base altogether.
      Idx base = shape;
      bool any = false, flip = true;
      for (int d = 0; d < r; ++d) {
        if (shape[static_cast<std::size_t>(d)] != 1) {
          if (flip) {
            base[static_cast<std::size_t>(d)] = 1;
            any = true;
          }
          flip = !flip;
        }
      }
      if (!any) return dense_pair<T>(shape, gen);
      if (r >= 2 && base[0] == 1) base.erase(base.begin());
      Pair<T> p = dense_pair<T>(base, gen);
      return {p.t.expand(to_shape(shape)), p.v.expand(shape)};
    }
    default:
      return dense_pair<T>(shape, gen);
  }
}

// ---- value generators ----

/// Where an input's values come from.
struct Domain {
  enum Kind { uniform, log_uniform, signed_log_uniform, discrete } kind = uniform;
  double lo = -4, hi = 4;           // uniform: [lo, hi]; log kinds: magnitudes in [lo, hi]
  std::vector<double> values = {};  // discrete: picked uniformly from these

  static Domain range(double lo, double hi) { return {uniform, lo, hi}; }
  static Domain logr(double lo, double hi) { return {log_uniform, lo, hi}; }
  static Domain slogr(double lo, double hi) { return {signed_log_uniform, lo, hi}; }
  static Domain set(std::vector<double> v) { return {discrete, 0, 0, std::move(v)}; }

  double draw(std::mt19937_64& rng) const {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    switch (kind) {
      case uniform:
        return lo + (hi - lo) * u(rng);
      case log_uniform:
        return std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * u(rng));
      case signed_log_uniform: {
        const double m = std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * u(rng));
        return u(rng) < 0.5 ? -m : m;
      }
      case discrete:
        return values[static_cast<std::size_t>(rng() % values.size())];
    }
    return 0;
  }
};

/// Values of a tensor in row-major order as doubles (bool and integer tensors included).
template <class T>
std::vector<double> values_of(const ember::Tensor<T>& t) {
  std::vector<double> out;
  if constexpr (std::is_same_v<T, bool>) {
    for (bool x : t.to_vector()) out.push_back(x ? 1.0 : 0.0);
  } else {
    for (const T& x : t.to_vector()) out.push_back(to_d<T>(x));
  }
  return out;
}

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// A result read back from ember: its element type, shape and values as doubles.
struct Out {
  ember::DType dtype;
  Idx shape;
  std::vector<double> values;
};
template <class T>
Out read_out(const ember::Tensor<T>& t) {
  return {ember::dtype_of<T>, from_shape(t.shape()), values_of(t)};
}

}  // namespace ref
