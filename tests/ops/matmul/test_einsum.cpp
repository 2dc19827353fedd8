// einsum (ops/matmul/einsum.hpp): against sums written out coordinate by coordinate for the common
// equations (products, batches, traces of products, transposes, outer products, three
// operands, implicit outputs, "..." with broadcasting, diagonals), float and double, Tensors
// and Vars; the errors; gradcheck; ONNX's reference data.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ember/ember.hpp>

#include "support/onnx.hpp"
#include "support/random_tensors.hpp"

namespace {
namespace test_ops_einsum {

using Catch::Matchers::Contains;
using ember::Shape;
using ember::Tensor;
using ember::Var;
using Vars = std::vector<Var<double>>;

Tensor<double> u(const Shape& s, std::uint32_t seed) {
  return ember::testing::uniform_tensor(s, -1, 1, seed);
}

/// The einsum by brute force: every assignment of the letters, summed into the output. A
/// letter of extent 1 in one operand and n in another broadcasts (the operand reads index 0);
/// a letter repeated within an operand reads the same index twice (a diagonal).
std::vector<double> brute(const std::vector<std::string>& ins, const std::string& out,
                          const std::vector<Tensor<double>>& ops) {
  std::map<char, std::int64_t> size;
  for (std::size_t k = 0; k < ins.size(); ++k) {
    for (std::size_t i = 0; i < ins[k].size(); ++i) {
      const std::int64_t n = ops[k].size(static_cast<int>(i));
      if (size.count(ins[k][i]) == 0 || size[ins[k][i]] == 1) size[ins[k][i]] = n;
    }
  }
  std::vector<char> letters;
  for (const auto& [c, n] : size) letters.push_back(c);
  std::int64_t out_n = 1;
  for (const char c : out) out_n *= size[c];
  std::vector<double> result(static_cast<std::size_t>(out_n), 0.0);
  std::vector<std::vector<double>> vals;
  for (const auto& t : ops) vals.push_back(t.contiguous().to_vector());
  std::map<char, std::int64_t> at;
  for (const char c : letters) at[c] = 0;
  while (true) {
    double p = 1;
    for (std::size_t k = 0; k < ins.size(); ++k) {
      std::int64_t f = 0;
      for (std::size_t i = 0; i < ins[k].size(); ++i) {
        const std::int64_t n = ops[k].size(static_cast<int>(i));
        f = f * n + (n == 1 ? 0 : at[ins[k][i]]);
      }
      p *= vals[k][static_cast<std::size_t>(f)];
    }
    std::int64_t o = 0;
    for (const char c : out) o = o * size[c] + at[c];
    result[static_cast<std::size_t>(o)] += p;
    std::size_t j = letters.size();
    while (j > 0 && ++at[letters[j - 1]] == size[letters[j - 1]]) at[letters[--j]] = 0;
    if (j == 0) break;
  }
  return result;
}

void check(const std::string& eq, const std::vector<std::string>& ins, const std::string& out,
           const std::vector<Tensor<double>>& ops) {
  INFO(eq);
  const Tensor<double> got = ember::einsum(eq, ops);
  const auto want = brute(ins, out, ops);
  const auto g = got.to_vector();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) REQUIRE(g[i] == Approx(want[i]).margin(1e-12));
}

TEST_CASE("einsum: the common equations against brute-force sums", "[ops][einsum]") {
  const Tensor<double> a = u(Shape{3, 4}, 1), b = u(Shape{4, 5}, 2), c = u(Shape{5, 2}, 3);
  const Tensor<double> x = u(Shape{2, 3, 4}, 4), y = u(Shape{2, 4, 5}, 5), v = u(Shape{4}, 6);
  check("ij,jk->ik", {"ij", "jk"}, "ik", {a, b});
  check("ij,jk", {"ij", "jk"}, "ik", {a, b});  // implicit: i and k occur once
  check("bij,bjk->bik", {"bij", "bjk"}, "bik", {x, y});
  check("bij,bjk->kib", {"bij", "bjk"}, "kib", {x, y});
  check("ij->j", {"ij"}, "j", {a});
  check("ij->ji", {"ij"}, "ji", {a});
  check("ij->", {"ij"}, "", {a});
  check("i,j->ij", {"i", "j"}, "ij", {v, v});
  check("ij,ij->", {"ij", "ij"}, "", {a, a});
  check("ij,ij->ij", {"ij", "ij"}, "ij", {a, a});  // elementwise, as a batch of 1x1 products
  check("ij,j->i", {"ij", "j"}, "i", {a, v});
  check("ij,jk,kl->il", {"ij", "jk", "kl"}, "il", {a, b, c});
  check("bij,k->bik", {"bij", "k"}, "bik", {x, u(Shape{2}, 7)});  // j summed first
  check("ab,cd->", {"ab", "cd"}, "", {a, c});
  // float and a size-0 extent
  const Tensor<float> af = ember::cast<float>(a), bf = ember::cast<float>(b);
  const Tensor<float> pf = ember::einsum("ij,jk->ik", {af, bf});
  const Tensor<float> mf = ember::matmul(af, bf);
  const auto pv = pf.to_vector(), mv = mf.to_vector();
  for (std::size_t i = 0; i < pv.size(); ++i) REQUIRE(pv[i] == Approx(mv[i]).margin(1e-6));
  REQUIRE(ember::einsum("ij,jk->ik", {u(Shape{3, 0}, 1), u(Shape{0, 2}, 2)}).to_vector() ==
          std::vector<double>(6, 0.0));
}

// The brute force names "..." by capital letters here (A, B, C for the leading dimensions).
TEST_CASE("einsum: \"...\" broadcasts leading dimensions; diagonals", "[ops][einsum]") {
  const Tensor<double> x = u(Shape{2, 1, 3, 4}, 1), y = u(Shape{5, 4, 2}, 2);
  const Tensor<double> z = u(Shape{3, 4}, 3), sq = u(Shape{2, 3, 3}, 4);
  check("...ij,...jk->...ik", {"ABij", "Bjk"}, "ABik", {x, y});
  check("...ij,...jk", {"ABij", "Bjk"}, "ABik", {x, y});    // implicit: "..." first
  check("...ij,...jk->ik", {"ABij", "Bjk"}, "ik", {x, y});  // "..." summed
  check("...ij,jk->...ki", {"ABij", "jk"}, "ABki", {x, u(Shape{4, 2}, 5)});
  check("...ij->...ji", {"ABij"}, "ABji", {x});
  check("...->", {"ABCD"}, "", {x});
  check("i...,i...->...", {"iA", "iA"}, "A", {z, u(Shape{3, 1}, 6)});    // "..." last, broadcast
  check("ij...,jk->ik...", {"ij", "jk"}, "ik", {z, u(Shape{4, 2}, 7)});  // "..." covers nothing
  check("...ii->...i", {"Aii"}, "Ai", {sq});
  check("ii->i", {"ii"}, "i", {u(Shape{3, 3}, 8)});
  check("ii", {"ii"}, "", {u(Shape{3, 3}, 8)});  // implicit: the trace
  check("bii,bij->bj", {"bii", "bij"}, "bj", {sq, sq});
  check("iii->i", {"iii"}, "i", {u(Shape{3, 3, 3}, 9)});
  check("ijij->ij", {"ijij"}, "ij", {u(Shape{2, 3, 2, 3}, 10)});
  // Every operand of extent 1 along a "..." dimension: the output keeps it.
  check("...i,...i->...i", {"Ai", "Ai"}, "Ai", {u(Shape{1, 3}, 11), u(Shape{1, 3}, 12)});
  // A size-0 dimension under "..." (1 against 0 broadcasts to 0).
  REQUIRE(
      ember::einsum("...ij,...jk->...ik", {u(Shape{0, 2, 3}, 1), u(Shape{1, 3, 2}, 2)}).shape() ==
      Shape{0, 2, 2});
}

TEST_CASE("einsum errors name the equation and the cause", "[ops][einsum]") {
  const Tensor<double> a = u(Shape{3, 4}, 1), b = u(Shape{5, 2}, 2);
  REQUIRE_THROWS_WITH(ember::einsum("ij,jk->ik", {a, b}), Contains("letter 'j' is 4"));
  REQUIRE_THROWS_WITH(ember::einsum("ij->ik", {a}), Contains("output letter 'k' is in no operand"));
  REQUIRE_THROWS_WITH(ember::einsum("ii->i", {a}), Contains("letter 'i' is 3"));
  REQUIRE_THROWS_WITH(ember::einsum("ij->ii", {a}), Contains("output letter 'i' repeats"));
  REQUIRE_THROWS_WITH(ember::einsum("ijk->i", {a}), Contains("names 3 dimensions"));
  REQUIRE_THROWS_WITH(ember::einsum("...ijk->i", {a}), Contains("names at least 3 dimensions"));
  REQUIRE_THROWS_WITH(ember::einsum("......i->i", {a}), Contains("occurs twice"));
  REQUIRE_THROWS_WITH(ember::einsum("..i->i", {a}), Contains("'.' is not a letter"));
  REQUIRE_THROWS_WITH(
      ember::einsum("...ij,...jk->...ik", {u(Shape{2, 3, 4}, 1), u(Shape{3, 4, 5}, 2)}),
      Contains("do not broadcast"));
  REQUIRE_THROWS_WITH(ember::einsum("ij,jk->ik", {a}), Contains("names 2 operands, 1 were given"));
  REQUIRE_THROWS_WITH(ember::einsum("i1->i", {a}), Contains("is not a letter"));
}

TEST_CASE("gradcheck: einsum of Vars", "[ops][einsum][gradcheck]") {
  struct Case {
    const char* eq;
    Shape a, b;
  };
  for (const Case& c :
       {Case{"ij,jk->ik", {3, 2}, {2, 3}}, Case{"bij,bjk->kib", {2, 3, 2}, {2, 2, 3}},
        Case{"ij,ij->", {3, 2}, {3, 2}}, Case{"ij,j->i", {3, 2}, {2}}, Case{"i,j->ij", {3}, {2}},
        Case{"...ij,...jk->...ik", {2, 1, 3, 2}, {3, 2, 2}},
        Case{"...ii,...i->...", {2, 3, 3}, {3}}, Case{"bii,bij->bj", {2, 2, 2}, {2, 2, 3}}}) {
    INFO(c.eq);
    auto r = ember::gradcheck(
        [&](const Vars& v) -> Var<double> {
          return ember::sin(ember::einsum(c.eq, {v[0], v[1]}));
        },
        {u(c.a, 1), u(c.b, 2)});
    REQUIRE(r.ok);
  }
}

TEST_CASE("ONNX's reference data: Einsum", "[ops][einsum][onnx]") {
  namespace onnx = ember::testing::onnx;
  if (!onnx::available("test_einsum_batch_matmul")) {
    WARN("libonnx-testdata is not installed: ONNX reference data not checked");
    return;
  }
  for (const char* name : {"test_einsum_batch_diagonal", "test_einsum_batch_matmul",
                           "test_einsum_inner_prod", "test_einsum_sum", "test_einsum_transpose"}) {
    INFO(name);
    const auto t = onnx::read_node_test(name);
    std::vector<Tensor<double>> operands;
    for (const auto& in : t.inputs) operands.push_back(onnx::to_tensor<double>(in));
    const Tensor<double> got = ember::einsum(t.attributes.get_string("equation", ""), operands);
    const Tensor<double> want = onnx::to_tensor<double>(t.outputs[0]);
    REQUIRE(got.shape() == want.shape());
    const auto g = got.to_vector(), w = want.to_vector();
    for (std::size_t i = 0; i < g.size(); ++i)
      REQUIRE(g[i] == Approx(w[i]).epsilon(1e-9).margin(1e-12));
  }
}

}  // namespace test_ops_einsum
}  // namespace
