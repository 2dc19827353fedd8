// cat, stack, split and chunk (ops/indexing/concat.hpp, autograd/concat.hpp): against an
// index-by-index reference over the element types, dimensions (negative too), size-0 extents,
// PyTorch's skipped 1-D empties and strided inputs; split and chunk as views, with torch.chunk's
// counts; the errors; and the backward rules through gradcheck.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <ember/ember.hpp>

#include "support/coordinates.hpp"
#include "support/onnx.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_ops_concat {

using ember::bf16;
using ember::half;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;

using ember::testing::coords;
using ember::testing::counting;
using ember::testing::flat_of;

/// cat(list, d) element by element: each output coordinate taken from the input that covers it.
template <class T>
std::vector<double> cat_reference(const std::vector<Tensor<T>>& list, int d, const Shape& out) {
  std::vector<double> want(static_cast<std::size_t>(out.numel()));
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    std::vector<std::int64_t> c = coords(i, out);
    for (const Tensor<T>& t : list) {
      if (t.rank() == 1 && t.numel() == 0 && out.rank() > 1) continue;
      if (c[static_cast<std::size_t>(d)] < t.size(d)) {
        want[static_cast<std::size_t>(i)] = static_cast<double>(
            t.contiguous().to_vector()[static_cast<std::size_t>(flat_of(c, t.shape()))]);
        break;
      }
      c[static_cast<std::size_t>(d)] -= t.size(d);
    }
  }
  return want;
}

template <class T>
std::vector<double> as_doubles(const Tensor<T>& t) {
  std::vector<double> out;
  for (const T& v : t.contiguous().to_vector()) out.push_back(static_cast<double>(v));
  return out;
}

TEMPLATE_TEST_CASE("cat: against the element-by-element reference", "[ops][concat]", float, double,
                   bf16, half, std::int64_t) {
  using T = TestType;
  struct Case {
    std::vector<Shape> shapes;
    int dim;
  };
  const std::vector<Case> cases = {
      {{Shape{2, 3}, Shape{4, 3}}, 0},
      {{Shape{2, 3}, Shape{2, 1}, Shape{2, 5}}, 1},
      {{Shape{2, 3}, Shape{2, 1}, Shape{2, 5}}, -1},
      {{Shape{2, 0, 4}, Shape{2, 3, 4}, Shape{2, 0, 4}}, 1},  // size-0 parts
      {{Shape{0, 3}, Shape{0, 3}}, 0},                        // all empty
      {{Shape{5}, Shape{1}}, 0},
      {{Shape{3, 2}, Shape{0}, Shape{1, 2}}, 0},  // a 1-D empty is skipped (PyTorch's rule)
      {{Shape{2, 1, 3}}, 2},                      // one tensor: a copy
  };
  int seed = 0;
  for (const Case& c : cases) {
    std::vector<Tensor<T>> list;
    for (const Shape& s : c.shapes) list.push_back(counting<T>(s, ++seed));
    const Tensor<T> y = ember::cat(list, c.dim);
    const int d = c.dim < 0 ? c.dim + list.front().rank() : c.dim;
    INFO("case " << seed << " dim " << c.dim << " -> " << y.shape().str());
    REQUIRE(y.is_contiguous());
    REQUIRE(as_doubles(y) == cat_reference(list, d, y.shape()));
  }
  // Strided inputs (a transposed view, a stepped slice) read in place.
  const Tensor<T> a = counting<T>(Shape{3, 4}, 50).t();                // [4, 3], strided
  const Tensor<T> b = counting<T>(Shape{4, 6}, 51).slice(1, 0, 6, 2);  // [4, 3], stepped
  const Tensor<T> y = ember::cat({a, b}, 1);
  REQUIRE(y.shape() == Shape{4, 6});
  REQUIRE(as_doubles(y) == cat_reference(std::vector<Tensor<T>>{a, b}, 1, y.shape()));
}

TEMPLATE_TEST_CASE("stack: a new dimension at every position", "[ops][concat]", float, bf16,
                   std::int64_t) {
  using T = TestType;
  const Tensor<T> a = counting<T>(Shape{2, 3}, 1), b = counting<T>(Shape{2, 3}, 2);
  for (int dim = -3; dim <= 2; ++dim) {
    const Tensor<T> y = ember::stack({a, b}, dim);
    const int d = dim < 0 ? dim + 3 : dim;
    Shape want = a.shape();
    want.insert(d, 2);
    INFO("dim " << dim);
    REQUIRE(y.shape() == want);
    REQUIRE(as_doubles(y.select(d, 0)) == as_doubles(a));
    REQUIRE(as_doubles(y.select(d, 1)) == as_doubles(b));
  }
  // Rank 0 tensors stack into a vector.
  const Tensor<T> s = ember::stack({counting<T>(Shape{}, 3), counting<T>(Shape{}, 4)});
  REQUIRE(s.shape() == Shape{2});
}

TEST_CASE("split and chunk: views of the given extents, torch.chunk's counts", "[ops][concat]") {
  const Tensor<float> x = counting<float>(Shape{3, 7}, 5);
  const auto even = ember::split(x, 3, 1);
  REQUIRE(even.size() == 3);
  REQUIRE(even[0].shape() == Shape{3, 3});
  REQUIRE(even[2].shape() == Shape{3, 1});
  REQUIRE(even[1].data() == x.data() + 3);  // a view, no copy
  REQUIRE(as_doubles(ember::cat(even, 1)) == as_doubles(x));
  const auto sized = ember::split(x, std::vector<std::int64_t>{2, 0, 5}, -1);
  REQUIRE(sized.size() == 3);
  REQUIRE(sized[1].shape() == Shape{3, 0});
  REQUIRE(as_doubles(sized[2]) == as_doubles(x.narrow(1, 2, 5)));
  // torch.chunk: ceil(n / chunks) each, so fewer chunks than asked for where that covers n.
  const auto sizes_of = [](const std::vector<Tensor<float>>& parts) {
    std::vector<std::int64_t> s;
    for (const auto& p : parts) s.push_back(p.size(0));
    return s;
  };
  REQUIRE(sizes_of(ember::chunk(counting<float>(Shape{5}, 1), 3)) ==
          std::vector<std::int64_t>{2, 2, 1});
  REQUIRE(sizes_of(ember::chunk(counting<float>(Shape{6}, 1), 4)) ==
          std::vector<std::int64_t>{2, 2, 2});
  REQUIRE(sizes_of(ember::chunk(counting<float>(Shape{2}, 1), 5)) ==
          std::vector<std::int64_t>{1, 1});
  REQUIRE(sizes_of(ember::chunk(counting<float>(Shape{0}, 1), 3)) == std::vector<std::int64_t>{0});
}

TEST_CASE("cat, stack, split and chunk: bad input is an ember::Error naming the op",
          "[ops][concat]") {
  const Tensor<float> a = counting<float>(Shape{2, 3}, 1);
  using Catch::Contains;
  REQUIRE_THROWS_WITH(ember::cat(std::vector<Tensor<float>>{}), Contains("cat: the list"));
  REQUIRE_THROWS_WITH(ember::cat({a, counting<float>(Shape{2, 4}, 2)}, 0),
                      Contains("tensor 1 has shape [2, 4]"));
  REQUIRE_THROWS_WITH(ember::cat({a, counting<float>(Shape{2, 3, 1}, 2)}, 0),
                      Contains("does not match"));
  REQUIRE_THROWS_WITH(ember::cat({counting<float>(Shape{}, 1)}), Contains("rank-0"));
  REQUIRE_THROWS_WITH(ember::cat({a, a}, 2), Contains("cat"));
  REQUIRE_THROWS_WITH(ember::stack({a, counting<float>(Shape{3, 2}, 2)}), Contains("stack needs"));
  REQUIRE_THROWS_WITH(ember::stack({a}, 3), Contains("stack"));
  REQUIRE_THROWS_WITH(ember::split(a, std::vector<std::int64_t>{1, 1}, 1),
                      Contains("sizes adding up to 2 for an extent of 3"));
  REQUIRE_THROWS_WITH(ember::split(a, 0, 1), Contains("split size must be positive"));
  REQUIRE_THROWS_WITH(ember::chunk(a, 0), Contains("chunk: the number of chunks"));
  REQUIRE_THROWS_WITH(ember::split(counting<float>(Shape{}, 1), 1), Contains("rank 1 or more"));
}

TEST_CASE("gradcheck: cat, stack, split and chunk of Vars", "[ops][concat][gradcheck]") {
  const auto t = [](const Shape& s, std::uint32_t seed) {
    return ember::testing::uniform_tensor(s, -1, 1, seed);
  };
  const Tensor<double> constant = t(Shape{2, 2}, 9);
  for (int which = 0; which < 6; ++which) {
    INFO("case " << which);
    auto r = ember::gradcheck(
        [&](const Vars& v) -> Var<double> {
          switch (which) {
            case 0:  // two Vars and a constant, along the last dimension
              return ember::sin(ember::cat({v[0], v[1], Var<double>(constant)}, -1));
            case 1:  // the same Var twice: its gradients add
              return ember::cat({v[0], Var<double>(v[0] * 2.0)}, 0) * 1.5;
            case 2:
              return ember::exp(ember::stack({v[0], v[1].narrow(1, 0, 3)}, 1));
            case 3: {
              const auto parts = ember::split(v[1], 2, 1);  // [2, 2], [2, 2], [2, 1]
              return parts[0] * parts[1] + ember::sin(parts[2]);
            }
            case 4: {
              const auto parts = ember::split(v[1], std::vector<std::int64_t>{1, 4}, -1);
              return ember::cat({parts[1], parts[0]}, 1) * v[1];  // a rotation
            }
            default: {
              const auto parts = ember::chunk(v[0], 2, 1);  // [2, 2], [2, 1]
              return ember::sum(parts[0]) * ember::sum(parts[1] * parts[1]);
            }
          }
        },
        {t(Shape{2, 3}, 1), t(Shape{2, 5}, 2)});
    REQUIRE(r.ok);
  }
}

TEST_CASE("ONNX's reference data: Concat and Split", "[ops][concat][onnx]") {
  namespace onnx = ember::testing::onnx;
  if (!onnx::available("test_concat_1d_axis_0")) {
    WARN("libonnx-testdata is not installed: ONNX reference data not checked");
    return;
  }
  const auto f64 = onnx::to_tensor<double>;
  for (const char* name :
       {"test_concat_1d_axis_0", "test_concat_1d_axis_negative_1", "test_concat_2d_axis_0",
        "test_concat_2d_axis_1", "test_concat_2d_axis_negative_1", "test_concat_2d_axis_negative_2",
        "test_concat_3d_axis_0", "test_concat_3d_axis_1", "test_concat_3d_axis_2",
        "test_concat_3d_axis_negative_1", "test_concat_3d_axis_negative_2",
        "test_concat_3d_axis_negative_3"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    std::vector<Tensor<double>> list;
    for (const auto& in : t.inputs) list.push_back(f64(in));
    const Tensor<double> got =
        ember::cat(list, static_cast<std::int64_t>(t.attributes.get("axis", 0)));
    const Tensor<double> want = f64(t.outputs[0]);
    REQUIRE(got.shape() == want.shape());
    REQUIRE(got.to_vector() == want.to_vector());
  }
  // Equal parts: as many as the node has outputs (chunk); variable parts: the sizes input.
  for (const char* name : {"test_split_equal_parts_1d", "test_split_equal_parts_2d",
                           "test_split_equal_parts_default_axis", "test_split_variable_parts_1d",
                           "test_split_variable_parts_2d", "test_split_variable_parts_default_axis",
                           "test_split_zero_size_splits"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    const Tensor<double> x = f64(t.inputs[0]);
    const auto axis = static_cast<std::int64_t>(t.attributes.get("axis", 0));
    std::vector<Tensor<double>> parts;
    if (t.inputs.size() > 1) {
      std::vector<std::int64_t> sizes;
      for (const double s : t.inputs[1].values) sizes.push_back(static_cast<std::int64_t>(s));
      parts = ember::split(x, sizes, axis);
    } else {
      parts = ember::chunk(x, static_cast<std::int64_t>(t.outputs.size()), axis);
    }
    REQUIRE(parts.size() == t.outputs.size());
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const Tensor<double> want = f64(t.outputs[k]);
      REQUIRE(parts[k].shape() == want.shape());
      REQUIRE(parts[k].contiguous().to_vector() == want.to_vector());
    }
  }
}

}  // namespace test_ops_concat
}  // namespace
