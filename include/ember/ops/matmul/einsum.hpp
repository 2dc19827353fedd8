// einsum(equation, operands): Einstein summation over Tensors or Vars, torch.einsum's notation:
//
//   einsum("ij,jk->ik", {a, b})        a matrix product
//   einsum("bij,bjk->bik", {a, b})     a batched one
//   einsum("...ij,...jk->...ik", ...)  batched over broadcast leading dimensions
//   einsum("ij->j", {a})               a sum over i;   einsum("ij->ji", {a}) a transpose
//   einsum("i,j->ij", {u, v})          an outer product;  "ij,ij->" the sum of the products
//   einsum("ii->i", {a}), "ii->"       a diagonal, a trace
//   einsum("ij,jk", {a, b})            no "->": the letters that occur once, in alphabetical
//                                      order (after the "..." dimensions, if any)
//
// Letters are a-z and A-Z; each names one extent, equal in every operand. "..." stands for the
// dimensions an operand has beyond its letters, aligned from the right and broadcast as
// elementwise operators broadcast (extents equal or 1); when the output has no "...", those
// dimensions are summed. The operands are first reduced to what the contraction needs: a
// broadcast (size-1) dimension is dropped (a factor that does not vary along it), and a letter
// repeated within one operand takes the diagonal (the elements off it zeroed and summed away, so
// O(n^2) in the pair's extent). Then they are contracted left to right, two at a time: letters
// no later operand and not the output need are summed first (a reduction), then the pair is one
// batched matmul (shared letters kept by the output or later operands are the batch, shared
// letters not kept are contracted), and a final permute puts the output's letters in order.
// Everything is made of reshape, where, permute, sum and matmul, so Vars get their backward
// from those, and both devices work.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/shape.hpp"
#include "../../exec/generate.hpp"
#include "../../exec/reduce.hpp"
#include "../../expr/operators.hpp"
#include "matmul.hpp"

namespace ember::ops::inline EMBER_UNIT_KIND {

/// The equation, parsed: each operand's letters and the output's, with '.' where "..." was.
struct EinsumSpec {
  std::vector<std::string> inputs;
  std::string output;
};

/// Stands for "..." in an EinsumSpec; the dimensions it covers become letters below ' '.
inline constexpr char kEinsumEllipsis = '.';

/// `side` (an operand's or the output's subscripts) with "..." as kEinsumEllipsis, checked.
inline std::string einsum_subscripts(std::string_view side, std::string_view equation,
                                     const char* where) {
  std::string letters;
  for (std::size_t i = 0; i < side.size(); ++i) {
    if (side.substr(i, 3) == "...") {
      EMBER_CHECK(letters.find(kEinsumEllipsis) == std::string::npos, "ember: einsum: \"...\" ",
                  "occurs twice in ", where, " of \"", equation, "\"");
      letters += kEinsumEllipsis;
      i += 2;
      continue;
    }
    EMBER_CHECK(std::isalpha(static_cast<unsigned char>(side[i])), "ember: einsum: '", side[i],
                "' is not a letter, in ", where, " of \"", equation, "\"");
    letters += side[i];
  }
  return letters;
}

inline EinsumSpec parse_einsum(std::string_view equation, std::size_t operands) {
  std::string eq;
  for (const char c : equation) {
    if (c != ' ') eq += c;
  }
  EinsumSpec spec;
  const std::size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  for (std::size_t begin = 0;;) {
    const std::size_t comma = std::min(lhs.find(',', begin), lhs.size());
    spec.inputs.push_back(einsum_subscripts(std::string_view(lhs).substr(begin, comma - begin),
                                            equation, "an operand"));
    if (comma == lhs.size()) break;
    begin = comma + 1;
  }
  EMBER_CHECK(spec.inputs.size() == operands, "ember: einsum: \"", equation, "\" names ",
              spec.inputs.size(), " operands, ", operands, " were given");
  std::map<char, int> count;
  bool ellipsis = false;
  for (const std::string& s : spec.inputs) {
    for (const char c : s) {
      if (c == kEinsumEllipsis) {
        ellipsis = true;
      } else {
        ++count[c];
      }
    }
  }
  if (arrow == std::string::npos) {
    if (ellipsis) spec.output += kEinsumEllipsis;  // torch's order: "..." first
    for (const auto& [c, n] : count) {             // std::map: in ASCII order
      if (n == 1) spec.output += c;
    }
  } else {
    spec.output = einsum_subscripts(std::string_view(eq).substr(arrow + 2), equation, "the output");
    for (const char c : spec.output) {
      if (c == kEinsumEllipsis) continue;
      EMBER_CHECK(count.count(c) == 1, "ember: einsum: output letter '", c,
                  "' is in no operand, in \"", equation, "\"");
      EMBER_CHECK(spec.output.find(c) == spec.output.rfind(c), "ember: einsum: output letter '", c,
                  "' repeats, in \"", equation, "\"");
    }
  }
  return spec;
}

inline bool has_letter(const std::string& s, char c) { return s.find(c) != std::string::npos; }

/// x (letters `from`) with its dimensions in the order of `to` (the same letters).
template <class X>
X permute_letters(const X& x, const std::string& from, const std::string& to) {
  std::vector<std::int64_t> order;
  bool identity = true;
  for (std::size_t i = 0; i < to.size(); ++i) {
    order.push_back(static_cast<std::int64_t>(from.find(to[i])));
    identity = identity && order.back() == static_cast<std::int64_t>(i);
  }
  if (identity) return x;
  return x.permute(Dims(order));
}

/// x with the letters of `s` that `needed` lacks summed out; the letters left.
template <class X>
std::pair<X, std::string> sum_letters(const X& x, const std::string& s, const std::string& needed) {
  std::vector<std::int64_t> axes;
  std::string rest;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (has_letter(needed, s[i])) {
      rest += s[i];
    } else {
      axes.push_back(static_cast<std::int64_t>(i));
    }
  }
  if (axes.empty()) return {x, s};
  return {X(sum(x, Dims(axes), false)), rest};
}

/// a (letters sa) and b (sb) contracted, keeping the letters of `keep`; the result's letters.
template <class X>
std::pair<X, std::string> contract(const X& a0, const std::string& sa0, const X& b0,
                                   const std::string& sb0, const std::string& keep,
                                   const std::map<char, std::int64_t>& size) {
  auto [a, sa] = sum_letters(a0, sa0, sb0 + keep);
  auto [b, sb] = sum_letters(b0, sb0, sa + keep);
  std::string batch, left, summed, right;
  for (const char c : sa) (has_letter(sb, c) ? (has_letter(keep, c) ? batch : summed) : left) += c;
  for (const char c : sb) {
    if (!has_letter(sa, c)) right += c;
  }
  const auto extents = [&](const std::string& letters) {
    std::vector<std::int64_t> e;
    for (const char c : letters) e.push_back(size.at(c));
    return e;
  };
  const auto product = [&](const std::string& letters) {
    std::int64_t p = 1;
    for (const char c : letters) p *= size.at(c);
    return p;
  };
  std::vector<std::int64_t> as = extents(batch), bs = extents(batch), rs = extents(batch);
  as.insert(as.end(), {product(left), product(summed)});
  bs.insert(bs.end(), {product(summed), product(right)});
  for (const std::int64_t e : extents(left + right)) rs.push_back(e);
  const X am = permute_letters(a, sa, batch + left + summed).reshape(Shape(as));
  const X bm = permute_letters(b, sb, batch + summed + right).reshape(Shape(bs));
  return {X(matmul(am, bm)).reshape(Shape(rs)), batch + left + right};
}

/// The letter of the i-th dimension that "..." covers (counted over all of them, from the left).
inline char ellipsis_letter(std::size_t i) { return static_cast<char>(1 + i); }

/// One operand as the contraction takes it: one distinct letter per dimension.
template <class X>
struct EinsumOperand {
  X value;
  std::string letters;
};

template <class X>
Device device_of(const X& x) {
  if constexpr (requires { x.value(); }) {
    return x.value().device();
  } else {
    return x.device();
  }
}

/// x's diagonal over dimensions p < q (equal extents): the elements off it zeroed, q summed.
template <class X>
X take_diagonal(const X& x, int p, int q) {
  const Shape shape = x.shape();
  const std::int64_t n = shape[p];
  std::vector<std::int64_t> rows(static_cast<std::size_t>(shape.rank()), 1), cols = rows;
  rows[static_cast<std::size_t>(p)] = cols[static_cast<std::size_t>(q)] = n;
  const Tensor<std::int64_t> index =
      arange<std::int64_t>(0.0, static_cast<double>(n), 1.0, device_of(x));
  const Tensor<bool> on_diagonal(index.reshape(Shape(rows)) == index.reshape(Shape(cols)));
  return X(sum(X(where(on_diagonal, x, std::int64_t{0})), Dims({q}), false));
}

/// The operands as the contraction takes them and the output's letters: "..." expanded to one
/// letter per dimension (ellipsis_letter), the size-1 dimensions it broadcasts dropped, and the
/// diagonal taken of each letter repeated within an operand. `size` gets every letter's extent.
template <class X>
std::pair<std::vector<EinsumOperand<X>>, std::string> prepare_einsum(
    const EinsumSpec& spec, const std::vector<X>& operands, std::string_view equation,
    std::map<char, std::int64_t>& size) {
  // How many dimensions "..." covers in each operand, and their broadcast extents.
  std::vector<std::size_t> covered(operands.size(), 0);
  std::vector<std::int64_t> ellipsis;  // right-aligned, as broadcasting aligns
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const std::string& s = spec.inputs[k];
    const Shape shape = operands[k].shape();
    const std::size_t at = s.find(kEinsumEllipsis);
    const std::size_t named = s.size() - (at == std::string::npos ? 0 : 1);
    const std::size_t rank = static_cast<std::size_t>(shape.rank());
    EMBER_CHECK(at == std::string::npos ? rank == named : rank >= named, "ember: einsum: operand ",
                k, " has shape ", shape.str(), " but \"", spec.inputs[k], "\" of \"", equation,
                "\" names ", at == std::string::npos ? "" : "at least ", named, " dimensions");
    if (at == std::string::npos) continue;
    covered[k] = rank - named;
    if (covered[k] > ellipsis.size())
      ellipsis.insert(ellipsis.begin(), covered[k] - ellipsis.size(), 1);
    for (std::size_t j = 0; j < covered[k]; ++j) {
      std::int64_t& e = ellipsis[ellipsis.size() - covered[k] + j];
      const std::int64_t extent = shape[static_cast<int>(at + j)];
      EMBER_CHECK(extent == 1 || e == 1 || e == extent, "ember: einsum: the dimensions of \"...\" ",
                  "do not broadcast: operand ", k, " has shape ", shape.str(), ", its dimension ",
                  at + j, " is ", extent, " where another operand's is ", e, ", in \"", equation,
                  "\"");
      if (extent != 1) e = extent;
    }
  }
  for (std::size_t i = 0; i < ellipsis.size(); ++i) size[ellipsis_letter(i)] = ellipsis[i];

  std::vector<EinsumOperand<X>> prepared;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const Shape shape = operands[k].shape();
    std::string letters;
    std::vector<std::int64_t> extents;
    int d = 0;
    for (const char c : spec.inputs[k]) {
      if (c != kEinsumEllipsis) {
        const auto [it, fresh] = size.emplace(c, shape[d]);
        EMBER_CHECK(fresh || it->second == shape[d], "ember: einsum: letter '", c, "' is ",
                    it->second, " in one operand and ", shape[d], " in operand ", k, " of \"",
                    equation, "\"");
        letters += c;
        extents.push_back(shape[d++]);
        continue;
      }
      for (std::size_t j = ellipsis.size() - covered[k]; j < ellipsis.size(); ++j, ++d) {
        if (shape[d] == 1 && ellipsis[j] != 1) continue;  // broadcast: constant along it
        letters += ellipsis_letter(j);
        extents.push_back(shape[d]);
      }
    }
    X value = operands[k];
    if (extents.size() != static_cast<std::size_t>(shape.rank()))
      value = value.reshape(Shape(extents));
    for (std::size_t p = 0; p < letters.size(); ++p) {
      for (std::size_t q; (q = letters.find(letters[p], p + 1)) != std::string::npos;) {
        value = take_diagonal(value, static_cast<int>(p), static_cast<int>(q));
        letters.erase(q, 1);
      }
    }
    prepared.push_back({value, letters});
  }

  std::string output;
  for (const char c : spec.output) {
    if (c != kEinsumEllipsis) {
      output += c;
      continue;
    }
    for (std::size_t i = 0; i < ellipsis.size(); ++i) output += ellipsis_letter(i);
  }
  return {prepared, output};
}
}  // namespace ember::ops::inline EMBER_UNIT_KIND

namespace ember::inline EMBER_UNIT_KIND {

/// Einstein summation over `operands` (Tensors or Vars of one floating type): see the top.
template <class X>
X einsum(std::string_view equation, const std::vector<X>& operands) {
  std::map<char, std::int64_t> size;
  const auto [prepared, output] =
      ops::prepare_einsum(ops::parse_einsum(equation, operands.size()), operands, equation, size);
  X acc = prepared.front().value;
  std::string letters = prepared.front().letters;
  for (std::size_t k = 1; k < prepared.size(); ++k) {
    std::string keep = output;
    for (std::size_t j = k + 1; j < prepared.size(); ++j) keep += prepared[j].letters;
    std::tie(acc, letters) =
        ops::contract(acc, letters, prepared[k].value, prepared[k].letters, keep, size);
  }
  std::tie(acc, letters) = ops::sum_letters(acc, letters, output);
  return ops::permute_letters(acc, letters, output).contiguous();
}
template <class X>
X einsum(std::string_view equation, std::initializer_list<X> operands) {
  return einsum(equation, std::vector<X>(operands));
}
}  // namespace ember::inline EMBER_UNIT_KIND
