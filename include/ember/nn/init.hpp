// Parameter initialisers, seeded through Philox: a process-wide stream (seed, offset) that every
// initialiser advances by the number of values it draws, so a model built after
// nn::manual_seed(s) gets the same weights on every run and on either device.
//
//   uniform(shape, lo, hi), normal(shape, mean, std), zeros, ones
//   trunc_normal(shape, mean, std, a, b): normal(mean, std) restricted to [a, b] (BERT's)
//   kaiming_uniform / kaiming_normal (He et al.; gain sqrt(2 / (1 + a^2)), fan_in)
//   xavier_uniform / xavier_normal (Glorot; fan_in + fan_out)
// PyTorch's Linear and Conv2d default: kaiming_uniform with a = sqrt(5), i.e. U(+-1/sqrt(fan_in)).
// Each also exists in place on a parameter, with PyTorch's name: normal_(p, mean, std),
// zeros_(p), constant_(p, v), xavier_uniform_(p)...
#pragma once

#include <cmath>
#include <cstdint>
#include <mutex>
#include <utility>

#include "../autograd/var.hpp"
#include "../core/compiled_once.hpp"
#include "../core/config.hpp"
#include "../exec/generate.hpp"
#include "../expr/functors.hpp"
#include "../expr/generator.hpp"
#include "../expr/math.hpp"
#include "../expr/operators.hpp"
#include "../tensor/tensor.hpp"

namespace ember::nn {

namespace detail {
struct InitStream {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  std::mutex mutex;
};
inline InitStream& init_stream() {
  static InitStream s;
  return s;
}
/// The (seed, offset) for the next `n` values, and the stream advanced past them.
inline std::pair<std::uint64_t, std::uint64_t> draw(std::int64_t n) {
  InitStream& s = init_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto at = std::pair{s.seed, s.offset};
  // A draw of n values uses fewer than n + 1 Philox blocks (4 uniforms, or 2 normals, each).
  s.offset += static_cast<std::uint64_t>(n) + 1;
  return at;
}
}  // namespace detail

/// Restarts the initialisers' stream at `seed`.
inline void manual_seed(std::uint64_t seed) {
  auto& s = detail::init_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.seed = seed;
  s.offset = 0;
}

/// The initialisers' stream position, for a training checkpoint: set_rng_state(rng_state())
/// makes the next draws (initialisers, nn::Dropout masks) those of the saved run.
struct RngState {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
};
inline RngState rng_state() {
  auto& s = detail::init_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  return {s.seed, s.offset};
}
inline void set_rng_state(RngState state) {
  auto& s = detail::init_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.seed = state.seed;
  s.offset = state.offset;
}
/// Reserves `n` values of the stream (for a dropout mask of n elements, say): the (seed, offset)
/// to draw them with.
inline std::pair<std::uint64_t, std::uint64_t> reserve_random(std::int64_t n) {
  return detail::draw(n);
}

namespace detail {
/// num(r) / den(r), both of degree 7, coefficients from the highest power down (Horner).
EMBER_HD inline double rational7(const double (&num)[8], const double (&den)[8], double r) {
  double n = num[0], d = den[0];
  for (int i = 1; i < 8; ++i) {
    n = n * r + num[i];
    d = d * r + den[i];
  }
  return n / d;
}

/// The standard normal quantile Phi^-1(p) for p in (0, 1): Wichura's algorithm AS 241 (PPND16,
/// Applied Statistics 37(3), 1988), relative error about 1e-16. -inf at 0, +inf at 1.
EMBER_HD inline double normal_quantile(double p) {
  // Central region |p - 0.5| <= 0.425, in r = 0.180625 - q^2.
  constexpr double a[8] = {2.5090809287301226727e+3, 3.3430575583588128105e+4,
                           6.7265770927008700853e+4, 4.5921953931549871457e+4,
                           1.3731693765509461125e+4, 1.9715909503065514427e+3,
                           1.3314166789178437745e+2, 3.3871328727963666080e+0};
  constexpr double b[8] = {5.2264952788528545610e+3, 2.8729085735721942674e+4,
                           3.9307895800092710610e+4, 2.1213794301586595867e+4,
                           5.3941960214247511077e+3, 6.8718700749205790830e+2,
                           4.2313330701600911252e+1, 1.0};
  // Tails, in r = sqrt(-log(tail)): r <= 5 (c, d), beyond (e, f).
  constexpr double c[8] = {7.74545014278341407640e-4, 2.27238449892691845833e-2,
                           2.41780725177450611770e-1, 1.27045825245236838258e+0,
                           3.64784832476320460504e+0, 5.76949722146069140550e+0,
                           4.63033784615654529590e+0, 1.42343711074968357734e+0};
  constexpr double d[8] = {1.05075007164441684324e-9, 5.47593808499534494600e-4,
                           1.51986665636164571966e-2, 1.48103976427480074590e-1,
                           6.89767334985100004550e-1, 1.67638483018380384940e+0,
                           2.05319162663775882187e+0, 1.0};
  constexpr double e[8] = {2.01033439929228813265e-7, 2.71155556874348757815e-5,
                           1.24266094738807843860e-3, 2.65321895265761230930e-2,
                           2.96560571828504891230e-1, 1.78482653991729133580e+0,
                           5.46378491116411436990e+0, 6.65790464350110377720e+0};
  constexpr double f[8] = {2.04426310338993978564e-15, 1.42151175831644588870e-7,
                           1.84631831751005468180e-5,  7.86869131145613259100e-4,
                           1.48753612908506148525e-2,  1.36929880922735805310e-1,
                           5.99832206555887937690e-1,  1.0};
  const double q = p - 0.5;
  if (math::fabs(q) <= 0.425) return q * rational7(a, b, 0.180625 - q * q);
  const double tail = q < 0 ? p : 1.0 - p;
  if (tail <= 0) return q < 0 ? -math::infinity<double>() : math::infinity<double>();
  const double r = math::sqrt(-math::log(tail));
  const double z = r <= 5.0 ? rational7(c, d, r - 1.6) : rational7(e, f, r - 5.0);
  return q < 0 ? -z : z;
}

/// The standard normal distribution function Phi(x).
inline double normal_cdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752440); }

/// trunc_normal's element: a Philox uniform u (a multiple of 2^-24 in [0, 1)) moved to the
/// middle of its 2^-24 cell, so strictly inside (0, 1), mapped onto (Phi(alpha), Phi(beta)) and
/// through Phi^-1, then scaled, shifted and kept in [a, b] (against the last bit). Computed in
/// double on either device.
struct TruncNormalFn {
  static constexpr fn::Kind kind = fn::Kind::floating;
  static constexpr const char* name = "trunc_normal";
  double cdf_lo = 0, cdf_span = 1, mean = 0, stddev = 1, a = -2, b = 2;
  template <class X>
  EMBER_HD X operator()(X u) const {
    const double p = cdf_lo + cdf_span * (static_cast<double>(u) + 0x1p-25);
    const double x = mean + stddev * normal_quantile(p);
    return static_cast<X>(x < a ? a : (x > b ? b : x));
  }
};

}  // namespace detail
}  // namespace ember::nn

namespace ember::nn::detail::inline EMBER_UNIT_KIND {
// In place, as PyTorch's nn.init.*_ functions: the parameter's values (same shape, device and
// type) are replaced by the initialiser's draw, written into its storage, so every handle to it
// (the module's member, an optimizer's list) sees them; each returns the parameter. Nothing is
// recorded for autograd.
template <FloatingElement T, class Draw>
Var<T>& fill_in_place(Var<T>& p, const char* name, const Draw& draw) {
  EMBER_CHECK(p.defined(), "ember: init::", name, ": the parameter is undefined");
  Tensor<T> v = p.value();
  v.copy_(draw(v.shape(), v.device()));
  return p;
}
}  // namespace ember::nn::detail::inline EMBER_UNIT_KIND

namespace ember::nn::init::inline EMBER_UNIT_KIND {

/// Every element 0 (biases, PyTorch's nn.init.zeros_); draws nothing from the stream.
template <Storable T>
Tensor<T> zeros(const Shape& shape, Device device = Device::cpu()) {
  return ::ember::zeros<T>(shape, device);
}
/// Every element 1 (normalisation weights, nn.init.ones_); draws nothing from the stream.
template <Storable T>
Tensor<T> ones(const Shape& shape, Device device = Device::cpu()) {
  return ::ember::ones<T>(shape, device);
}

template <FloatingElement T>
Tensor<T> uniform(const Shape& shape, double lo, double hi, Device device = Device::cpu()) {
  const auto [seed, offset] = detail::draw(shape.numel());
  return rand<T>(shape, seed, device, lo, hi, offset);
}
template <FloatingElement T>
Tensor<T> normal(const Shape& shape, double mean, double stddev, Device device = Device::cpu()) {
  const auto [seed, offset] = detail::draw(shape.numel());
  return randn<T>(shape, seed, device, mean, stddev, offset);
}

/// Normal(mean, stddev) truncated to [a, b], as PyTorch's nn.init.trunc_normal_: a and b are
/// absolute bounds, not multiples of stddev (TensorFlow's BERT initialiser, std 0.02 cut at two
/// std, is trunc_normal(shape, 0, 0.02, -0.04, 0.04); with std 0.02 PyTorch's defaults -2, 2
/// cut nothing). Inverse-CDF sampling of one Philox uniform per element, in one pass with no
/// rejection loop: the same values on either device.
template <FloatingElement T>
Tensor<T> trunc_normal(const Shape& shape, double mean = 0.0, double stddev = 1.0, double a = -2.0,
                       double b = 2.0, Device device = Device::cpu()) {
  EMBER_CHECK(stddev > 0 && a < b, "ember: init::trunc_normal: needs std > 0 and a < b, got std ",
              stddev, ", a ", a, ", b ", b);
  const double lo = detail::normal_cdf((a - mean) / stddev);
  const double hi = detail::normal_cdf((b - mean) / stddev);
  EMBER_CHECK(hi > lo, "ember: init::trunc_normal: [", a, ", ", b,
              "] holds no probability of normal(", mean, ", ", stddev, ") in double precision");
  const auto [seed, offset] = detail::draw(shape.numel());
  const expr::Generated<double, expr::UniformGen> u(shape, device, {seed, offset, 0.0f, 1.0f});
  return Tensor<T>(
      cast<T>(expr::make_map(detail::TruncNormalFn{lo, hi - lo, mean, stddev, a, b}, u)));
}

/// fan_in and fan_out of a weight: [out, in] or [out, in, kh, kw] (PyTorch's convention).
inline std::pair<double, double> fans(const Shape& shape) {
  EMBER_CHECK(shape.rank() >= 2,
              "ember: init: fan_in and fan_out need a weight of rank 2 or "
              "more, got ",
              shape.str());
  double receptive = 1;
  for (int d = 2; d < shape.rank(); ++d) receptive *= static_cast<double>(shape[d]);
  return {static_cast<double>(shape[1]) * receptive, static_cast<double>(shape[0]) * receptive};
}

template <FloatingElement T>
Tensor<T> kaiming_uniform(const Shape& shape, double a = 0.0, Device device = Device::cpu()) {
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = gain * std::sqrt(3.0 / fans(shape).first);
  return uniform<T>(shape, -bound, bound, device);
}
template <FloatingElement T>
Tensor<T> kaiming_normal(const Shape& shape, double a = 0.0, Device device = Device::cpu()) {
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  return normal<T>(shape, 0.0, gain / std::sqrt(fans(shape).first), device);
}
template <FloatingElement T>
Tensor<T> xavier_uniform(const Shape& shape, double gain = 1.0, Device device = Device::cpu()) {
  const auto [in, out] = fans(shape);
  const double bound = gain * std::sqrt(6.0 / (in + out));
  return uniform<T>(shape, -bound, bound, device);
}
template <FloatingElement T>
Tensor<T> xavier_normal(const Shape& shape, double gain = 1.0, Device device = Device::cpu()) {
  const auto [in, out] = fans(shape);
  return normal<T>(shape, 0.0, gain * std::sqrt(2.0 / (in + out)), device);
}

template <FloatingElement T>
Var<T>& zeros_(Var<T>& p) {
  return detail::fill_in_place(p, "zeros_",
                               [](const Shape& s, Device d) { return init::zeros<T>(s, d); });
}
template <FloatingElement T>
Var<T>& ones_(Var<T>& p) {
  return detail::fill_in_place(p, "ones_",
                               [](const Shape& s, Device d) { return init::ones<T>(s, d); });
}
template <FloatingElement T>
Var<T>& constant_(Var<T>& p, double value) {
  return detail::fill_in_place(
      p, "constant_", [value](const Shape& s, Device d) { return ::ember::full<T>(s, value, d); });
}
template <FloatingElement T>
Var<T>& uniform_(Var<T>& p, double lo = 0.0, double hi = 1.0) {
  return detail::fill_in_place(
      p, "uniform_", [=](const Shape& s, Device d) { return init::uniform<T>(s, lo, hi, d); });
}
template <FloatingElement T>
Var<T>& normal_(Var<T>& p, double mean = 0.0, double stddev = 1.0) {
  return detail::fill_in_place(
      p, "normal_", [=](const Shape& s, Device d) { return init::normal<T>(s, mean, stddev, d); });
}
template <FloatingElement T>
Var<T>& trunc_normal_(Var<T>& p, double mean = 0.0, double stddev = 1.0, double a = -2.0,
                      double b = 2.0) {
  return detail::fill_in_place(p, "trunc_normal_", [=](const Shape& s, Device d) {
    return init::trunc_normal<T>(s, mean, stddev, a, b, d);
  });
}
template <FloatingElement T>
Var<T>& kaiming_uniform_(Var<T>& p, double a = 0.0) {
  return detail::fill_in_place(p, "kaiming_uniform_", [=](const Shape& s, Device d) {
    return init::kaiming_uniform<T>(s, a, d);
  });
}
template <FloatingElement T>
Var<T>& kaiming_normal_(Var<T>& p, double a = 0.0) {
  return detail::fill_in_place(p, "kaiming_normal_", [=](const Shape& s, Device d) {
    return init::kaiming_normal<T>(s, a, d);
  });
}
template <FloatingElement T>
Var<T>& xavier_uniform_(Var<T>& p, double gain = 1.0) {
  return detail::fill_in_place(p, "xavier_uniform_", [=](const Shape& s, Device d) {
    return init::xavier_uniform<T>(s, gain, d);
  });
}
template <FloatingElement T>
Var<T>& xavier_normal_(Var<T>& p, double gain = 1.0) {
  return detail::fill_in_place(p, "xavier_normal_", [=](const Shape& s, Device d) {
    return init::xavier_normal<T>(s, gain, d);
  });
}

}  // namespace ember::nn::init::inline EMBER_UNIT_KIND

/// Compiled once in ember::kernels (core/compiled_once.hpp): the initialisers that draw.
#define EMBER_INIT_INSTANCES(EXPLICIT, T)                                                   \
  namespace ember::nn::init {                                                               \
  EXPLICIT Tensor<T> uniform<T>(const Shape&, double, double, Device);                      \
  EXPLICIT Tensor<T> normal<T>(const Shape&, double, double, Device);                       \
  EXPLICIT Tensor<T> trunc_normal<T>(const Shape&, double, double, double, double, Device); \
  EXPLICIT Tensor<T> kaiming_uniform<T>(const Shape&, double, Device);                      \
  EXPLICIT Tensor<T> kaiming_normal<T>(const Shape&, double, Device);                       \
  }
EMBER_EXTERN_INSTANCES(EMBER_INIT_INSTANCES)
