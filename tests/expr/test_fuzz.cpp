// A randomized fuzzer for the expression engine, checked against a naive float64 interpreter
// written here (its own broadcasting and index arithmetic, no ember code).
//
// Part A, node by node: thousands of random expression trees (unary and binary ops from a table,
// depth up to 5, random shapes of rank 0 to 4 with size-0 and size-1 dimensions and
// broadcasting, a random dtype per node among float32/float64/bfloat16/float16 with casts where
// they differ, inputs that are views, outputs written into strided views, operands expanded
// explicitly). Every node is one ember assignment into a tensor, checked twice: locally (the
// op applied to the child tensors' actual values, one operation's tolerance) and end to end
// (the whole tree evaluated in float64 from the leaves, with a running error bound).
//
// Part B, fused: a handful of fixed tree templates of depth 4 to 6, compiled once each for a few
// leaf dtype combinations, whose leaves, shapes, views and operations are random at run time:
// the operations are picked by a runtime switch over ember's functor library (ember::fn) inside
// the fixed tree, so the whole tree is one fused ember assignment.
//
// Tolerances come from running error analysis, never from what passed: each reference value
// carries a bound e on |ember - exact|; an operation maps (v, e) to (f(v), L_f e + c eps scale),
// with L_f the Lipschitz bound of f over [v - e, v + e] and c eps scale the operation's own
// error in its compute type (the same budgets as test_functions.cpp), plus a rounding to the
// storage type where ember stores. Elements where the reference is not trustworthy are masked
// (a discontinuity of floor/round/sign/where within e, a pole within e, a non-finite value, a
// value within e of the dtype's overflow threshold) and counted; the test requires most
// elements to be checked.
//
// Reproducible: the seed comes from EMBER_FUZZ_SEED (default fixed) and is printed; every tree
// prints its own seed when it fails. EMBER_FUZZ_SCALE multiplies the number of trees.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "support/ref_eval.hpp"

namespace {
namespace test_expr_fuzz {

using ember::bf16;
using ember::Tensor;
using ref::Idx;
using ref::ViewKind;
using fp16 = ember::half;
using Rng = std::mt19937_64;

using ref::kInf;
using ref::kNaN;
// First-order propagation ignores second-order terms (products of two error bounds and the
// change of an operation's own error between v and the computed input); they are below
// eps^2 relative, and a factor 1.5 on the final bound absorbs them.
constexpr double kSafety = 1.5;

std::uint64_t fuzz_seed() {
  if (const char* s = std::getenv("EMBER_FUZZ_SEED")) return std::strtoull(s, nullptr, 0);
  return 20240611;
}
double fuzz_scale() {
  if (const char* s = std::getenv("EMBER_FUZZ_SCALE")) return std::max(0.01, std::atof(s));
  return 1.0;
}
std::uint64_t mix(std::uint64_t x) {  // splitmix64: independent seeds per tree
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
int pick(Rng& rng, int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }
double uni(Rng& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

// ---- dtypes at run time ----
enum Dt { F32, F64, BF16, F16, NDT };
const char* dt_name(int d) {
  static const char* n[] = {"f32", "f64", "bf16", "f16"};
  return n[d];
}
ref::Prec prec_rt(int d) {
  switch (d) {
    case F32:
      return ref::prec_of<float>();
    case F64:
      return ref::prec_of<double>();
    case BF16:
      return ref::prec_of<bf16>();
    default:
      return ref::prec_of<fp16>();
  }
}
/// Bound on the relative error of rounding to dtype d (an ulp is at most eps |x|; margin 2).
double round_eps(int d) {
  static const double e[] = {0x1p-23, 0x1p-52, 0x1p-7, 0x1p-10};
  return e[d];
}
bool exact_widening(int from, int to) {
  if (from == to || to == F64) return true;
  return to == F32 && (from == BF16 || from == F16);
}
template <class T>
constexpr int dt_of() {
  if constexpr (std::is_same_v<T, float>)
    return F32;
  else if constexpr (std::is_same_v<T, double>)
    return F64;
  else if constexpr (std::is_same_v<T, bf16>)
    return BF16;
  else
    return F16;
}
using AnyT = std::variant<Tensor<float>, Tensor<double>, Tensor<bf16>, Tensor<fp16>>;

// ---- the operation table (reference side) ----
enum UOp {
  NEG,
  ABS,
  SQUARE,
  EXP,
  TANH,
  SIGMOID,
  SIN,
  COS,
  ERF,
  RELU,
  SILU,
  GELU,
  GELU_TANH,
  SOFTPLUS,
  LEAKY,
  EXPM1,
  FLOOR,
  ROUND,
  CLAMP,
  RECIP,
  SIGN,
  EXP2,
  NU
};
enum BOp { ADD, SUB, MUL, MAX, MIN, DIV, WHERE_GT, NB };

const char* u_name(int op) {
  static const char* n[] = {"neg",         "abs",        "square",     "exp",   "tanh",  "sigmoid",
                            "sin",         "cos",        "erf",        "relu",  "silu",  "gelu",
                            "gelu_tanh",   "softplus",   "leaky_relu", "expm1", "floor", "round",
                            "clamp(-1,2)", "reciprocal", "sign",       "exp2"};
  return n[op];
}
const char* b_name(int op) {
  static const char* n[] = {"add", "sub", "mul", "max", "min", "div", "where(a>b,a,b)"};
  return n[op];
}

/// A reference value with its error bound; `bad` marks values the reference cannot vouch for.
struct Prop {
  double v = 0, e = 0;
  bool bad = false;
};

double u_exact(int op, double x) {
  switch (op) {
    case NEG:
      return -x;
    case ABS:
      return std::fabs(x);
    case SQUARE:
      return x * x;
    case EXP:
      return std::exp(x);
    case TANH:
      return std::tanh(x);
    case SIGMOID:
      return 1 / (1 + std::exp(-x));
    case SIN:
      return std::sin(x);
    case COS:
      return std::cos(x);
    case ERF:
      return std::erf(x);
    case RELU:
      return x < 0 ? 0.0 : x;
    case SILU:
      return x / (1 + std::exp(-x));
    case GELU:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case GELU_TANH:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case SOFTPLUS:
      return x > 20 ? x : std::log1p(std::exp(x));
    case LEAKY:
      return x < 0 ? 0.01 * x : x;
    case EXPM1:
      return std::expm1(x);
    case FLOOR:
      return std::floor(x);
    case ROUND:
      return std::nearbyint(x);
    case CLAMP:
      return std::min(std::max(x, -1.0), 2.0);
    case RECIP:
      return 1 / x;
    case SIGN:
      return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
    case EXP2:
      return std::exp2(x);
  }
  return kNaN;
}

/// The absolute error a result in the compute type (epsilon eps) can have from underflow: a
/// result below the smallest normal number is rounded to a multiple of the smallest subnormal
/// (error <= half of it; 2 of them allowed for an operation of c ulps' error).
double underflow(double eps) { return eps < 0x1p-40 ? 2 * 0x1p-1074 : 2 * 0x1p-149; }

/// Adds the underflow floor and masks values the compute type cannot hold: a result within its
/// error bound of the compute type's overflow threshold may be infinite there (and then make
/// NaNs downstream) while the float64 reference stays finite.
Prop finish(Prop r, double eps) {
  const double top =
      eps < 0x1p-40 ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max();
  r.e += underflow(eps);
  if (!std::isfinite(r.v) || !std::isfinite(r.e) || std::fabs(r.v) + r.e >= top) r.bad = true;
  return r;
}

/// Applies unary op to (v, e) in a compute type of epsilon `eps` (no storage rounding).
Prop apply_u(int op, Prop x, double eps) {
  Prop r;
  r.bad = x.bad || !std::isfinite(x.v);
  r.v = u_exact(op, x.v);
  const double a = std::fabs(x.v), d = x.e;
  double lip = 1, c = 4, scale = std::fabs(r.v);
  switch (op) {
    case NEG:
    case ABS:
    case RELU:
    case CLAMP:
      c = 0;
      break;
    case SQUARE:
      lip = 2 * (a + d);
      c = 1;
      break;
    case EXP:
    case EXPM1:
      lip = std::exp(x.v + d);
      break;
    case EXP2:
      lip = M_LN2 * std::exp2(x.v + d);
      break;
    case TANH:
    case SOFTPLUS:
    case SIN:
    case COS:
      break;  // |f'| <= 1, c = 4 (one call)
    case ERF:
      lip = 1.13;
      break;  // 2/sqrt(pi)
    case SIGMOID:
      lip = 0.25;
      c = 8;
      break;
    case SILU:
      lip = 1.1;
      c = 10;
      r.e = underflow(eps) * a;
      break;  // x * (sigmoid's underflow)
    case GELU:
    case GELU_TANH:
      lip = 1.13;
      c = 8;
      scale = a;
      break;  // error relative to |x|
    case LEAKY:
      c = 2;
      break;
    case FLOOR:
    case ROUND:
    case SIGN: {
      // Exact, but discontinuous: at integers (floor), half-integers (round), zero (sign).
      lip = 0;
      c = 0;
      const double jump = op == FLOOR   ? x.v - std::round(x.v)
                          : op == ROUND ? x.v - (std::floor(x.v) + 0.5)
                                        : x.v;
      if (d > 0 && std::fabs(jump) <= d) r.bad = true;
      break;
    }
    case RECIP:
      if (a <= 2 * d || a < 1e-6) r.bad = true;
      lip = 1 / (a - d) / (a - d);
      c = 2;
      break;
  }
  r.e += lip * d + c * eps * scale;
  return finish(r, eps);
}

Prop apply_b(int op, Prop a, Prop b, double eps) {
  Prop r;
  r.bad = a.bad || b.bad || !std::isfinite(a.v) || !std::isfinite(b.v);
  switch (op) {
    case ADD:
      r.v = a.v + b.v;
      r.e = a.e + b.e + eps * std::fabs(r.v);
      break;
    case SUB:
      r.v = a.v - b.v;
      r.e = a.e + b.e + eps * std::fabs(r.v);
      break;
    case MUL:
      r.v = a.v * b.v;
      r.e = std::fabs(b.v) * a.e + std::fabs(a.v) * b.e + a.e * b.e + eps * std::fabs(r.v);
      break;
    case MAX:
      r.v = std::max(a.v, b.v);
      r.e = std::max(a.e, b.e);
      break;
    case MIN:
      r.v = std::min(a.v, b.v);
      r.e = std::max(a.e, b.e);
      break;
    case DIV: {
      r.v = a.v / b.v;
      const double bb = std::fabs(b.v);
      if (bb <= 2 * b.e || bb < 1e-6) r.bad = true;
      // (Written so that no intermediate overflows for huge |b|.)
      r.e = a.e / (bb - b.e) + std::fabs(a.v) * (b.e / bb) / (bb - b.e) + eps * std::fabs(r.v);
      break;
    }
    case WHERE_GT: {
      const bool gt = a.v > b.v;
      r.v = gt ? a.v : b.v;
      // Within the error bounds the comparison may go either way; the two candidates then
      // differ by |a - b| <= e_a + e_b.
      const double gap = std::fabs(a.v - b.v);
      r.e = gap <= a.e + b.e ? std::max(a.e, b.e) + gap : (gt ? a.e : b.e);
      break;
    }
  }
  return finish(r, eps);
}

/// Rounding to storage dtype d; `extra` says whether d is narrower than the compute type.
Prop store(Prop p, int d, bool rounds) {
  const ref::Prec pr = prec_rt(d);
  if (rounds) {
    p.e = p.e * (1 + round_eps(d)) + round_eps(d) * std::fabs(p.v) + pr.tiny;
  } else {
    p.e += pr.tiny;
  }
  if (std::fabs(p.v) + p.e >= pr.overflow) p.bad = true;
  return p;
}

// ---- ember side, Part A: one assignment per node, public spellings ----

template <class T>
void apply_unary(int op, Tensor<T>& out, const Tensor<T>& a) {
  switch (op) {
    case NEG:
      out = -a;
      break;
    case ABS:
      out = ember::abs(a);
      break;
    case SQUARE:
      out = ember::square(a);
      break;
    case EXP:
      out = ember::exp(a);
      break;
    case TANH:
      out = ember::tanh(a);
      break;
    case SIGMOID:
      out = ember::sigmoid(a);
      break;
    case SIN:
      out = ember::sin(a);
      break;
    case COS:
      out = ember::cos(a);
      break;
    case ERF:
      out = ember::erf(a);
      break;
    case RELU:
      out = ember::relu(a);
      break;
    case SILU:
      out = ember::silu(a);
      break;
    case GELU:
      out = ember::gelu(a);
      break;
    case GELU_TANH:
      out = ember::gelu_tanh(a);
      break;
    case SOFTPLUS:
      out = ember::softplus(a);
      break;
    case LEAKY:
      out = ember::leaky_relu(a);
      break;
    case EXPM1:
      out = ember::expm1(a);
      break;
    case FLOOR:
      out = ember::floor(a);
      break;
    case ROUND:
      out = ember::round(a);
      break;
    case CLAMP:
      out = ember::clamp(a, -1.0, 2.0);
      break;
    case RECIP:
      out = ember::reciprocal(a);
      break;
    case SIGN:
      out = ember::sign(a);
      break;
    case EXP2:
      out = ember::exp2(a);
      break;
  }
}
template <class T>
void apply_binary(int op, Tensor<T>& out, const Tensor<T>& a, const Tensor<T>& b) {
  switch (op) {
    case ADD:
      out = a + b;
      break;
    case SUB:
      out = a - b;
      break;
    case MUL:
      out = a * b;
      break;
    case MAX:
      out = ember::max(a, b);
      break;
    case MIN:
      out = ember::min(a, b);
      break;
    case DIV:
      out = a / b;
      break;
    case WHERE_GT:
      out = ember::where(a > b, a, b);
      break;
  }
}

template <class T>
Tensor<T> alloc_out(const Idx& shape, int layout) {
  const int r = static_cast<int>(shape.size());
  if (layout == 1 && r >= 2) {  // transposed storage
    Idx base = shape;
    std::swap(base[0], base[static_cast<std::size_t>(r - 1)]);
    return ember::empty<T>(ref::to_shape(base)).transpose(0, r - 1);
  }
  if (layout == 2 && r >= 1) {  // every other element of a wider tensor
    Idx base = shape;
    base.back() = 2 * shape.back() + 1;
    return ember::empty<T>(ref::to_shape(base)).slice(r - 1, 1, base.back(), 2);
  }
  return ember::empty<T>(ref::to_shape(shape));
}
const char* layout_name(int l) {
  static const char* n[] = {"", " ->transposed", " ->stepped"};
  return n[l];
}

AnyT alloc_any(int dt, const Idx& shape, int layout) {
  switch (dt) {
    case F32:
      return alloc_out<float>(shape, layout);
    case F64:
      return alloc_out<double>(shape, layout);
    case BF16:
      return alloc_out<bf16>(shape, layout);
    default:
      return alloc_out<fp16>(shape, layout);
  }
}
std::vector<double> values_any(const AnyT& t) {
  return std::visit([](const auto& x) { return ref::values_of(x); }, t);
}
Idx shape_any(const AnyT& t) {
  return std::visit([](const auto& x) { return ref::from_shape(x.shape()); }, t);
}
AnyT expand_any(const AnyT& t, const Idx& shape) {
  return std::visit([&](const auto& x) -> AnyT { return x.expand(ref::to_shape(shape)); }, t);
}

/// Flat row-major index into `from` for each index of `to` (from broadcasts to to).
std::vector<std::size_t> broadcast_map(const Idx& from, const Idx& to) {
  const Idx st = ref::row_major_strides(from);
  const std::size_t lead = to.size() - from.size();
  std::vector<std::size_t> m;
  m.reserve(static_cast<std::size_t>(ref::numel(to)));
  ref::for_each_index(to, [&](const Idx& ix) {
    std::int64_t o = 0;
    for (std::size_t d = 0; d < from.size(); ++d) {
      if (from[d] != 1) o += ix[lead + d] * st[d];
    }
    m.push_back(static_cast<std::size_t>(o));
  });
  return m;
}

// ---- random shapes ----

Idx random_shape(Rng& rng, int max_rank = 4) {
  static const std::int64_t sizes[] = {1, 2, 3, 4, 5, 1, 2, 3, 0};
  if (pick(rng, 100) == 0) return {pick(rng, 2) ? 37 : 1, 1100};  // above the parallel threshold
  Idx s(static_cast<std::size_t>(pick(rng, max_rank + 1)));
  for (auto& d : s) d = sizes[pick(rng, pick(rng, 12) == 0 ? 9 : 8)];  // size 0 now and then
  return s;
}
/// A shape that broadcasts to s: some leading dimensions dropped, some dimensions set to 1.
Idx sub_shape(Rng& rng, const Idx& s) {
  const std::size_t drop =
      pick(rng, 3) == 0 ? static_cast<std::size_t>(pick(rng, static_cast<int>(s.size()) + 1)) : 0;
  Idx r(s.begin() + static_cast<std::ptrdiff_t>(drop), s.end());
  for (auto& d : r) {
    if (pick(rng, 3) == 0) d = 1;
  }
  return r;
}
/// Two shapes whose broadcast is exactly s.
std::pair<Idx, Idx> split_shape(Rng& rng, const Idx& s) {
  Idx a = sub_shape(rng, s);
  Idx b = s;
  const std::size_t lead = s.size() - a.size();
  for (std::size_t j = 0; j < s.size(); ++j) {
    const bool covered = s[j] == 1 || (j >= lead && a[j - lead] == s[j]);
    if (covered && pick(rng, 2) == 0) b[j] = 1;
  }
  std::size_t drop = 0;
  while (drop < b.size() && b[drop] == 1 && pick(rng, 2) == 0) ++drop;
  b.erase(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(drop));
  if (pick(rng, 2) == 0) std::swap(a, b);
  return {a, b};
}

// ---- checking ----

struct Stats {
  std::int64_t trees = 0, nodes = 0, checked = 0, masked = 0, failures = 0;
};

/// Compares ember's values with reference props; returns "" or a description.
std::string check_props(const std::vector<double>& got, const std::vector<Prop>& want, Stats& st) {
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  std::string msg;
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const Prop& p = want[i];
    if (p.bad || !std::isfinite(p.v)) {
      ++st.masked;
      continue;
    }
    ++st.checked;
    const double tol = kSafety * p.e;
    if (std::isnan(got[i]) || !(std::fabs(got[i] - p.v) <= tol)) {
      if (bad++ < 4) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "  [%zu] got %.17g want %.17g (|diff| %.3g, bound %.3g)\n",
                      i, got[i], p.v, std::fabs(got[i] - p.v), tol);
        msg += buf;
      }
    }
  }
  return bad ? std::to_string(bad) + " of " + std::to_string(got.size()) +
                   " values out of bounds:\n" + msg
             : "";
}

// ---- Part A: random trees, node by node ----

struct Val {
  AnyT t;
  int dt = F32;
  Idx shape;
  std::vector<double> got;  // ember's values, row-major
  std::vector<Prop> ref;    // end-to-end reference from the leaves
  std::string desc;
};

struct TreeCtx {
  Rng rng;
  Stats* st;
  std::string failure;  // first failure in this tree
};

void node_check(TreeCtx& cx, const Val& v, const std::vector<Prop>& local) {
  ++cx.st->nodes;
  if (!cx.failure.empty()) return;
  if (shape_any(v.t) != v.shape) {
    cx.failure =
        "shape " + ref::str(shape_any(v.t)) + " want " + ref::str(v.shape) + " at " + v.desc;
    return;
  }
  std::string m = check_props(v.got, local, *cx.st);
  if (!m.empty()) {
    cx.failure = "local check (the op on the child tensors' values) failed at " + v.desc + "\n" + m;
    return;
  }
  m = check_props(v.got, v.ref, *cx.st);
  if (!m.empty()) cx.failure = "end-to-end check failed at " + v.desc + "\n" + m;
}

/// Child values as props: ember's own values (exact inputs) for the local check.
std::vector<Prop> exact_props(const std::vector<double>& v) {
  std::vector<Prop> p(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) p[i] = {v[i], 0, false};
  return p;
}

Val make_leaf(TreeCtx& cx, const Idx& shape, int dt) {
  const auto kind = static_cast<ViewKind>(pick(cx.rng, static_cast<int>(ViewKind::count)));
  const double lo = -3, hi = 3;
  auto gen = [&] { return uni(cx.rng, lo, hi); };
  Val v;
  v.dt = dt;
  v.shape = shape;
  switch (dt) {
    case F32: {
      auto p = ref::make_pair<float>(shape, kind, gen);
      v.t = p.t;
      v.got = p.v.values();
      break;
    }
    case F64: {
      auto p = ref::make_pair<double>(shape, kind, gen);
      v.t = p.t;
      v.got = p.v.values();
      break;
    }
    case BF16: {
      auto p = ref::make_pair<bf16>(shape, kind, gen);
      v.t = p.t;
      v.got = p.v.values();
      break;
    }
    default: {
      auto p = ref::make_pair<fp16>(shape, kind, gen);
      v.t = p.t;
      v.got = p.v.values();
      break;
    }
  }
  v.ref = exact_props(v.got);
  v.desc = std::string("leaf<") + dt_name(dt) + ">" + ref::str(shape) +
           (kind == ViewKind::contiguous ? "" : std::string(" ") + ref::view_name(kind));
  // The mirror is ours; ember's view must read the same values.
  const auto seen = values_any(v.t);
  if (seen != v.got)
    cx.failure = "ember's view of a leaf reads other values than the reference: " + v.desc;
  return v;
}

Val cast_to(TreeCtx& cx, Val c, int dt) {
  if (c.dt == dt) return c;
  const int layout = pick(cx.rng, 3);
  Val v;
  v.dt = dt;
  v.shape = c.shape;
  v.t = alloc_any(dt, c.shape, layout);
  std::visit(
      [](auto& out, const auto& x) {
        using T = typename std::remove_cvref_t<decltype(out)>::value_type;
        out = ember::cast<T>(x);
      },
      v.t, c.t);
  v.got = values_any(v.t);
  const bool rounds = !exact_widening(c.dt, dt);
  v.ref.resize(c.ref.size());
  std::vector<Prop> local(c.got.size());
  for (std::size_t i = 0; i < c.ref.size(); ++i) {
    v.ref[i] = store(c.ref[i], dt, rounds);
    local[i] = store(Prop{c.got[i], 0, false}, dt, rounds);
  }
  v.desc = std::string("cast<") + dt_name(dt) + ">(" + c.desc + ")" + layout_name(layout);
  node_check(cx, v, local);
  return v;
}

Val gen_tree(TreeCtx& cx, int depth, const Idx& shape, int dt) {
  if (depth == 0 || pick(cx.rng, 5) == 0) return make_leaf(cx, shape, dt);
  const int layout = pick(cx.rng, 3);
  const double eps = prec_rt(dt).eps_acc;
  const bool rounds = dt == BF16 || dt == F16;  // stored narrower than it was computed
  Val v;
  v.dt = dt;
  v.shape = shape;
  v.t = alloc_any(dt, shape, layout);
  if (pick(cx.rng, 5) < 2) {  // unary
    const int op = pick(cx.rng, NU);
    Val c = cast_to(cx, gen_tree(cx, depth - 1, shape, pick(cx.rng, NDT)), dt);
    std::visit(
        [&](auto& out) {
          using T = typename std::remove_cvref_t<decltype(out)>::value_type;
          apply_unary<T>(op, out, std::get<Tensor<T>>(c.t));
        },
        v.t);
    v.got = values_any(v.t);
    std::vector<Prop> local(c.got.size());
    v.ref.resize(c.ref.size());
    for (std::size_t i = 0; i < c.ref.size(); ++i) {
      v.ref[i] = store(apply_u(op, c.ref[i], eps), dt, rounds);
      local[i] = store(apply_u(op, Prop{c.got[i], 0, false}, eps), dt, rounds);
    }
    v.desc = std::string(u_name(op)) + "<" + dt_name(dt) + ">" + ref::str(shape) +
             layout_name(layout) + "(" + c.desc + ")";
    node_check(cx, v, local);
    return v;
  }
  // binary
  const int op = pick(cx.rng, NB);
  auto [sa, sb] = split_shape(cx.rng, shape);
  Val a = cast_to(cx, gen_tree(cx, depth - 1, sa, pick(cx.rng, NDT)), dt);
  Val b = cast_to(cx, gen_tree(cx, depth - 1, sb, pick(cx.rng, NDT)), dt);
  // Sometimes an operand arrives already expanded to the full shape (stride-0 view).
  AnyT at = a.t, bt = b.t;
  std::string ea, eb;
  if (pick(cx.rng, 4) == 0) {
    at = expand_any(a.t, shape);
    ea = " expanded";
  }
  if (pick(cx.rng, 4) == 0) {
    bt = expand_any(b.t, shape);
    eb = " expanded";
  }
  std::visit(
      [&](auto& out) {
        using T = typename std::remove_cvref_t<decltype(out)>::value_type;
        apply_binary<T>(op, out, std::get<Tensor<T>>(at), std::get<Tensor<T>>(bt));
      },
      v.t);
  v.got = values_any(v.t);
  const auto ma = broadcast_map(a.shape, shape), mb = broadcast_map(b.shape, shape);
  const auto n = static_cast<std::size_t>(ref::numel(shape));
  std::vector<Prop> local(n);
  v.ref.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    v.ref[i] = store(apply_b(op, a.ref[ma[i]], b.ref[mb[i]], eps), dt, rounds);
    local[i] = store(apply_b(op, Prop{a.got[ma[i]], 0, false}, Prop{b.got[mb[i]], 0, false}, eps),
                     dt, rounds);
  }
  v.desc = std::string(b_name(op)) + "<" + dt_name(dt) + ">" + ref::str(shape) +
           layout_name(layout) + "(" + a.desc + ea + ", " + b.desc + eb + ")";
  node_check(cx, v, local);
  return v;
}

// ---- Part B: fixed fused templates with runtime-selected operations ----

/// Unary functor whose operation is chosen at run time among ember's functors.
struct RU {
  static constexpr ember::fn::Kind kind = ember::fn::Kind::floating;
  static constexpr const char* name = "fuzz_unary";
  int op = 0;
  template <class X>
  X operator()(X x) const {
    namespace fn = ember::fn;
    switch (op) {
      case NEG:
        return fn::Neg{}(x);
      case ABS:
        return fn::Abs{}(x);
      case SQUARE:
        return fn::Square{}(x);
      case EXP:
        return fn::Exp{}(x);
      case TANH:
        return fn::Tanh{}(x);
      case SIGMOID:
        return fn::Sigmoid{}(x);
      case SIN:
        return fn::Sin{}(x);
      case COS:
        return fn::Cos{}(x);
      case ERF:
        return fn::Erf{}(x);
      case RELU:
        return fn::Relu{}(x);
      case SILU:
        return fn::Silu{}(x);
      case GELU:
        return fn::Gelu{false}(x);
      case GELU_TANH:
        return fn::Gelu{true}(x);
      case SOFTPLUS:
        return fn::Softplus{}(x);
      case LEAKY:
        return fn::LeakyRelu{}(x);
      case EXPM1:
        return fn::Expm1{}(x);
      case FLOOR:
        return fn::Floor{}(x);
      case ROUND:
        return fn::Round{}(x);
      case CLAMP:
        return fn::Clamp{}(x, X(-1), X(2));
      case RECIP:
        return fn::Reciprocal{}(x);
      case SIGN:
        return fn::Sign{}(x);
      default:
        return fn::Exp2{}(x);
    }
  }
};
/// Binary functor whose operation is chosen at run time among ember's functors.
struct RB {
  static constexpr ember::fn::Kind kind = ember::fn::Kind::floating;
  static constexpr const char* name = "fuzz_binary";
  int op = 0;
  template <class X>
  X operator()(X a, X b) const {
    namespace fn = ember::fn;
    switch (op) {
      case ADD:
        return fn::Add{}(a, b);
      case SUB:
        return fn::Sub{}(a, b);
      case MUL:
        return fn::Mul{}(a, b);
      case MAX:
        return fn::Maximum{}(a, b);
      case MIN:
        return fn::Minimum{}(a, b);
      case DIV:
        return fn::Div{}(a, b);
      default:
        return fn::Where{}(fn::Greater{}(a, b), a, b);
    }
  }
};

/// The tree templates. Letters: U unary, B binary (numbered in pre-order, separately),
/// L<k> leaf k, W where(cond, a, b), G a > b (a condition), C clamp(x, lo, hi), K cast to bf16.
/// Each spec string is parsed by the reference interpreter; the matching C++ expression is
/// written out in build() below with the same numbering.
const char* const kTemplates[] = {
    "U(B(U(B(L0,L1)),U(B(L2,L3))))",
    "B(U(B(U(L0),U(L1))),U(U(B(L2,U(B(L3,L4))))))",
    "U(B(U(B(U(B(L0,L1)),L2)),U(L3)))",
    "U(W(G(L0,L1),B(L2,K(U(L3))),C(U(L4),L1,L2)))",
    "B(B(U(L0),B(L0,U(L1))),U(B(B(L2,L3),U(L4))))",
};
constexpr int kNumTemplates = 5;
constexpr int kLeaves[] = {4, 5, 4, 5, 5};

template <class... D>
struct Combo {};
// Leaf dtype combinations compiled for every template (picked at random at run time): all
// float; mixed 2-byte types (promote to float); a double among them (parts compute in double).
using C0 = Combo<float, float, float, float, float>;
using C1 = Combo<bf16, fp16, bf16, float, fp16>;
using C2 = Combo<double, bf16, float, fp16, double>;
constexpr int kCombos = 3;
int combo_dt(int combo, int leaf) {
  static const int d[kCombos][5] = {
      {F32, F32, F32, F32, F32}, {BF16, F16, BF16, F32, F16}, {F64, BF16, F32, F16, F64}};
  return d[combo][leaf];
}

template <int I, class... D>
using nth_t = std::tuple_element_t<I, std::tuple<D...>>;

template <class... D>
auto build(int tpl, const std::vector<AnyT>& L, const int* uo, const int* bo, auto&& sink) {
  auto leaf = [&]<int I>() { return std::get<Tensor<nth_t<I, D...>>>(L[I]); };
  auto u = [&](int k, const auto& x) { return ember::expr::make_map(RU{uo[k]}, x); };
  auto b = [&](int k, const auto& x, const auto& y) {
    return ember::expr::make_map(RB{bo[k]}, x, y);
  };
  const auto l0 = leaf.template operator()<0>();
  const auto l1 = leaf.template operator()<1>();
  const auto l2 = leaf.template operator()<2>();
  const auto l3 = leaf.template operator()<3>();
  const auto l4 = leaf.template operator()<4>();
  switch (tpl) {
    case 0:  // U0(B0(U1(B1(L0,L1)),U2(B2(L2,L3))))
      return sink(u(0, b(0, u(1, b(1, l0, l1)), u(2, b(2, l2, l3)))));
    case 1:  // B0(U0(B1(U1(L0),U2(L1))),U3(U4(B2(L2,U5(B3(L3,L4))))))
      return sink(b(0, u(0, b(1, u(1, l0), u(2, l1))), u(3, u(4, b(2, l2, u(5, b(3, l3, l4)))))));
    case 2:  // U0(B0(U1(B1(U2(B2(L0,L1)),L2)),U3(L3)))
      return sink(u(0, b(0, u(1, b(1, u(2, b(2, l0, l1)), l2)), u(3, l3))));
    case 3:  // U0(W(G(L0,L1),B0(L2,K(U1(L3))),C(U2(L4),L1,L2)))
      return sink(u(0, ember::where(l0 > l1, b(0, l2, ember::cast<bf16>(u(1, l3))),
                                    ember::clamp(u(2, l4), l1, l2))));
    default:  // B0(B1(U0(L0),B2(L0,U1(L1))),U2(B3(B4(L2,L3),U3(L4))))
      return sink(b(0, b(1, u(0, l0), b(2, l0, u(1, l1))), u(2, b(3, b(4, l2, l3), u(3, l4)))));
  }
}

// The reference interpreter of the template strings.
struct TNode {
  char kind;      // U B L W G C K
  int index = 0;  // op slot (U, B) or leaf number (L)
  std::vector<int> kids;
};
struct Tree {
  std::vector<TNode> nodes;
  int nu = 0, nb = 0;
};
int parse(const char*& s, Tree& t) {
  TNode n;
  n.kind = *s++;
  if (n.kind == 'L') {
    n.index = *s++ - '0';
  } else {
    if (n.kind == 'U') n.index = t.nu++;
    if (n.kind == 'B') n.index = t.nb++;
    ++s;  // (
    for (;;) {
      n.kids.push_back(parse(s, t));
      if (*s++ == ')') break;  // else ','
    }
  }
  t.nodes.push_back(n);
  return static_cast<int>(t.nodes.size()) - 1;
}
Tree parse_template(const char* spec) {
  Tree t;
  const char* s = spec;
  parse(s, t);
  return t;
}

struct Eval {
  Prop p;
  bool dbl;  // computes in double
};
Eval interpret(const Tree& t, int n, const std::vector<double>& leafv,
               const std::vector<int>& leafdt, const int* uo, const int* bo) {
  const TNode& nd = t.nodes[static_cast<std::size_t>(n)];
  auto kid = [&](int k) {
    return interpret(t, nd.kids[static_cast<std::size_t>(k)], leafv, leafdt, uo, bo);
  };
  switch (nd.kind) {
    case 'L':
      return {{leafv[static_cast<std::size_t>(nd.index)], 0, false},
              leafdt[static_cast<std::size_t>(nd.index)] == F64};
    case 'U': {
      const Eval x = kid(0);
      return {apply_u(uo[nd.index], x.p, x.dbl ? 0x1p-52 : 0x1p-23), x.dbl};
    }
    case 'B': {
      const Eval x = kid(0), y = kid(1);
      const bool d = x.dbl || y.dbl;
      return {apply_b(bo[nd.index], x.p, y.p, d ? 0x1p-52 : 0x1p-23), d};
    }
    case 'K': {  // cast to bf16: rounds; the parent computes in float
      const Eval x = kid(0);
      return {store(x.p, BF16, true), false};
    }
    case 'C': {  // clamp(x, lo, hi) = min(max(x, lo), hi): 1-Lipschitz in every argument
      const Eval x = kid(0), lo = kid(1), hi = kid(2);
      Prop r;
      r.v = std::min(std::max(x.p.v, lo.p.v), hi.p.v);
      r.e = std::max({x.p.e, lo.p.e, hi.p.e});
      r.bad = x.p.bad || lo.p.bad || hi.p.bad || !std::isfinite(x.p.v) || !std::isfinite(lo.p.v) ||
              !std::isfinite(hi.p.v);
      return {r, x.dbl || lo.dbl || hi.dbl};
    }
    case 'W': {  // where(a > b, x, y): masked when the comparison could go either way
      const TNode& g = t.nodes[static_cast<std::size_t>(nd.kids[0])];
      const Eval ga = interpret(t, g.kids[0], leafv, leafdt, uo, bo),
                 gb = interpret(t, g.kids[1], leafv, leafdt, uo, bo);
      const Eval x = kid(1), y = kid(2);
      Eval r = ga.p.v > gb.p.v ? x : y;
      r.dbl = x.dbl || y.dbl;
      if (std::fabs(ga.p.v - gb.p.v) <= ga.p.e + gb.p.e || ga.p.bad || gb.p.bad ||
          std::isnan(ga.p.v) || std::isnan(gb.p.v)) {
        r.p.bad = true;
      }
      return r;
    }
  }
  return {{kNaN, 0, true}, false};
}

AnyT make_leaf_any(Rng& rng, int dt, const Idx& shape, ViewKind kind, std::vector<double>& values,
                   Idx& vshape) {
  auto gen = [&] { return uni(rng, -3, 3); };
  auto finish = [&](auto p) -> AnyT {
    values = p.v.values();
    vshape = p.v.shape;
    return p.t;
  };
  switch (dt) {
    case F32:
      return finish(ref::make_pair<float>(shape, kind, gen));
    case F64:
      return finish(ref::make_pair<double>(shape, kind, gen));
    case BF16:
      return finish(ref::make_pair<bf16>(shape, kind, gen));
    default:
      return finish(ref::make_pair<fp16>(shape, kind, gen));
  }
}

struct FusedResult {
  AnyT out;
  int dt;
  std::uint64_t launches;
};

/// Evaluates template `tpl` with leaf dtypes `combo` into a tensor of the expression's own
/// dtype (out_mode 0) or a bf16 tensor (1), dense or a strided view (layout).
template <class... D>
FusedResult run_fused(int tpl, const std::vector<AnyT>& L, const int* uo, const int* bo,
                      int out_mode, int layout) {
  return build<D...>(tpl, L, uo, bo, [&](const auto& e) -> FusedResult {
    using V = typename std::remove_cvref_t<decltype(e)>::value_type;
    const Idx shape = ref::from_shape(e.shape());
    const std::uint64_t l0 = ember::launch_count();
    if (out_mode == 1) {
      Tensor<bf16> y = alloc_out<bf16>(shape, layout);
      y = e;
      return {y, BF16, ember::launch_count() - l0};
    }
    if (layout == 0) {
      Tensor<V> y = e;
      return {y, dt_of<V>(), ember::launch_count() - l0};
    }
    Tensor<V> y = alloc_out<V>(shape, layout);
    y = e;
    return {y, dt_of<V>(), ember::launch_count() - l0};
  });
}

FusedResult run_fused_combo(int combo, int tpl, const std::vector<AnyT>& L, const int* uo,
                            const int* bo, int out_mode, int layout) {
  switch (combo) {
    case 0:
      return run_fused<float, float, float, float, float>(tpl, L, uo, bo, out_mode, layout);
    case 1:
      return run_fused<bf16, fp16, bf16, float, fp16>(tpl, L, uo, bo, out_mode, layout);
    default:
      return run_fused<double, bf16, float, fp16, double>(tpl, L, uo, bo, out_mode, layout);
  }
}

TEST_CASE("fuzz: random expression trees, node by node, against a float64 interpreter",
          "[expr][fuzz]") {
  const std::uint64_t seed = fuzz_seed();
  const auto trees = static_cast<int>(4000 * fuzz_scale());
  std::printf(
      "fuzz (node by node): seed %llu, %d trees (EMBER_FUZZ_SEED / EMBER_FUZZ_SCALE to change)\n",
      static_cast<unsigned long long>(seed), trees);
  Stats st;
  int reported = 0;
  for (int i = 0; i < trees; ++i) {
    const std::uint64_t tree_seed = mix(mix(seed) + static_cast<std::uint64_t>(i));
    TreeCtx cx{Rng(tree_seed), &st, {}};
    const int depth = 1 + pick(cx.rng, 5);
    const Idx shape = random_shape(cx.rng);
    std::string err;
    try {
      (void)gen_tree(cx, depth, shape, pick(cx.rng, NDT));
    } catch (const std::exception& e) {
      err = std::string("threw: ") + e.what();
    }
    if (err.empty()) err = cx.failure;
    ++st.trees;
    if (!err.empty()) {
      ++st.failures;
      if (reported++ < 5) {
        INFO("EMBER_FUZZ_SEED=" << seed << ", tree " << i << " (tree seed " << tree_seed << "):\n"
                                << err);
        CHECK(err == "");
      }
    }
  }
  std::printf(
      "fuzz (node by node): %lld trees, %lld nodes, %lld values checked, %lld masked, %lld failing "
      "trees\n",
      static_cast<long long>(st.trees), static_cast<long long>(st.nodes),
      static_cast<long long>(st.checked), static_cast<long long>(st.masked),
      static_cast<long long>(st.failures));
  CHECK(st.failures == 0);
  // Most values must actually be checked (masking is for the rare ill-conditioned element).
  CHECK(st.masked * 10 < st.checked);
}

TEST_CASE("fuzz: deep fused trees with runtime-chosen ops are one launch and match the interpreter",
          "[expr][fuzz]") {
  const std::uint64_t seed = fuzz_seed() ^ 0xF00Dull;
  const auto runs = static_cast<int>(4000 * fuzz_scale());
  std::printf("fuzz (fused templates): seed %llu, %d trees\n",
              static_cast<unsigned long long>(seed), runs);
  Stats st;
  int reported = 0;
  for (int i = 0; i < runs; ++i) {
    const std::uint64_t tree_seed = mix(mix(seed) + static_cast<std::uint64_t>(i));
    Rng rng(tree_seed);
    const int tpl = pick(rng, kNumTemplates);
    const int combo = pick(rng, kCombos);
    const Tree tree = parse_template(kTemplates[tpl]);
    std::vector<int> uo(static_cast<std::size_t>(tree.nu)), bo(static_cast<std::size_t>(tree.nb));
    for (auto& o : uo) o = pick(rng, NU);
    for (auto& o : bo) o = pick(rng, NB);
    // Leaves: shapes that broadcast to a random shape (sometimes all of it: the dense path).
    const Idx shape = random_shape(rng);
    const bool dense = pick(rng, 5) == 0;
    std::vector<AnyT> leaves;
    std::vector<std::vector<double>> lv;
    std::vector<Idx> ls;
    std::vector<int> ldt;
    std::string desc = std::string("template ") + kTemplates[tpl] + " ops U[";
    for (int o : uo) desc += std::string(u_name(o)) + " ";
    desc += "] B[";
    for (int o : bo) desc += std::string(b_name(o)) + " ";
    desc += "]";
    for (int k = 0; k < 5; ++k) {
      const int dt = combo_dt(combo, k);
      const Idx s = dense ? shape : sub_shape(rng, shape);
      const auto kind = dense ? ViewKind::contiguous
                              : static_cast<ViewKind>(pick(rng, static_cast<int>(ViewKind::count)));
      std::vector<double> values;
      Idx vshape;
      leaves.push_back(make_leaf_any(rng, dt, s, kind, values, vshape));
      lv.push_back(std::move(values));
      ls.push_back(vshape);
      ldt.push_back(dt);
      if (k < kLeaves[tpl])
        desc += std::string(" L") + std::to_string(k) + "<" + dt_name(dt) + ">" + ref::str(s) +
                " " + ref::view_name(kind);
    }
    // The reference: the broadcast shape of the leaves the template uses.
    Idx out_shape;
    for (int k = 0; k < kLeaves[tpl]; ++k) {
      Idx next;
      ref::broadcast(out_shape, ls[static_cast<std::size_t>(k)], next);
      out_shape = next;
    }
    const int out_mode = pick(rng, 2), layout = pick(rng, 3);
    desc += std::string(", output ") + (out_mode == 0 ? "own dtype" : "bf16") + layout_name(layout);
    std::string err;
    try {
      const FusedResult r =
          run_fused_combo(combo, tpl, leaves, uo.data(), bo.data(), out_mode, layout);
      const Idx got_shape = shape_any(r.out);
      if (got_shape != out_shape) {
        err = "shape " + ref::str(got_shape) + ", want " + ref::str(out_shape);
      } else if (r.launches != (ref::numel(out_shape) == 0 ? 0u : 1u)) {
        err = "the fused tree took " + std::to_string(r.launches) + " launches";
      } else {
        std::vector<std::vector<std::size_t>> maps;
        for (int k = 0; k < 5; ++k)
          maps.push_back(
              broadcast_map(ls[static_cast<std::size_t>(k)],
                            k < kLeaves[tpl] ? out_shape : ls[static_cast<std::size_t>(k)]));
        const auto n = static_cast<std::size_t>(ref::numel(out_shape));
        std::vector<Prop> want(n);
        std::vector<double> x(5);
        for (std::size_t j = 0; j < n; ++j) {
          for (int k = 0; k < kLeaves[tpl]; ++k)
            x[static_cast<std::size_t>(k)] =
                lv[static_cast<std::size_t>(k)][maps[static_cast<std::size_t>(k)][j]];
          const Eval ev = interpret(tree, static_cast<int>(tree.nodes.size()) - 1, x, ldt,
                                    uo.data(), bo.data());
          // Stored once: a rounding when the output type is narrower than the compute type.
          const bool rounds = r.dt == BF16 || r.dt == F16 || (ev.dbl && r.dt == F32);
          want[j] = store(ev.p, r.dt, rounds);
        }
        ++st.nodes;
        err = check_props(values_any(r.out), want, st);
      }
    } catch (const std::exception& e) {
      err = std::string("threw: ") + e.what();
    }
    ++st.trees;
    if (!err.empty()) {
      ++st.failures;
      if (reported++ < 5) {
        INFO("EMBER_FUZZ_SEED=" << fuzz_seed() << ", fused run " << i << " (tree seed " << tree_seed
                                << "): " << desc << "\n"
                                << err);
        CHECK(err == "");
      }
    }
  }
  std::printf(
      "fuzz (fused templates): %lld trees, %lld values checked, %lld masked, %lld failing\n",
      static_cast<long long>(st.trees), static_cast<long long>(st.checked),
      static_cast<long long>(st.masked), static_cast<long long>(st.failures));
  CHECK(st.failures == 0);
  CHECK(st.masked * 5 < st.checked);
}

}  // namespace test_expr_fuzz
}  // namespace
