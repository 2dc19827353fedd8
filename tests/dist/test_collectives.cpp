// dist's collectives on every element type and operation against the known result, on however
// many ranks ctest started (1 without MPI, 2 and 3 under mpirun): values are small integers, so
// every dtype holds them exactly; bf16 and half are summed in float and rounded once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <ember/dist/collectives.hpp>
#include <ember/ember.hpp>

namespace {

namespace dist = ember::dist;
using ember::bf16;
using ember::half;
using ember::Shape;
using ember::Tensor;

int rank() { return dist::rank(); }
int size() { return dist::world_size(); }

// Rank r's element i: small integers, different on every rank.
double value(int r, std::int64_t i) { return static_cast<double>((r + 1) * (i % 7 + 1) - 3 * r); }

template <class T>
Tensor<T> filled(std::int64_t n, int r) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = T(value(r, i));
  return ember::from_vector<T>(v);
}

template <class T>
std::vector<double> as_doubles(const Tensor<T>& t) {
  std::vector<double> out;
  for (const T& x : t.to_vector()) out.push_back(static_cast<double>(x));
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("dist::all_reduce: sum, avg, max and min over the ranks", "[dist]", float,
                   double, bf16, half, std::int32_t, std::int64_t) {
  using T = TestType;
  for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{37}}) {
    for (const dist::ReduceOp op :
         {dist::ReduceOp::sum, dist::ReduceOp::avg, dist::ReduceOp::max, dist::ReduceOp::min}) {
      if (op == dist::ReduceOp::avg && !ember::FloatingElement<T>) {
        REQUIRE_THROWS_WITH(dist::all_reduce(filled<T>(n, rank()), op),
                            Catch::Contains("avg of an integer tensor"));
        continue;
      }
      CAPTURE(n, dist::name_of(op));
      Tensor<T> t = filled<T>(n, rank());
      dist::all_reduce(t, op);
      const std::vector<double> got = as_doubles(t);
      for (std::int64_t i = 0; i < n; ++i) {
        double want = value(0, i);
        for (int r = 1; r < size(); ++r) {
          const double x = value(r, i);
          if (op == dist::ReduceOp::sum || op == dist::ReduceOp::avg) want += x;
          if (op == dist::ReduceOp::max) want = std::max(want, x);
          if (op == dist::ReduceOp::min) want = std::min(want, x);
        }
        if (op == dist::ReduceOp::avg) want /= size();
        // avg's quotient is rounded to T once: compare in T.
        REQUIRE(got[static_cast<std::size_t>(i)] == static_cast<double>(T(want)));
      }
    }
  }
}

TEMPLATE_TEST_CASE("dist::all_reduce: bf16 and half are summed in float and rounded once", "[dist]",
                   bf16, half) {
  using T = TestType;
  // Rank 0 adds 1, every other rank 3/8 of T's step at 1: in float the sum is
  // 1 + (size - 1) * 3/8 step, which rounds to 1 + step from three ranks on. Added in T one rank
  // at a time it would stay at 1 (each addend is below half a step).
  const double step = std::is_same_v<T, bf16> ? 1.0 / 128 : 1.0 / 1024;
  const double mine = dist::rank() == 0 ? 1.0 : 3.0 / 8 * step;
  const double exact = 1.0 + (dist::world_size() - 1) * 3.0 / 8 * step;
  Tensor<T> t = ember::from_vector<T>({T(mine)});
  dist::all_reduce(t);
  REQUIRE(static_cast<double>(t.item()) == static_cast<double>(T(exact)));
  if (dist::world_size() >= 3) REQUIRE(static_cast<double>(t.item()) == 1.0 + step);
}

TEST_CASE("dist::all_reduce: a non-contiguous tensor and a scalar", "[dist]") {
  Tensor<float> base = filled<float>(12, rank()).reshape(Shape{3, 4});
  Tensor<float> view = base.t();  // [4, 3], strides (1, 4)
  REQUIRE_FALSE(view.is_contiguous());
  dist::all_reduce(view);
  const std::vector<float> got = base.to_vector();
  for (std::int64_t i = 0; i < 12; ++i) {
    double want = 0;
    for (int r = 0; r < size(); ++r) want += value(r, i);
    REQUIRE(got[static_cast<std::size_t>(i)] == static_cast<float>(want));
  }
  Tensor<double> scalar = ember::from_vector<double>({2.0 + rank()}, Shape{});
  dist::all_reduce(scalar, dist::ReduceOp::max);
  REQUIRE(scalar.item() == 2.0 + size() - 1);
}

TEMPLATE_TEST_CASE("dist::broadcast from every root", "[dist]", float, double, bf16, half,
                   std::int32_t, std::int64_t) {
  using T = TestType;
  for (int root = 0; root < size(); ++root) {
    Tensor<T> t = filled<T>(29, rank());
    dist::broadcast(t, root);
    REQUIRE(as_doubles(t) == as_doubles(filled<T>(29, root)));
  }
  REQUIRE_THROWS_WITH(dist::broadcast(filled<T>(3, 0), size()),
                      Catch::Contains("is not a rank of this world"));
}

TEMPLATE_TEST_CASE("dist::all_gather: every rank's tensor in rank order", "[dist]", float, bf16,
                   std::int64_t) {
  using T = TestType;
  const Tensor<T> in = filled<T>(10, rank()).reshape(Shape{2, 5});
  std::vector<double> want;
  for (int r = 0; r < size(); ++r) {
    for (double x : as_doubles(filled<T>(10, r))) want.push_back(x);
  }
  Tensor<T> concatenated = ember::empty<T>(Shape{2 * size(), 5});
  dist::all_gather(concatenated, in);
  REQUIRE(as_doubles(concatenated) == want);
  Tensor<T> stacked = ember::empty<T>(Shape{size(), 2, 5});
  dist::all_gather(stacked, in);
  REQUIRE(as_doubles(stacked) == want);
  REQUIRE_THROWS_WITH(dist::all_gather(ember::empty<T>(Shape{2 * size() + 1, 5}), in),
                      Catch::Contains("needs"));
}

TEMPLATE_TEST_CASE("dist::reduce_scatter: rank r keeps part r of the reduced tensor", "[dist]",
                   float, double, bf16, std::int32_t) {
  using T = TestType;
  const std::int64_t part = 6;
  const Tensor<T> in = filled<T>(part * size(), rank());
  Tensor<T> out = ember::empty<T>(Shape{part});
  dist::reduce_scatter(out, in, dist::ReduceOp::sum);
  const std::vector<double> got = as_doubles(out);
  for (std::int64_t i = 0; i < part; ++i) {
    double want = 0;
    for (int r = 0; r < size(); ++r) want += value(r, rank() * part + i);
    REQUIRE(got[static_cast<std::size_t>(i)] == static_cast<double>(T(want)));
  }
  REQUIRE_THROWS_WITH(dist::reduce_scatter(ember::empty<T>(Shape{part + 1}), in),
                      Catch::Contains("one part per rank"));
}

TEST_CASE("dist: async collectives complete at wait(), barrier returns on every rank", "[dist]") {
  Tensor<float> a = filled<float>(1000, rank());
  Tensor<double> b = filled<double>(5, rank());
  dist::Work wa = dist::all_reduce_async(a);
  dist::Work wb = dist::broadcast_async(b, size() - 1);
  wb.wait();
  wa.wait();
  wa.wait();  // idempotent
  double want = 0;
  for (int r = 0; r < size(); ++r) want += value(r, 999);
  REQUIRE(a.to_vector().back() == static_cast<float>(want));
  REQUIRE(as_doubles(b) == as_doubles(filled<double>(5, size() - 1)));
  dist::barrier();
}

TEST_CASE("dist: with check_collectives, ranks calling different collectives all throw", "[dist]") {
  if (size() < 2) return;  // a world of one cannot disagree with itself
  dist::set_check_collectives(true);
  // Rank 1 reduces one more element than the others.
  Tensor<float> t = filled<float>(rank() == 1 ? 5 : 4, rank());
  REQUIRE_THROWS_WITH(dist::all_reduce(t), Catch::Contains("the ranks called different "
                                                           "collectives") &&
                                               Catch::Contains("all_reduce of 5 float32"));
  dist::set_check_collectives(false);
  dist::barrier();
}
