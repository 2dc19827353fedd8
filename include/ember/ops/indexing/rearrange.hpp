// Moving elements without arithmetic, with PyTorch's names and rules:
//
//   flip(t, dims)                  the order reversed along each of dims
//   roll(t, shift, dim)            elements shifted by `shift` along dim, wrapping around
//   pad(t, pads, mode, value)      pads = {left, right} per dimension from the last one back,
//                                  as torch.nn.functional.pad; modes constant (value), reflect
//                                  (mirror without the edge), replicate (the edge repeated),
//                                  circular (wrapping)
//   repeat(t, reps)                t tiled reps[k] times along dimension k (torch.Tensor.repeat)
//   tril(t, k) / triu(t, k)        the last two dimensions' lower / upper triangle from
//                                  diagonal k, zeros elsewhere
//   cumsum(t, dim)                 running sums along dim, in the compute type
//
// flip, roll and pad are one pass each (ops::Remap: every output element reads the source
// element its coordinates map to, a rule per dimension); repeat is an expanded view copied
// once; tril and triu are where() against the coordinates; cumsum is one pass with a thread per
// line. All return new dense tensors and take strided views.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/shape.hpp"
#include "../../exec/for_each.hpp"
#include "../../exec/generate.hpp"
#include "../../expr/operators.hpp"
#include "../../tensor/factories.hpp"
#include "../../tensor/tensor.hpp"
#include "indexing.hpp"

namespace ember {

/// How pad fills the border (torch.nn.functional.pad's modes).
enum class PadMode { constant, reflect, replicate, circular };
}  // namespace ember

namespace ember::ops::inline EMBER_UNIT_KIND {

/// Where an output coordinate along one dimension reads from.
enum class Edge : std::uint8_t { same, flip, roll, constant, reflect, replicate, circular };

inline const char* pad_mode_name(PadMode m) {
  switch (m) {
    case PadMode::constant:
      return "constant";
    case PadMode::reflect:
      return "reflect";
    case PadMode::replicate:
      return "replicate";
    case PadMode::circular:
      return "circular";
  }
  return "?";
}

inline Edge edge_of(PadMode m) {
  switch (m) {
    case PadMode::constant:
      return Edge::constant;
    case PadMode::reflect:
      return Edge::reflect;
    case PadMode::replicate:
      return Edge::replicate;
    case PadMode::circular:
      return Edge::circular;
  }
  return Edge::constant;
}

/// Source coordinate of output coordinate c for a source extent n and the dimension's shift (the
/// roll, or the left pad); `inside` turns false where a constant pad has no source.
EMBER_HD inline std::int64_t source_coordinate(Edge e, std::int64_t c, std::int64_t n,
                                               std::int64_t shift, bool& inside) {
  switch (e) {
    case Edge::same:
      return c;
    case Edge::flip:
      return n - 1 - c;
    case Edge::roll: {
      const std::int64_t x = c - shift;  // shift in [0, n)
      return x < 0 ? x + n : x;
    }
    case Edge::constant: {
      const std::int64_t x = c - shift;
      inside = inside && x >= 0 && x < n;
      return x;
    }
    case Edge::reflect: {
      std::int64_t x = c - shift;
      if (x < 0) x = -x;
      if (x >= n) x = 2 * (n - 1) - x;
      return x;
    }
    case Edge::replicate: {
      const std::int64_t x = c - shift;
      return x < 0 ? 0 : (x >= n ? n - 1 : x);
    }
    case Edge::circular: {
      const std::int64_t x = (c - shift) % n;
      return x < 0 ? x + n : x;
    }
  }
  return c;
}

/// Output element i of a remap: the source element its coordinates map to, or `fill`.
template <class T>
struct Remap {
  const T* src;
  T* out;        // dense
  Geometry geo;  // the output's extents, the source's strides
  std::int64_t src_size[kMaxRank];
  std::int64_t shift[kMaxRank];
  Edge edge[kMaxRank];
  T fill;

  EMBER_HD void operator()(std::int64_t i) const {
    std::int64_t rem = i, off = 0;
    bool inside = true;
    for (int k = geo.rank - 1; k >= 0; --k) {
      const std::int64_t c = rem % geo.size[k];
      rem /= geo.size[k];
      off += source_coordinate(edge[k], c, src_size[k], shift[k], inside) * geo.stride[k];
    }
    out[i] = inside ? src[off] : fill;
  }
};

/// A remap under construction: every dimension `same` until set.
struct RemapSpec {
  Shape out_shape;
  std::vector<Edge> edge;
  std::vector<std::int64_t> shift;
  explicit RemapSpec(const Shape& s)
      : out_shape(s),
        edge(static_cast<std::size_t>(s.rank()), Edge::same),
        shift(static_cast<std::size_t>(s.rank()), 0) {}
  /// Output dimension d, `extent` long, read through `e` with `shift_by`.
  void set(int d, Edge e, std::int64_t shift_by, std::int64_t extent) {
    edge[static_cast<std::size_t>(d)] = e;
    shift[static_cast<std::size_t>(d)] = shift_by;
    out_shape[d] = extent;
  }
};

template <Storable T>
Tensor<T> remap(const Tensor<T>& t, const RemapSpec& spec, double fill = 0.0) {
  Tensor<T> out = empty<T>(spec.out_shape, t.device());
  Remap<T> f{t.data(), out.data(), geometry(spec.out_shape, t.strides()),     {},
             {},       {},         to_storage<T>(static_cast<acc_t<T>>(fill))};
  for (int k = 0; k < t.rank(); ++k) {
    f.src_size[k] = t.size(k);
    f.shift[k] = spec.shift[static_cast<std::size_t>(k)];
    f.edge[k] = spec.edge[static_cast<std::size_t>(k)];
  }
  exec::for_each_index<decltype(f)>(f, out.numel(), 1, t.device());
  return out;
}

/// Element x (along `dim`) of the adjoint of a one-dimension pad: the sum, in the compute type,
/// of the output elements that read it (the reflected, replicated or wrapped copies too).
template <class T>
struct PadAdjoint {
  const T* g;    // the output's gradient, dense
  T* dx;         // dense, the source's shape
  Geometry geo;  // the source's extents, g's strides
  int dim;
  Edge edge;
  std::int64_t left, m;  // the left pad and the output's extent along dim

  EMBER_HD void operator()(std::int64_t i) const {
    using A = acc_t<T>;
    std::int64_t rem = i, off = 0, x = 0;
    for (int k = geo.rank - 1; k >= 0; --k) {
      const std::int64_t c = rem % geo.size[k];
      rem /= geo.size[k];
      if (k == dim) {
        x = c;
      } else {
        off += c * geo.stride[k];
      }
    }
    const std::int64_t n = geo.size[dim], s = geo.stride[dim];
    A sum = to_acc(g[off + (x + left) * s]);  // the copy in the interior
    if (edge == Edge::reflect) {
      const std::int64_t before = left - x, after = left + 2 * (n - 1) - x;
      if (x >= 1 && before >= 0) sum += to_acc(g[off + before * s]);
      if (x <= n - 2 && after >= left + n && after < m) sum += to_acc(g[off + after * s]);
    } else if (edge == Edge::replicate) {
      if (x == 0) {
        for (std::int64_t c = 0; c < left; ++c) sum += to_acc(g[off + c * s]);
      }
      if (x == n - 1) {
        for (std::int64_t c = left + n; c < m; ++c) sum += to_acc(g[off + c * s]);
      }
    } else if (edge == Edge::circular) {
      for (std::int64_t c = (x + left) % n; c < m; c += n) {
        if (c != x + left) sum += to_acc(g[off + c * s]);
      }
    }
    dx[i] = to_storage<T>(sum);
  }
};

/// pads' pairs as (dimension, left, right), checked against t for `mode`.
struct PadDim {
  int dim;
  std::int64_t left, right;
};
template <Storable T>
std::vector<PadDim> pad_dims(const Tensor<T>& t, const std::vector<std::int64_t>& pads,
                             PadMode mode) {
  EMBER_CHECK(t.defined(), "ember: pad: an undefined tensor");
  EMBER_CHECK(pads.size() % 2 == 0 && pads.size() / 2 <= static_cast<std::size_t>(t.rank()),
              "ember: pad: ", pads.size(), " pad sizes for a tensor of rank ", t.rank(),
              " (pairs, at most one per dimension)");
  std::vector<PadDim> out;
  for (std::size_t p = 0; p < pads.size() / 2; ++p) {
    const int d = t.rank() - 1 - static_cast<int>(p);
    const std::int64_t l = pads[2 * p], r = pads[2 * p + 1], n = t.size(d);
    EMBER_CHECK(l >= 0 && r >= 0, "ember: pad: negative pad sizes (", l, ", ", r, ")");
    if (mode == PadMode::reflect) {
      EMBER_CHECK(l < n && r < n, "ember: pad: reflect pads (", l, ", ", r,
                  ") must be smaller than the extent ", n, " of dimension ", d);
    } else if (mode != PadMode::constant) {
      EMBER_CHECK(n > 0, "ember: pad: ", pad_mode_name(mode), " padding of an empty dimension ", d);
      EMBER_CHECK(mode != PadMode::circular || (l <= n && r <= n), "ember: pad: circular pads (", l,
                  ", ", r, ") larger than the extent ", n, " of dimension ", d);
    }
    out.push_back({d, l, r});
  }
  return out;
}

/// One dimension's pad of a Tensor.
template <Storable T>
Tensor<T> pad_one(const Tensor<T>& t, const PadDim& p, PadMode mode, double value) {
  RemapSpec spec(t.shape());
  spec.set(p.dim, edge_of(mode), p.left, t.size(p.dim) + p.left + p.right);
  return remap<T>(t, spec, value);
}

/// The adjoint of pad_one for reflect, replicate and circular: the gradient of t from g.
template <Storable T>
Tensor<T> pad_one_backward(const Tensor<T>& g, const Shape& shape, const PadDim& p, PadMode mode) {
  Tensor<T> dx = empty<T>(shape, g.device());
  const PadAdjoint<T> f{g.data(), dx.data(),    geometry(shape, g.strides()), p.dim, edge_of(mode),
                        p.left,   g.size(p.dim)};
  exec::for_each_index<decltype(f)>(f, dx.numel(), 2, g.device());
  return dx;
}

/// roll's shift as a remap shift in [0, n).
inline std::int64_t roll_shift(std::int64_t shift, std::int64_t n) {
  if (n == 0) return 0;
  const std::int64_t s = shift % n;
  return s < 0 ? s + n : s;
}

/// The mask of tril (lower) or triu for a shape's last two dimensions: [m, n] bools.
template <class = void>  // compiled only where called (docs/design.md)
Tensor<bool> triangle_mask(const Shape& shape, Device device, std::int64_t diagonal, bool lower,
                           const char* name) {
  EMBER_CHECK(shape.rank() >= 2, "ember: ", name, ": needs a tensor of rank 2 or more, got ",
              shape.str());
  const std::int64_t m = shape[shape.rank() - 2], n = shape[shape.rank() - 1];
  const Tensor<std::int64_t> rows =
      arange<std::int64_t>(0.0, static_cast<double>(m), 1.0, device).reshape(Shape{m, 1});
  const Tensor<std::int64_t> cols = arange<std::int64_t>(0.0, static_cast<double>(n), 1.0, device);
  if (lower) return Tensor<bool>(cols - rows <= diagonal);
  return Tensor<bool>(cols - rows >= diagonal);
}

/// x (a Tensor or a Var, of `shape` on `device`) with zeros outside the triangle that tril
/// (lower) or triu keeps.
template <class X>
X triangle(const X& x, const Shape& shape, Device device, std::int64_t diagonal, bool lower,
           const char* name) {
  return X(where(triangle_mask(shape, device, diagonal, lower, name), x, std::int64_t{0}));
}

/// repeat's view: t with leading size-1 dimensions to reps' length, each dimension k split into
/// (reps[k], size) by an expanded (stride-0) axis: copying it and merging the pairs tiles t.
struct RepeatShapes {
  Shape paired;    // (1, s0, 1, s1, ...) over t's shape with leading 1s
  Shape expanded;  // (r0, s0, r1, s1, ...)
  Shape out;       // (r0 s0, r1 s1, ...)
};
inline RepeatShapes repeat_shapes(const Shape& shape, const std::vector<std::int64_t>& reps) {
  const int r = static_cast<int>(reps.size());
  EMBER_CHECK(r >= shape.rank(), "ember: repeat: ", r, " repeat counts for a tensor of rank ",
              shape.rank(), " (need at least one per dimension)");
  EMBER_CHECK(2 * r <= kMaxRank, "ember: repeat: ", r, " dimensions (at most ", kMaxRank / 2, ")");
  RepeatShapes s;
  std::vector<std::int64_t> lead(static_cast<std::size_t>(r), 1), paired, expanded, out;
  for (int k = 0; k < shape.rank(); ++k)
    lead[static_cast<std::size_t>(r - shape.rank() + k)] = shape[k];
  for (int k = 0; k < r; ++k) {
    const std::int64_t n = reps[static_cast<std::size_t>(k)], e = lead[static_cast<std::size_t>(k)];
    EMBER_CHECK(n >= 0, "ember: repeat: a negative repeat count ", n);
    paired.insert(paired.end(), {1, e});
    expanded.insert(expanded.end(), {n, e});
    out.push_back(n * e);
  }
  s.paired = Shape(paired);
  s.expanded = Shape(expanded);
  s.out = Shape(out);
  return s;
}

/// Output line l of cumsum: the running sums along one line, in the compute type.
template <class T>
struct CumsumLines {
  const T* src;
  T* out;        // dense
  Geometry geo;  // the extents and the source's strides
  int dim;
  bool reverse;  // sums from the end (cumsum's adjoint)

  EMBER_HD void operator()(std::int64_t line) const {
    std::int64_t rem = line, src_off = 0, out_off = 0, out_stride = 1, dense = 1;
    for (int k = geo.rank - 1; k >= 0; --k) {
      if (k == dim) {
        out_stride = dense;
      } else {
        const std::int64_t c = rem % geo.size[k];
        rem /= geo.size[k];
        src_off += c * geo.stride[k];
        out_off += c * dense;
      }
      dense *= geo.size[k];
    }
    using A = acc_t<T>;
    A s = A(0);
    const std::int64_t n = geo.size[dim];
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t q = reverse ? n - 1 - j : j;
      s += to_acc(src[src_off + q * geo.stride[dim]]);
      out[out_off + q * out_stride] = to_storage<T>(s);
    }
  }
};

template <Storable T>
Tensor<T> cumsum_along(const Tensor<T>& t, int d, bool reverse) {
  Tensor<T> out = empty<T>(t.shape(), t.device());
  const std::int64_t n = t.size(d);
  if (out.numel() == 0) return out;
  const CumsumLines<T> f{t.data(), out.data(), geometry(t.shape(), t.strides()), d, reverse};
  exec::for_each_index<decltype(f)>(f, out.numel() / n, n, t.device());
  return out;
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// t with the order of its elements reversed along each dimension in `dims`.
template <Storable T>
Tensor<T> flip(const Tensor<T>& t, const std::vector<std::int64_t>& dims) {
  EMBER_CHECK(t.defined(), "ember: flip: an undefined tensor");
  ops::RemapSpec spec(t.shape());
  for (const std::int64_t dim : dims) {
    const int d = normalize_axis(dim, t.rank(), "flip");
    EMBER_CHECK(spec.edge[static_cast<std::size_t>(d)] == ops::Edge::same,
                "ember: flip: dimension ", d, " is listed twice");
    spec.set(d, ops::Edge::flip, 0, t.size(d));
  }
  return ops::remap<T>(t, spec);
}

/// t shifted by `shift` along `dim`, the elements pushed off one end coming back at the other.
template <Storable T>
Tensor<T> roll(const Tensor<T>& t, std::int64_t shift, std::int64_t dim) {
  EMBER_CHECK(t.defined(), "ember: roll: an undefined tensor");
  const int d = normalize_axis(dim, t.rank(), "roll");
  ops::RemapSpec spec(t.shape());
  spec.set(d, ops::Edge::roll, ops::roll_shift(shift, t.size(d)), t.size(d));
  return ops::remap<T>(t, spec);
}

/// t padded by pads = {left, right} per dimension, from the last dimension back.
template <Storable T>
Tensor<T> pad(const Tensor<T>& t, const std::vector<std::int64_t>& pads,
              PadMode mode = PadMode::constant, double value = 0.0) {
  const std::vector<ops::PadDim> dims = ops::pad_dims(t, pads, mode);
  if (mode == PadMode::constant) {  // one pass for every dimension
    ops::RemapSpec spec(t.shape());
    for (const ops::PadDim& p : dims) {
      spec.set(p.dim, ops::Edge::constant, p.left, t.size(p.dim) + p.left + p.right);
    }
    return ops::remap<T>(t, spec, value);
  }
  Tensor<T> out = t;
  for (const ops::PadDim& p : dims) out = ops::pad_one<T>(out, p, mode, value);
  return dims.empty() ? t.clone() : out;
}

/// t tiled reps[k] times along dimension k (leading counts add dimensions), torch's repeat.
template <Storable T>
Tensor<T> repeat(const Tensor<T>& t, const std::vector<std::int64_t>& reps) {
  EMBER_CHECK(t.defined(), "ember: repeat: an undefined tensor");
  const ops::RepeatShapes s = ops::repeat_shapes(t.shape(), reps);
  return t.reshape(s.paired).expand(s.expanded).contiguous().reshape(s.out);
}

/// The lower triangle of the last two dimensions, from diagonal k (0: the main one) down.
template <Storable T>
Tensor<T> tril(const Tensor<T>& t, std::int64_t diagonal = 0) {
  EMBER_CHECK(t.defined(), "ember: tril: an undefined tensor");
  return ops::triangle<Tensor<T>>(t, t.shape(), t.device(), diagonal, true, "tril");
}

/// The upper triangle of the last two dimensions, from diagonal k (0: the main one) up.
template <Storable T>
Tensor<T> triu(const Tensor<T>& t, std::int64_t diagonal = 0) {
  EMBER_CHECK(t.defined(), "ember: triu: an undefined tensor");
  return ops::triangle<Tensor<T>>(t, t.shape(), t.device(), diagonal, false, "triu");
}

/// Running sums along `dim`: out[..., j, ...] = sum of t[..., 0..j, ...], in the compute type
/// (float for bf16 and half) and rounded at each output.
template <Storable T>
Tensor<T> cumsum(const Tensor<T>& t, std::int64_t dim) {
  EMBER_CHECK(t.defined(), "ember: cumsum: an undefined tensor");
  if (t.rank() == 0) return t.clone();
  return ops::cumsum_along<T>(t, normalize_axis(dim, t.rank(), "cumsum"), false);
}
}  // namespace ember::inline EMBER_UNIT_KIND
