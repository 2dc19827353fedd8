// max_pool2d, avg_pool2d and adaptive_avg_pool2d: values and gradients against naive float64
// references written here (PyTorch's window and divisor rules, literally) over odd sizes,
// strides, paddings, dilations, ceil_mode, NCHW / channels-last / strided inputs and the four
// dtypes; ties, NaN and -inf; ONNX's MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool
// reference data; gradcheck; launch counts; errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "support/onnx.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_ops_pooling {

using ember::testing::require_close;

using ember::bf16;
using ember::MemoryFormat;
using ember::Pool2dOptions;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;
using I2 = std::array<std::int64_t, 2>;

Tensor<double> rand_tensor(const Shape& s, std::uint32_t seed) {
  return ember::testing::normal_tensor(s, 0, 1.5, seed);
}

// The values of any tensor as float64, in NCHW (row-major) order.
template <class T>
std::vector<double> values(const Tensor<T>& t) {
  return Tensor<double>(ember::cast<double>(t)).contiguous().to_vector();
}

// ---- the references: dense NCHW float64 vectors ----

struct Dims4 {
  std::int64_t N, C, H, W;
};

std::int64_t ref_out_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                          std::int64_t d, bool ceil_mode) {
  // PyTorch's pooling_output_shape.
  const std::int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  std::int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

struct PoolRef {
  std::vector<double> y;             // [N, C, OH, OW]
  std::vector<std::int64_t> argmax;  // max: the flat NCHW input index of each output
  std::vector<std::vector<std::pair<std::int64_t, double>>> taps;  // avg: (input, weight)
  std::int64_t OH = 0, OW = 0;
};

PoolRef ref_max_pool(const std::vector<double>& x, Dims4 d, const Pool2dOptions& o) {
  const I2 s{o.stride[0] ? o.stride[0] : o.kernel[0], o.stride[1] ? o.stride[1] : o.kernel[1]};
  PoolRef r;
  r.OH = ref_out_size(d.H, o.kernel[0], s[0], o.padding[0], o.dilation[0], o.ceil_mode);
  r.OW = ref_out_size(d.W, o.kernel[1], s[1], o.padding[1], o.dilation[1], o.ceil_mode);
  for (std::int64_t n = 0; n < d.N; ++n)
    for (std::int64_t c = 0; c < d.C; ++c)
      for (std::int64_t oh = 0; oh < r.OH; ++oh)
        for (std::int64_t ow = 0; ow < r.OW; ++ow) {
          double best = -std::numeric_limits<double>::infinity();
          std::int64_t at = -1;
          for (std::int64_t i = 0; i < o.kernel[0]; ++i)
            for (std::int64_t j = 0; j < o.kernel[1]; ++j) {
              const std::int64_t h = oh * s[0] - o.padding[0] + i * o.dilation[0];
              const std::int64_t w = ow * s[1] - o.padding[1] + j * o.dilation[1];
              if (h < 0 || h >= d.H || w < 0 || w >= d.W) continue;
              const std::int64_t k = ((n * d.C + c) * d.H + h) * d.W + w;
              if (at < 0 || x[k] > best || std::isnan(x[k])) {
                best = x[k];
                at = k;
              }
            }
          r.y.push_back(best);
          r.argmax.push_back(at);
        }
  return r;
}

PoolRef ref_avg_pool(const std::vector<double>& x, Dims4 d, const Pool2dOptions& o) {
  const I2 s{o.stride[0] ? o.stride[0] : o.kernel[0], o.stride[1] ? o.stride[1] : o.kernel[1]};
  PoolRef r;
  r.OH = ref_out_size(d.H, o.kernel[0], s[0], o.padding[0], 1, o.ceil_mode);
  r.OW = ref_out_size(d.W, o.kernel[1], s[1], o.padding[1], 1, o.ceil_mode);
  for (std::int64_t n = 0; n < d.N; ++n)
    for (std::int64_t c = 0; c < d.C; ++c)
      for (std::int64_t oh = 0; oh < r.OH; ++oh)
        for (std::int64_t ow = 0; ow < r.OW; ++ow) {
          // PyTorch's avg_pool2d: the divisor is taken before clipping to the input.
          std::int64_t h0 = oh * s[0] - o.padding[0], w0 = ow * s[1] - o.padding[1];
          std::int64_t h1 = std::min(h0 + o.kernel[0], d.H + o.padding[0]);
          std::int64_t w1 = std::min(w0 + o.kernel[1], d.W + o.padding[1]);
          const std::int64_t pool = (h1 - h0) * (w1 - w0);
          h0 = std::max<std::int64_t>(h0, 0);
          w0 = std::max<std::int64_t>(w0, 0);
          h1 = std::min(h1, d.H);
          w1 = std::min(w1, d.W);
          const double div = static_cast<double>(
              o.divisor_override > 0 ? o.divisor_override
                                     : (o.count_include_pad ? pool : (h1 - h0) * (w1 - w0)));
          double sum = 0;
          std::vector<std::pair<std::int64_t, double>> taps;
          for (std::int64_t h = h0; h < h1; ++h)
            for (std::int64_t w = w0; w < w1; ++w) {
              const std::int64_t k = ((n * d.C + c) * d.H + h) * d.W + w;
              sum += x[k];
              taps.push_back({k, 1.0 / div});
            }
          r.y.push_back(sum / div);
          r.taps.push_back(taps);
        }
  return r;
}

PoolRef ref_adaptive_avg_pool(const std::vector<double>& x, Dims4 d, I2 out) {
  PoolRef r;
  r.OH = out[0];
  r.OW = out[1];
  for (std::int64_t n = 0; n < d.N; ++n)
    for (std::int64_t c = 0; c < d.C; ++c)
      for (std::int64_t oh = 0; oh < r.OH; ++oh)
        for (std::int64_t ow = 0; ow < r.OW; ++ow) {
          const auto h0 = static_cast<std::int64_t>(std::floor(double(oh * d.H) / double(r.OH)));
          const auto h1 =
              static_cast<std::int64_t>(std::ceil(double((oh + 1) * d.H) / double(r.OH)));
          const auto w0 = static_cast<std::int64_t>(std::floor(double(ow * d.W) / double(r.OW)));
          const auto w1 =
              static_cast<std::int64_t>(std::ceil(double((ow + 1) * d.W) / double(r.OW)));
          const double div = static_cast<double>((h1 - h0) * (w1 - w0));
          double sum = 0;
          std::vector<std::pair<std::int64_t, double>> taps;
          for (std::int64_t h = h0; h < h1; ++h)
            for (std::int64_t w = w0; w < w1; ++w) {
              const std::int64_t k = ((n * d.C + c) * d.H + h) * d.W + w;
              sum += x[k];
              taps.push_back({k, 1.0 / div});
            }
          r.y.push_back(sum / div);
          r.taps.push_back(taps);
        }
  return r;
}

// The input gradient of a pooling given the output gradient g (NCHW), by scattering.
std::vector<double> ref_backward(const PoolRef& r, const std::vector<double>& g,
                                 std::int64_t in_numel) {
  std::vector<double> gx(static_cast<std::size_t>(in_numel), 0.0);
  for (std::size_t o = 0; o < g.size(); ++o) {
    if (!r.argmax.empty()) {
      if (r.argmax[o] >= 0) gx[static_cast<std::size_t>(r.argmax[o])] += g[o];
    } else {
      for (const auto& [k, wt] : r.taps[o]) gx[static_cast<std::size_t>(k)] += g[o] * wt;
    }
  }
  return gx;
}

enum class Kind { max, avg, adaptive };

struct Case {
  Dims4 d;
  Pool2dOptions o;
  I2 adaptive_out{1, 1};
};

// Every layout of x: NCHW, channels-last, and a strided view (every other column of a wider
// tensor, with H and W swapped in memory).
template <class T>
std::vector<std::pair<std::string, Tensor<T>>> layouts(const Tensor<double>& x) {
  const Tensor<T> xt = ember::cast<T>(x);
  const auto s = x.shape();
  Tensor<double> wide = rand_tensor(Shape{s[0], s[1], s[3] * 2, s[2]}, 99);
  Tensor<T> strided = ember::cast<T>(wide);
  strided = strided.slice(2, 0, s[3] * 2, 2).transpose(2, 3);
  strided.copy_(xt);
  return {{"nchw", xt},
          {"channels-last", xt.contiguous(MemoryFormat::channels_last)},
          {"strided", strided}};
}

template <class T>
void check_case(const Case& cs, Kind kind) {
  const Dims4 d = cs.d;
  const Tensor<double> x64 = rand_tensor(Shape{d.N, d.C, d.H, d.W}, 7);
  const auto xr = values(Tensor<T>(ember::cast<T>(x64)));  // the input as the dtype holds it
  const PoolRef r = kind == Kind::max   ? ref_max_pool(xr, d, cs.o)
                    : kind == Kind::avg ? ref_avg_pool(xr, d, cs.o)
                                        : ref_adaptive_avg_pool(xr, d, cs.adaptive_out);
  const Shape out_shape{d.N, d.C, r.OH, r.OW};
  const Tensor<T> g = ember::cast<T>(rand_tensor(out_shape, 8));
  const auto gx_ref = ref_backward(r, values(g), d.N * d.C * d.H * d.W);
  for (const auto& [name, x] : layouts<T>(x64)) {
    INFO(name);
    REQUIRE(values(x) == xr);
    auto run = [&](const auto& v) {
      if (kind == Kind::max) return ember::max_pool2d(v, cs.o);
      if (kind == Kind::avg) return ember::avg_pool2d(v, cs.o);
      return ember::adaptive_avg_pool2d(v, cs.adaptive_out);
    };
    const std::uint64_t before = ember::launch_count();
    const Tensor<T> y = run(x);
    CHECK(ember::launch_count() - before == 1);
    REQUIRE(y.shape() == out_shape);
    // Channels-last in, channels-last out (read in place, written in NHWC order).
    const bool cl = name == "channels-last";
    CHECK(y.is_contiguous(cl ? MemoryFormat::channels_last : MemoryFormat::contiguous));
    if (kind == Kind::max) {
      CHECK(values(y) == r.y);  // max is exact in any dtype
    } else {
      require_close(values(y), r.y, ember::testing::dtype_tolerance<T>());
    }
    auto xv = ember::param(x);
    const Var<T> yv = run(xv);
    const std::uint64_t b2 = ember::launch_count();
    yv.backward(g);
    CHECK(ember::launch_count() - b2 == 1);
    REQUIRE(xv.grad().shape() == x.shape());
    // The gradient keeps the input's layout (no copy back for the layer before).
    if (name != "strided") {
      CHECK(xv.grad().is_contiguous(cl ? MemoryFormat::channels_last : MemoryFormat::contiguous));
    }
    require_close(values(xv.grad()), gx_ref, ember::testing::dtype_tolerance<T>());
    // The Tensor-level backward writes the input's gradient in either memory order.
    namespace ops = ember::ops;
    const ops::Pool2dGeometry geo =
        kind == Kind::max   ? ops::pool2d_geometry(x, cs.o, "max_pool2d")
        : kind == Kind::avg ? ops::avg_pool2d_geometry(x, cs.o)
                            : ops::adaptive_pool2d_geometry(x, cs.adaptive_out, "adaptive");
    for (const MemoryFormat f : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
      const Tensor<T> gx =
          kind == Kind::max
              ? ops::max_pool2d_backward(g, ops::max_pool2d_forward(x, geo, true).second, geo, f)
              : ops::avg_pool2d_backward(g, geo, kind == Kind::avg ? cs.o.count_include_pad : true,
                                         f);
      CHECK(gx.is_contiguous(f));
      require_close(values(gx), gx_ref, ember::testing::dtype_tolerance<T>());
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  // kernel, stride, padding, dilation, ceil_mode, count_include_pad
  v.push_back({{2, 3, 7, 9}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true}});
  v.push_back({{1, 2, 8, 5}, {{2, 3}, {1, 2}, {0, 1}, {1, 1}, true, true}});
  v.push_back({{1, 2, 8, 5}, {{2, 3}, {1, 2}, {0, 1}, {1, 1}, true, false}});
  v.push_back({{2, 3, 9, 7}, {{3, 3}, {0, 0}, {1, 1}, {1, 1}, true, false}});
  // ceil_mode: the last row window ends past the padding (the divisor stops there), the last
  // column window would start in the padding (dropped).
  v.push_back({{1, 2, 9, 8}, {{3, 3}, {3, 3}, {1, 1}, {1, 1}, true, true}});
  v.push_back({{3, 4, 5, 5}, {{5, 5}, {1, 1}, {2, 2}, {1, 1}, false, true}});
  v.push_back({{1, 3, 5, 5}, {{2, 2}, {2, 2}, {1, 1}, {1, 1}, true, true}});  // ceil drops one
  v.push_back({{2, 5, 6, 11}, {{1, 1}, {2, 3}, {0, 0}, {1, 1}, false, true}});
  v.push_back({{1, 2, 3, 4}, {{3, 4}, {1, 1}, {0, 0}, {1, 1}, false, true}});     // one window
  v.push_back({{4, 16, 33, 31}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true}});  // threads
  // More channels than the CPU's channels-last rows keep in flight (64): a full block and a tail.
  v.push_back({{2, 70, 7, 6}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true}});
  // divisor_override: every window divided by 5, padded and clipped ones included.
  v.push_back({{1, 2, 8, 5}, {{2, 3}, {1, 2}, {0, 1}, {1, 1}, true, false, 5}});
  return v;
}
std::vector<Case> dilated_cases() {
  std::vector<Case> v;
  v.push_back({{2, 1, 11, 10}, {{3, 2}, {3, 2}, {1, 0}, {2, 1}, true, true}});
  v.push_back({{2, 3, 9, 7}, {{3, 3}, {2, 3}, {1, 1}, {2, 2}, false, true}});
  v.push_back({{1, 2, 10, 9}, {{2, 2}, {1, 1}, {1, 0}, {3, 2}, true, true}});
  return v;
}

template <class T>
void check_all() {
  for (const Case& c : cases()) {
    INFO("N C H W " << c.d.N << " " << c.d.C << " " << c.d.H << " " << c.d.W << ", kernel "
                    << c.o.kernel[0] << "x" << c.o.kernel[1] << ", stride " << c.o.stride[0] << "x"
                    << c.o.stride[1] << ", padding " << c.o.padding[0] << "x" << c.o.padding[1]
                    << ", ceil " << c.o.ceil_mode << ", include_pad " << c.o.count_include_pad
                    << ", divisor_override " << c.o.divisor_override);
    check_case<T>(c, Kind::max);
    check_case<T>(c, Kind::avg);
  }
  for (const Case& c : dilated_cases()) {
    INFO("dilation " << c.o.dilation[0] << "x" << c.o.dilation[1]);
    check_case<T>(c, Kind::max);
  }
  for (const auto& [d, out] : std::vector<std::pair<Dims4, I2>>{{{2, 3, 7, 5}, {1, 1}},
                                                                {{2, 3, 7, 5}, {3, 2}},
                                                                {{1, 2, 5, 9}, {4, 4}},
                                                                {{1, 2, 4, 6}, {8, 7}},
                                                                {{2, 1, 6, 6}, {3, 3}}}) {
    INFO("adaptive to " << out[0] << "x" << out[1] << " from " << d.H << "x" << d.W);
    Case c{d, {}, out};
    check_case<T>(c, Kind::adaptive);
  }
}

Tensor<double> as_tensor(const ember::testing::onnx::TensorData& d) {
  return ember::testing::onnx::to_tensor<double>(d);
}

TEST_CASE("pooling against the float64 reference: float", "[ops][pool]") { check_all<float>(); }
TEST_CASE("pooling against the float64 reference: double", "[ops][pool]") { check_all<double>(); }
TEST_CASE("pooling against the float64 reference: bf16", "[ops][pool]") { check_all<bf16>(); }
TEST_CASE("pooling against the float64 reference: half", "[ops][pool]") {
  check_all<ember::half>();
}

TEST_CASE("max_pool2d: ties, NaN and -inf follow PyTorch", "[ops][pool]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const Pool2dOptions o{{2, 2}};
  // In both layouts: channels-last takes the CPU's row loops, NCHW the element loop.
  for (const MemoryFormat f : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
    INFO((f == MemoryFormat::channels_last ? "channels-last" : "NCHW"));
    auto input = [f](std::vector<double> v) {
      return ember::param(
          ember::from_vector<double>(std::move(v), Shape{1, 2, 2, 2}).contiguous(f));
    };
    // Ties: the first maximum (row-major in the window) takes the gradient.
    auto x = input({1, 3, 3, 3, 2, 2, 2, 2});
    Var<double> y = ember::max_pool2d(x, o);
    CHECK(y.value().to_vector() == std::vector<double>{3, 2});
    ember::sum(y).backward();
    CHECK(x.grad().to_vector() == std::vector<double>{0, 1, 0, 0, 1, 0, 0, 0});
    // NaN wins (the last NaN, as PyTorch's `val > max || isnan(val)`); all -inf: the first tap.
    auto z = input({1, nan, 5, nan, -inf, -inf, -inf, -inf});
    Var<double> yz = ember::max_pool2d(z, o);
    const auto v = yz.value().to_vector();
    CHECK(std::isnan(v[0]));
    CHECK(v[1] == -inf);
    ember::sum(yz).backward();
    CHECK(z.grad().to_vector() == std::vector<double>{0, 0, 0, 1, 1, 0, 0, 0});
  }
  // Padding never wins: an all-negative input padded with (virtual) zeros.
  const Tensor<double> neg = ember::from_vector<double>({-4, -3, -2, -1}, Shape{1, 1, 2, 2});
  CHECK(ember::max_pool2d(neg, {{3, 3}, {1, 1}, {1, 1}}).to_vector() ==
        std::vector<double>{-1, -1, -1, -1});
}

TEST_CASE("pooling: ONNX's reference data", "[ops][pool][onnx]") {
  namespace onnx = ember::testing::onnx;
  if (!onnx::available("test_maxpool_2d_default")) {
    WARN("libonnx-testdata is not installed: ONNX reference data not checked");
    return;
  }
  // ONNX's attributes as options: strides default to 1, pads [top, left, bottom, right] must
  // be symmetric (asymmetric and auto_pad cases are left out, as are pads beyond half the
  // kernel: test_*pool_2d_pads, which PyTorch rejects too).
  auto options = [](const onnx::Attributes& a) {
    const auto k = a.get_ints("kernel_shape", {});
    const auto s = a.get_ints("strides", {1, 1});
    const auto p = a.get_ints("pads", {0, 0, 0, 0});
    const auto d = a.get_ints("dilations", {1, 1});
    REQUIRE(k.size() == 2);
    REQUIRE(p.size() == 4);
    REQUIRE((p[0] == p[2] && p[1] == p[3]));
    REQUIRE(a.get_string("auto_pad", "NOTSET") == "NOTSET");
    Pool2dOptions o;
    o.kernel = {k[0], k[1]};
    o.stride = {s[0], s[1]};
    o.padding = {p[0], p[1]};
    o.dilation = {d[0], d[1]};
    o.ceil_mode = a.get("ceil_mode", 0) != 0;
    o.count_include_pad = a.get("count_include_pad", 0) != 0;  // ONNX's default: excluded
    return o;
  };
  int checked = 0;
  for (const char* name :
       {"test_maxpool_2d_default", "test_maxpool_2d_ceil", "test_maxpool_2d_dilations",
        "test_maxpool_2d_precomputed_pads", "test_maxpool_2d_precomputed_strides",
        "test_maxpool_2d_strides", "test_maxpool_with_argmax_2d_precomputed_pads",
        "test_maxpool_with_argmax_2d_precomputed_strides"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    const Tensor<double> y = ember::max_pool2d(as_tensor(t.inputs[0]), options(t.attributes));
    REQUIRE(y.shape() == as_tensor(t.outputs[0]).shape());
    require_close(y.to_vector(), t.outputs[0].values, 0);
    ++checked;
  }
  for (const char* name :
       {"test_averagepool_2d_default", "test_averagepool_2d_ceil",
        "test_averagepool_2d_precomputed_pads",
        "test_averagepool_2d_precomputed_pads_count_include_pad",
        "test_averagepool_2d_precomputed_strides", "test_averagepool_2d_strides"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    const Tensor<double> y = ember::avg_pool2d(as_tensor(t.inputs[0]), options(t.attributes));
    REQUIRE(y.shape() == as_tensor(t.outputs[0]).shape());
    require_close(y.to_vector(), t.outputs[0].values, 1e-6);  // float32 reference arithmetic
    ++checked;
  }
  for (const char* name : {"test_globalaveragepool", "test_globalaveragepool_precomputed",
                           "test_globalmaxpool", "test_globalmaxpool_precomputed"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    const Tensor<double> x = as_tensor(t.inputs[0]);
    const Tensor<double> y = std::string(name).find("max") != std::string::npos
                                 ? ember::max_pool2d(x, {{x.size(2), x.size(3)}})
                                 : ember::adaptive_avg_pool2d(x, {1, 1});
    REQUIRE(y.shape() == as_tensor(t.outputs[0]).shape());
    require_close(y.to_vector(), t.outputs[0].values, 1e-6);
    ++checked;
  }
  CHECK(checked == 18);
}

TEST_CASE("gradcheck: max_pool2d, avg_pool2d, adaptive_avg_pool2d", "[ops][pool][gradcheck]") {
  // Normal samples: no ties within the finite-difference step.
  const Tensor<double> x = rand_tensor(Shape{2, 3, 7, 6}, 31);
  const std::vector<Pool2dOptions> opts{{{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true},
                                        {{2, 3}, {1, 2}, {1, 1}, {1, 1}, false, false},
                                        {{3, 2}, {2, 1}, {1, 0}, {1, 1}, true, false}};
  for (const auto& o : opts) {
    auto r1 = ember::gradcheck([&](const Vars& v) { return ember::max_pool2d(v[0], o); }, {x});
    INFO("max: " << r1);
    REQUIRE(r1);
    auto r2 = ember::gradcheck([&](const Vars& v) { return ember::avg_pool2d(v[0], o); }, {x});
    INFO("avg: " << r2);
    REQUIRE(r2);
  }
  auto r3 = ember::gradcheck(
      [](const Vars& v) {
        return ember::max_pool2d(v[0], {{2, 2}, {1, 2}, {1, 0}, {2, 3}, true, true});
      },
      {x});
  INFO("dilated max: " << r3);
  REQUIRE(r3);
  for (const I2 out : {I2{1, 1}, I2{3, 4}, I2{5, 5}, I2{9, 2}}) {
    auto r4 =
        ember::gradcheck([&](const Vars& v) { return ember::adaptive_avg_pool2d(v[0], out); }, {x});
    INFO("adaptive " << out[0] << "x" << out[1] << ": " << r4);
    REQUIRE(r4);
  }
  // A channels-last Var in the middle of a graph.
  auto r5 = ember::gradcheck(
      [](const Vars& v) {
        const Var<double> cl = v[0].contiguous(MemoryFormat::channels_last);
        return Var<double>(ember::tanh(ember::avg_pool2d(cl, {{2, 2}, {1, 1}})) *
                           ember::max_pool2d(cl, {{2, 2}, {1, 1}}));
      },
      {x});
  INFO("channels-last: " << r5);
  REQUIRE(r5);
}

TEST_CASE("pooling: empty batches, no grad, errors", "[ops][pool]") {
  const Tensor<float> e = ember::zeros<float>(Shape{0, 3, 5, 5});
  const std::uint64_t before = ember::launch_count();
  CHECK(ember::max_pool2d(e, {{2, 2}}).shape() == Shape{0, 3, 2, 2});
  CHECK(ember::avg_pool2d(e, {{2, 2}}).shape() == Shape{0, 3, 2, 2});
  CHECK(ember::launch_count() == before);
  {
    ember::no_grad guard;
    const Var<float> y =
        ember::max_pool2d(ember::param(ember::ones<float>(Shape{1, 1, 4, 4})), {{2, 2}});
    CHECK_FALSE(y.requires_grad());
  }
  const Tensor<float> x = ember::ones<float>(Shape{2, 3, 5, 4});
  auto throws_with = [](auto f, const std::string& what) {
    try {
      f();
      FAIL("no error for " << what);
    } catch (const ember::Error& err) {
      INFO(err.what());
      CHECK(std::string(err.what()).find(what) != std::string::npos);
    }
  };
  throws_with([&] { ember::max_pool2d(x.reshape({6, 5, 4}), {{2, 2}}); }, "max_pool2d");
  throws_with([&] { ember::max_pool2d(x.reshape({6, 5, 4}), {{2, 2}}); }, "[6, 5, 4]");
  throws_with([&] { ember::avg_pool2d(x, {{6, 2}}); }, "larger than the padded input");
  throws_with([&] { ember::max_pool2d(x, {{3, 3}, {1, 1}, {2, 1}}); }, "at most half the kernel");
  throws_with([&] { ember::max_pool2d(x, {{3, 3}, {-1, 1}}); }, "must be positive");
  throws_with([&] { ember::max_pool2d(x, {{0, 3}}); }, "must be positive");
  throws_with([&] { ember::max_pool2d(x, {{2, 2}, {1, 1}, {0, 0}, {5, 1}}); }, "larger than");
  throws_with([&] { ember::avg_pool2d(x, {{2, 2}, {1, 1}, {0, 0}, {2, 1}}); }, "dilation");
  throws_with(
      [&] {
        ember::avg_pool2d(x, {{2, 2}, {1, 1}, {0, 0}, {1, 1}, false, true, -2});
      },
      "divisor_override");
  throws_with([&] { ember::adaptive_avg_pool2d(x, {-1, 2}); }, "adaptive_avg_pool2d");
  throws_with(
      [&] {
        ember::adaptive_avg_pool2d(ember::ones<float>(Shape{1, 1, 0, 3}), {1, 1});
      },
      "adaptive_avg_pool2d");
}

}  // namespace test_ops_pooling
}  // namespace
