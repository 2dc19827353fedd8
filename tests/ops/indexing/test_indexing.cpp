// index_select, gather, scatter_add, masked_fill, one_hot (ops/indexing/indexing.hpp) and flip,
// roll, pad, repeat, tril/triu, cumsum (ops/indexing/rearrange.hpp): against
// coordinate-by-coordinate references written from PyTorch's definitions, over element types,
// negative dimensions, rank 0, size-0 extents and strided inputs; the errors; the backward rules
// through gradcheck.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

#include "support/coordinates.hpp"
#include "support/onnx.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_ops_indexing {

using Catch::Matchers::Contains;
using ember::bf16;
using ember::half;
using ember::PadMode;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using I64 = Tensor<std::int64_t>;
using Vars = std::vector<Var<double>>;

using ember::testing::coords;
using ember::testing::counting;
using ember::testing::flat_of;

I64 ids(const std::vector<std::int64_t>& v, const Shape& s) { return ember::from_vector(v, s); }

template <class T>
std::vector<double> values(const Tensor<T>& t) {
  std::vector<double> out;
  for (const T& x : t.contiguous().to_vector()) out.push_back(static_cast<double>(x));
  return out;
}

/// out[c] = t[map(c)] for every coordinate c of `out_shape`; map returns false for `fill`.
template <class T, class Map>
std::vector<double> by_coordinates(const Tensor<T>& t, const Shape& out_shape, Map map,
                                   double fill = 0) {
  const std::vector<double> src = values(t);
  std::vector<double> out;
  for (std::int64_t i = 0; i < out_shape.numel(); ++i) {
    std::vector<std::int64_t> c = coords(i, out_shape);
    out.push_back(map(c) ? src[static_cast<std::size_t>(flat_of(c, t.shape()))] : fill);
  }
  return out;
}

TEMPLATE_TEST_CASE("index_select, gather and scatter_add follow PyTorch's definitions",
                   "[ops][indexing]", float, double, bf16, half, std::int64_t) {
  using T = TestType;
  const Tensor<T> base = counting<T>(Shape{4, 5, 3}, 1);
  const Tensor<T> strided = base.permute({2, 0, 1});  // [3, 4, 5], not contiguous
  for (const Tensor<T>& t : {base, strided}) {
    for (const std::int64_t dim : {0, 1, -1}) {
      const int d = ember::normalize_axis(dim, 3, "test");
      const I64 idx = ids({2, 0, 2, 1}, Shape{4});
      Shape s = t.shape();
      s[d] = 4;
      const auto want = by_coordinates(t, s, [&](std::vector<std::int64_t>& c) {
        c[static_cast<std::size_t>(d)] = idx.to_vector()[static_cast<std::size_t>(c[d])];
        return true;
      });
      const Tensor<T> got = ember::index_select(t, dim, idx);
      REQUIRE(got.shape() == s);
      REQUIRE(values(got) == want);
    }
    // gather: an index smaller than t outside dim 1.
    const I64 g = ids({0, 3, 1, 1, 2, 0, 3, 3}, Shape{2, 2, 2});
    const auto want_gather = by_coordinates(t, g.shape(), [&](std::vector<std::int64_t>& c) {
      c[1] = g.to_vector()[static_cast<std::size_t>(flat_of(c, g.shape()))];
      return true;
    });
    REQUIRE(values(ember::gather(t, 1, g)) == want_gather);
    // scatter_add: src larger than the index; repeated targets add up.
    const Tensor<T> src = counting<T>(Shape{3, 3, 3}, 2);
    std::vector<double> want = values(t);
    for (std::int64_t p = 0; p < g.numel(); ++p) {
      std::vector<std::int64_t> c = coords(p, g.shape());
      const double v = values(src)[static_cast<std::size_t>(flat_of(c, src.shape()))];
      c[1] = g.to_vector()[static_cast<std::size_t>(p)];
      want[static_cast<std::size_t>(flat_of(c, t.shape()))] += v;
    }
    const Tensor<T> got = ember::scatter_add(t, 1, g, src);
    REQUIRE(got.shape() == t.shape());
    REQUIRE(values(got) == want);
  }
  // Rank 0 and size 0.
  const Tensor<T> scalar = counting<T>(Shape{}, 3);
  REQUIRE(values(ember::index_select(scalar, 0, ids({0}, Shape{1}))) == values(scalar));
  REQUIRE(ember::index_select(base, 1, ids({}, Shape{0})).shape() == Shape{4, 0, 3});
  REQUIRE(ember::gather(base, 2, ids({}, Shape{4, 5, 0})).shape() == Shape{4, 5, 0});
  REQUIRE(values(ember::scatter_add(base, 0, ids({}, Shape{0, 5, 3}),
                                    counting<T>(Shape{0, 5, 3}, 1))) == values(base));
}

TEST_CASE("indexing errors name the operand and the cause", "[ops][indexing]") {
  const Tensor<float> t = counting<float>(Shape{3, 4}, 1);
  REQUIRE_THROWS_WITH(ember::index_select(t, 0, ids({0, 3}, Shape{2})),
                      Contains("index 3 is outside [0, 3)"));
  REQUIRE_THROWS_WITH(ember::index_select(t, 1, ids({-1}, Shape{1})),
                      Contains("index -1 is outside [0, 4)"));
  REQUIRE_THROWS_WITH(ember::index_select(t, 0, ids({0, 1}, Shape{1, 2})), Contains("must be 1-D"));
  REQUIRE_THROWS_WITH(ember::index_select(t, 2, ids({0}, Shape{1})), Contains("index_select"));
  REQUIRE_THROWS_WITH(ember::gather(t, 1, ids({0}, Shape{1})), Contains("rank 1, the tensor 2"));
  REQUIRE_THROWS_WITH(ember::gather(t, 1, ids({0, 0, 0, 0}, Shape{4, 1})),
                      Contains("larger than [3, 4] in dimension 0"));
  REQUIRE_THROWS_WITH(
      ember::scatter_add(t, 0, ids({0, 1}, Shape{1, 2}), counting<float>(Shape{1, 1}, 1)),
      Contains("larger than src's"));
  REQUIRE_THROWS_WITH(ember::one_hot(ids({0, 5}, Shape{2}), 3),
                      Contains("index 5 is outside [0, 3)"));
  REQUIRE_THROWS_WITH(ember::one_hot(ids({}, Shape{0})), Contains("cannot be inferred"));
}

TEST_CASE("masked_fill and one_hot", "[ops][indexing]") {
  const Tensor<float> t = counting<float>(Shape{2, 3}, 1);
  const Tensor<bool> mask = ember::from_vector<bool>({true, false, true}, Shape{3});
  const Tensor<float> filled = ember::masked_fill(t, mask, -7.5);
  const auto tv = values(t);
  const auto fv = values(filled);
  for (std::size_t i = 0; i < fv.size(); ++i) REQUIRE(fv[i] == (i % 3 != 1 ? -7.5 : tv[i]));
  const I64 oh = ember::one_hot(ids({2, 0, 1, 2}, Shape{2, 2}));
  REQUIRE(oh.shape() == Shape{2, 2, 3});
  REQUIRE(oh.to_vector() == std::vector<std::int64_t>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1});
  REQUIRE(ember::one_hot(ids({1}, Shape{}), 4).to_vector() ==
          std::vector<std::int64_t>{0, 1, 0, 0});
}

TEMPLATE_TEST_CASE("flip, roll, pad, repeat, tril, triu and cumsum follow PyTorch's definitions",
                   "[ops][rearrange]", float, double, bf16, half, std::int64_t) {
  using T = TestType;
  const Tensor<T> t = counting<T>(Shape{3, 4, 5}, 2).permute({0, 2, 1});  // [3, 5, 4], strided
  const Shape s = t.shape();
  // flip
  REQUIRE(values(ember::flip(t, {0, -1})) ==
          by_coordinates(t, s, [&](std::vector<std::int64_t>& c) {
            c[0] = s[0] - 1 - c[0];
            c[2] = s[2] - 1 - c[2];
            return true;
          }));
  // roll, both directions and by more than the extent
  for (const std::int64_t shift : {1, -2, 7}) {
    REQUIRE(values(ember::roll(t, shift, 1)) ==
            by_coordinates(t, s, [&](std::vector<std::int64_t>& c) {
              c[1] = ((c[1] - shift) % s[1] + s[1]) % s[1];
              return true;
            }));
  }
  // pad: {left, right} from the last dimension back
  const auto reference_pad = [&](PadMode mode, std::int64_t l2, std::int64_t r2, std::int64_t l1,
                                 std::int64_t r1) {
    const Shape out{s[0], s[1] + l1 + r1, s[2] + l2 + r2};
    return by_coordinates(
        t, out,
        [&](std::vector<std::int64_t>& c) {
          const std::int64_t lefts[] = {0, l1, l2};
          for (int k = 1; k < 3; ++k) {
            const std::int64_t n = s[k];
            std::int64_t x = c[static_cast<std::size_t>(k)] - lefts[k];
            switch (mode) {
              case PadMode::constant:
                if (x < 0 || x >= n) return false;
                break;
              case PadMode::reflect:
                x = x < 0 ? -x : (x >= n ? 2 * (n - 1) - x : x);
                break;
              case PadMode::replicate:
                x = x < 0 ? 0 : (x >= n ? n - 1 : x);
                break;
              case PadMode::circular:
                x = ((x % n) + n) % n;
                break;
            }
            c[static_cast<std::size_t>(k)] = x;
          }
          return true;
        },
        2.0);
  };
  for (const PadMode mode :
       {PadMode::constant, PadMode::reflect, PadMode::replicate, PadMode::circular}) {
    INFO("mode " << static_cast<int>(mode));
    const Tensor<T> p = ember::pad(t, {2, 1, 0, 3}, mode, 2.0);
    REQUIRE(p.shape() == Shape{3, 8, 7});
    REQUIRE(values(p) == reference_pad(mode, 2, 1, 0, 3));
  }
  // repeat, with a leading new dimension
  const Tensor<T> small = counting<T>(Shape{2, 3}, 4);
  const Tensor<T> rep = ember::repeat(small, {2, 1, 3});
  REQUIRE(rep.shape() == Shape{2, 2, 9});
  REQUIRE(values(rep) == by_coordinates(small.reshape(Shape{1, 2, 3}), rep.shape(),
                                        [](std::vector<std::int64_t>& c) {
                                          c[0] = 0;
                                          c[2] %= 3;
                                          return true;
                                        }));
  // tril / triu on the last two dimensions, diagonals above and below
  for (const std::int64_t k : {0, 1, -2}) {
    REQUIRE(values(ember::tril(t, k)) ==
            by_coordinates(t, s, [&](std::vector<std::int64_t>& c) { return c[2] - c[1] <= k; }));
    REQUIRE(values(ember::triu(t, k)) ==
            by_coordinates(t, s, [&](std::vector<std::int64_t>& c) { return c[2] - c[1] >= k; }));
  }
  // cumsum along each dimension
  for (const int d : {0, 1, 2}) {
    std::vector<double> want(static_cast<std::size_t>(s.numel()));
    const auto v = values(t);
    for (std::int64_t i = 0; i < s.numel(); ++i) {
      std::vector<std::int64_t> c = coords(i, s);
      double acc = 0;
      for (std::int64_t j = 0; j <= c[static_cast<std::size_t>(d)]; ++j) {
        std::vector<std::int64_t> q = c;
        q[static_cast<std::size_t>(d)] = j;
        acc += v[static_cast<std::size_t>(flat_of(q, s))];
      }
      want[static_cast<std::size_t>(i)] = acc;
    }
    // Sums of at most 5 small integers: exact in every type but half's and bf16's roundings,
    // which these magnitudes (< 60) stay clear of.
    REQUIRE(values(ember::cumsum(t, d)) == want);
  }
  // Size 0 and rank 0
  const Tensor<T> empty = counting<T>(Shape{0, 3}, 1);
  REQUIRE(ember::flip(empty, {0, 1}).shape() == Shape{0, 3});
  REQUIRE(ember::pad(empty, {1, 1}).shape() == Shape{0, 5});
  REQUIRE(ember::cumsum(empty, 0).shape() == Shape{0, 3});
  REQUIRE(values(ember::cumsum(counting<T>(Shape{}, 5), 0)) == values(counting<T>(Shape{}, 5)));
}

TEST_CASE("rearranging errors", "[ops][rearrange]") {
  const Tensor<float> t = counting<float>(Shape{3, 4}, 1);
  REQUIRE_THROWS_WITH(ember::flip(t, {1, -1}), Contains("listed twice"));
  REQUIRE_THROWS_WITH(ember::pad(t, {4, 0}, PadMode::reflect),
                      Contains("smaller than the extent 4"));
  REQUIRE_THROWS_WITH(ember::pad(t, {1}), Contains("pairs"));
  REQUIRE_THROWS_WITH(ember::pad(t, {-1, 0}), Contains("negative pad"));
  REQUIRE_THROWS_WITH(ember::repeat(t, {2}), Contains("at least one per dimension"));
  REQUIRE_THROWS_WITH(ember::tril(counting<float>(Shape{3}, 1)), Contains("rank 2 or more"));
}

TEST_CASE("gradcheck: indexing and rearranging Vars", "[ops][indexing][gradcheck]") {
  const auto u = [](const Shape& s, std::uint32_t seed) {
    return ember::testing::uniform_tensor(s, -1, 1, seed);
  };
  const I64 sel = ids({2, 0, 2}, Shape{3});  // a repeated index: gradients add
  const I64 g = ids({0, 2, 1, 1, 0, 0}, Shape{2, 3});
  for (int which = 0; which < 12; ++which) {
    INFO("case " << which);
    auto r = ember::gradcheck(
        [&](const Vars& v) -> Var<double> {
          switch (which) {
            case 0:
              return ember::sin(ember::index_select(v[0], 1, sel));
            case 1:
              return ember::index_select(v[0], 0, ids({1, 1}, Shape{2})) * 3.0;
            case 2:
              return ember::exp(ember::gather(v[0], 1, g));
            case 3:
              return ember::scatter_add(v[0], 1, g, v[1]) * v[0];
            case 4:
              return ember::flip(v[0], {0, 1}) * v[0];
            case 5:
              return ember::roll(v[0], 2, -1) * v[0];
            case 6:
              return ember::sin(ember::pad(v[0], {1, 2, 2, 0}, PadMode::constant, 0.5));
            case 7:
              return ember::sin(ember::pad(v[0], {2, 1, 1, 1}, PadMode::reflect));
            case 8:
              return ember::sin(ember::pad(v[0], {3, 0, 0, 2}, PadMode::replicate));
            case 9:
              return ember::sin(ember::pad(v[0], {3, 2}, PadMode::circular));
            case 10:
              return ember::sin(ember::repeat(v[0], {2, 1, 2})) + ember::sum(ember::tril(v[0], -1));
            default:
              return ember::cumsum(v[0], 1) * ember::triu(v[0], 1) +
                     ember::masked_fill(
                         v[0], ember::from_vector<bool>({true, false, true}, Shape{3}), 2.0);
          }
        },
        {u(Shape{2, 3}, 1), u(Shape{2, 3}, 2)});
    REQUIRE(r.ok);
  }
}

TEST_CASE(
    "ONNX's reference data: Gather, GatherElements, ScatterElements (add), CumSum, Pad, "
    "Trilu",
    "[ops][indexing][onnx]") {
  namespace onnx = ember::testing::onnx;
  if (!onnx::available("test_gather_0")) {
    WARN("libonnx-testdata is not installed: ONNX reference data not checked");
    return;
  }
  const auto f64 = onnx::to_tensor<double>;
  const auto i64 = onnx::to_tensor<std::int64_t>;
  const auto same = [](const Tensor<double>& got, const Tensor<double>& want) {
    REQUIRE(got.shape() == want.shape());
    const auto g = got.to_vector(), w = want.to_vector();
    for (std::size_t i = 0; i < g.size(); ++i) REQUIRE(g[i] == Approx(w[i]).epsilon(1e-6));
  };
  // Gather with a 1-D index is index_select (ONNX's negative indices are not PyTorch's).
  for (const char* name : {"test_gather_0", "test_gather_1"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    same(ember::index_select(f64(t.inputs[0]),
                             static_cast<std::int64_t>(t.attributes.get("axis", 0)),
                             i64(t.inputs[1])),
         f64(t.outputs[0]));
  }
  for (const char* name : {"test_gather_elements_0", "test_gather_elements_1"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    same(ember::gather(f64(t.inputs[0]), static_cast<std::int64_t>(t.attributes.get("axis", 0)),
                       i64(t.inputs[1])),
         f64(t.outputs[0]));
  }
  {  // reduction = add
    const auto t = onnx::read_node_test("test_scatter_elements_with_duplicate_indices");
    REQUIRE(t.attributes.get_string("reduction", "") == "add");
    same(
        ember::scatter_add(f64(t.inputs[0]), static_cast<std::int64_t>(t.attributes.get("axis", 0)),
                           i64(t.inputs[1]), f64(t.inputs[2])),
        f64(t.outputs[0]));
  }
  // CumSum: the axis is an input; the exclusive and reverse variants are not torch.cumsum.
  for (const char* name : {"test_cumsum_1d", "test_cumsum_2d_axis_0", "test_cumsum_2d_axis_1",
                           "test_cumsum_2d_negative_axis"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    same(ember::cumsum(f64(t.inputs[0]), static_cast<std::int64_t>(t.inputs[1].values.at(0))),
         f64(t.outputs[0]));
  }
  // Pad: ONNX lists all begins, then all ends, from the first dimension; ember (as PyTorch)
  // {left, right} pairs from the last dimension back.
  for (const auto& [name, mode] : {std::pair{"test_constant_pad", PadMode::constant},
                                   std::pair{"test_reflect_pad", PadMode::reflect},
                                   std::pair{"test_edge_pad", PadMode::replicate}}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    const auto& p = t.inputs[1].values;
    const std::size_t r = p.size() / 2;
    std::vector<std::int64_t> pads;
    for (std::size_t k = r; k-- > 0;) {
      pads.push_back(static_cast<std::int64_t>(p[k]));
      pads.push_back(static_cast<std::int64_t>(p[k + r]));
    }
    const double value = t.inputs.size() > 2 ? t.inputs[2].values.at(0) : 0.0;
    same(ember::pad(f64(t.inputs[0]), pads, mode, value), f64(t.outputs[0]));
  }
  // Trilu: upper = 1 is triu; k (an input when given) is the diagonal.
  for (const char* name : {"test_tril", "test_tril_neg", "test_tril_pos", "test_tril_square",
                           "test_tril_zero", "test_triu", "test_triu_neg", "test_triu_pos",
                           "test_triu_one_row", "test_triu_square_neg", "test_triu_zero"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    const std::int64_t k =
        t.inputs.size() > 1 ? static_cast<std::int64_t>(t.inputs[1].values.at(0)) : 0;
    const Tensor<double> x = f64(t.inputs[0]);
    same(t.attributes.get("upper", 1) != 0 ? ember::triu(x, k) : ember::tril(x, k),
         f64(t.outputs[0]));
  }
}

TEMPLATE_TEST_CASE("lerp: torch.lerp's formula, exact at both ends, broadcast weights",
                   "[ops][lerp]", float, double, bf16, half) {
  using T = TestType;
  const Tensor<T> a = counting<T>(Shape{2, 3}, 1), b = counting<T>(Shape{2, 3}, 2);
  const Tensor<T> w = ember::from_vector<T>({T(0.f), T(0.25f), T(1.f)}, Shape{3});
  const Tensor<T> y = ember::lerp(a, b, w);
  const auto av = values(a), bv = values(b), yv = values(y);
  for (std::size_t i = 0; i < yv.size(); ++i) {
    const double wi = std::vector<double>{0, 0.25, 1}[i % 3];
    const double d = bv[i] - av[i];
    const double want = wi < 0.5 ? av[i] + wi * d : bv[i] - d * (1 - wi);
    // Small integers and a weight of 0, 1/4 or 1: exact in float, then one rounding to T.
    REQUIRE(yv[i] == static_cast<double>(T(static_cast<float>(want))));
  }
  REQUIRE(values(Tensor<T>(ember::lerp(a, b, 1.0))) == bv);
  REQUIRE(values(Tensor<T>(ember::lerp(a, b, 0.0))) == av);
}

TEST_CASE("gradcheck: lerp of Vars", "[ops][lerp][gradcheck]") {
  auto r = ember::gradcheck(
      [](const Vars& v) -> Var<double> { return ember::sin(ember::lerp(v[0], v[1], v[2])); },
      {ember::testing::uniform_tensor(Shape{2, 3}, -1, 1, 1),
       ember::testing::uniform_tensor(Shape{2, 3}, -1, 1, 2),
       ember::testing::uniform_tensor(Shape{3}, 0, 1, 3)});
  REQUIRE(r.ok);
}

}  // namespace test_ops_indexing
}  // namespace
