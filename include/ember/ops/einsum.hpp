// einsum(equation, operands): Einstein summation over Tensors or Vars, torch.einsum's notation:
//
//   einsum("ij,jk->ik", {a, b})      a matrix product
//   einsum("bij,bjk->bik", {a, b})   a batched one
//   einsum("ij->j", {a})             a sum over i;   einsum("ij->ji", {a}) a transpose
//   einsum("i,j->ij", {u, v})        an outer product;  "ij,ij->" the sum of the products
//   einsum("ij,jk", {a, b})          no "->": the letters that occur once, in alphabetical order
//
// Letters are a-z and A-Z; each names one extent, equal in every operand. The operands are
// contracted left to right, two at a time: letters no later operand and not the output need
// are summed first (a reduction), then the pair is one batched matmul (shared letters kept by
// the output or later operands are the batch, shared letters not kept are contracted), then a
// final permute puts the output's letters in order. Everything is made of permute, reshape, sum
// and matmul, so Vars get their backward from those, and both devices work.
// Not supported (an ember::Error says so): "..." (broadcast dimensions) and a letter repeated
// within one operand (a diagonal, "ii->i").
#pragma once

#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/shape.hpp"
#include "../exec/reduce.hpp"
#include "matmul.hpp"

namespace ember {

namespace ops {

/// The equation, parsed: each operand's letters and the output's.
struct EinsumSpec {
  std::vector<std::string> inputs;
  std::string output;
};

inline EinsumSpec parse_einsum(std::string_view equation, std::size_t operands) {
  std::string eq;
  for (const char c : equation) {
    if (c != ' ') eq += c;
  }
  EMBER_CHECK(eq.find("...") == std::string::npos, "ember: einsum: \"...\" (broadcast dimensions) ",
              "is not supported, in \"", equation, "\"");
  EinsumSpec spec;
  const std::size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::string current;
  for (const char c : lhs + ",") {
    if (c == ',') {
      spec.inputs.push_back(current);
      current.clear();
    } else {
      EMBER_CHECK(std::isalpha(static_cast<unsigned char>(c)), "ember: einsum: '", c,
                  "' is not a letter, in \"", equation, "\"");
      EMBER_CHECK(current.find(c) == std::string::npos, "ember: einsum: '", c,
                  "' repeats within one operand (a diagonal), which is not supported, in \"",
                  equation, "\"");
      current += c;
    }
  }
  EMBER_CHECK(spec.inputs.size() == operands, "ember: einsum: \"", equation, "\" names ",
              spec.inputs.size(), " operands, ", operands, " were given");
  std::map<char, int> count;
  for (const std::string& s : spec.inputs) {
    for (const char c : s) ++count[c];
  }
  if (arrow == std::string::npos) {
    for (const auto& [c, n] : count) {  // std::map: in ASCII order
      if (n == 1) spec.output += c;
    }
  } else {
    for (const char c : eq.substr(arrow + 2)) {
      EMBER_CHECK(std::isalpha(static_cast<unsigned char>(c)), "ember: einsum: '", c,
                  "' is not a letter, in the output of \"", equation, "\"");
      EMBER_CHECK(count.count(c) == 1, "ember: einsum: output letter '", c,
                  "' is in no operand, in \"", equation, "\"");
      EMBER_CHECK(spec.output.find(c) == std::string::npos, "ember: einsum: output letter '", c,
                  "' repeats, in \"", equation, "\"");
      spec.output += c;
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

}  // namespace ops

/// Einstein summation over `operands` (Tensors or Vars of one floating type): see the top.
template <class X>
X einsum(std::string_view equation, const std::vector<X>& operands) {
  const ops::EinsumSpec spec = ops::parse_einsum(equation, operands.size());
  std::map<char, std::int64_t> size;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const std::string& s = spec.inputs[k];
    const Shape shape = operands[k].shape();
    EMBER_CHECK(static_cast<int>(s.size()) == shape.rank(), "ember: einsum: operand ", k,
                " has shape ", shape.str(), " but \"", s, "\" names ", s.size(), " dimensions");
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto [it, fresh] = size.emplace(s[i], shape[static_cast<int>(i)]);
      EMBER_CHECK(fresh || it->second == shape[static_cast<int>(i)], "ember: einsum: letter '",
                  s[i], "' is ", it->second, " in one operand and ", shape[static_cast<int>(i)],
                  " in operand ", k);
    }
  }
  X acc = operands.front();
  std::string letters = spec.inputs.front();
  for (std::size_t k = 1; k < operands.size(); ++k) {
    std::string keep = spec.output;
    for (std::size_t j = k + 1; j < operands.size(); ++j) keep += spec.inputs[j];
    std::tie(acc, letters) = ops::contract(acc, letters, operands[k], spec.inputs[k], keep, size);
  }
  std::tie(acc, letters) = ops::sum_letters(acc, letters, spec.output);
  return ops::permute_letters(acc, letters, spec.output).contiguous();
}
template <class X>
X einsum(std::string_view equation, std::initializer_list<X> operands) {
  return einsum(equation, std::vector<X>(operands));
}

}  // namespace ember
