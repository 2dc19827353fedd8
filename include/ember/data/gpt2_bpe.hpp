// GPT-2's byte-level BPE tokenizer (Radford et al., 2019; OpenAI's encoder.py, tiktoken's "gpt2"):
// text -> token ids and back, lossless for any bytes.
//
//   auto bpe = ember::data::Gpt2Bpe::from_tiktoken("gpt2.tiktoken");  // 50,257 tokens
//   std::vector<std::int32_t> ids = bpe.encode("Hello world");      // {15496, 995}
//   std::string text = bpe.decode(ids);
//
// The algorithm, as the reference implementations run it:
// 1. Pre-split: the text is cut into pieces by GPT-2's pattern
//      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//    tried in that order at each position (letters, numbers and white space by Unicode class:
//    bpe_unicode_tables.hpp). A run of white space before a word leaves its last character to
//    the word (" world"); contractions are case-sensitive, as GPT-2's pattern.
// 2. Each piece's UTF-8 bytes start as one token each (every byte is a token), and the adjacent
//    pair whose concatenation has the lowest rank is merged, until no pair has a rank. A token's
//    rank is its id: the merge order of GPT-2's merges.txt, so this is that file's algorithm.
// GPT-2's byte-to-unicode mapping (encoder.json's printable stand-ins for bytes) is only a
// spelling of the same byte strings; the ranks here are of the bytes themselves, as tiktoken's.
//
// The vocabulary. tiktoken's file format: one token a line, its bytes in base64 and its rank
// ("IHRoZQ== 262"). GPT-2's is shipped by PyPI's openai-whisper (whisper/assets/gpt2.tiktoken,
// 50,256 ranks); the end-of-text token <|endoftext|> is id 50256 (kEndOfText), never produced by
// encode() from text (the string "<|endoftext|>" is encoded as ordinary text, as tiktoken's
// encode_ordinary does): append it between documents.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "bpe_unicode_tables.hpp"
#include "python_packages.hpp"

namespace ember::data {

namespace bpe_detail {

/// The code point at byte i of s and its length in bytes; a byte that does not start a valid
/// UTF-8 sequence is one character of its own (class "other").
struct CodePoint {
  char32_t cp;
  std::size_t bytes;
  bool valid;
};
inline CodePoint next_code_point(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned b = byte(i);
  if (b < 0x80) return {b, 1, true};
  std::size_t len = 0;
  char32_t cp = 0;
  unsigned lo = 0x80, hi = 0xBF;  // the valid range of the second byte (RFC 3629)
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2, cp = b & 0x1F;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3, cp = b & 0x0F, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4, cp = b & 0x07, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
  } else {
    return {0xFFFD, 1, false};
  }
  if (i + len > s.size()) return {0xFFFD, 1, false};
  for (std::size_t k = 1; k < len; ++k) {
    const unsigned c = byte(i + k);
    if (c < (k == 1 ? lo : 0x80u) || c > (k == 1 ? hi : 0xBFu)) return {0xFFFD, 1, false};
    cp = (cp << 6) | (c & 0x3F);
  }
  return {cp, len, true};
}

inline bpe_unicode::CharClass char_class(const CodePoint& c) {
  if (!c.valid) return bpe_unicode::kOther;
  const auto& runs = bpe_unicode::kClassRuns;
  std::size_t lo = 0, hi = std::size(runs);  // the last run whose first <= cp
  while (hi - lo > 1) {
    const std::size_t mid = (lo + hi) / 2;
    (runs[mid].first <= c.cp ? lo : hi) = mid;
  }
  return static_cast<bpe_unicode::CharClass>(runs[lo].cls);
}

inline std::string base64_decode(std::string_view text) {
  const auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (const char c : text) {
    if (c == '=') break;
    const int v = value(c);
    EMBER_CHECK(v >= 0, "ember: gpt2_bpe: '", std::string(text), "' is not base64");
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace bpe_detail

class Gpt2Bpe {
 public:
  /// GPT-2's end-of-text token.
  static constexpr std::int32_t kEndOfText = 50256;

  /// Ranks from tiktoken's file format (base64 bytes, space, rank, a line each). Ranks must be
  /// 0..n-1, each once, and the 256 single bytes must all be there.
  static Gpt2Bpe from_tiktoken(const std::filesystem::path& path) {
    std::ifstream in(path);
    EMBER_CHECK(in, "ember: gpt2_bpe: cannot open '", path.string(), "'");
    Gpt2Bpe bpe;
    std::string line;
    std::size_t number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (line.empty()) continue;
      const std::size_t space = line.find(' ');
      EMBER_CHECK(space != std::string::npos, "ember: gpt2_bpe: ", path.string(), ":", number,
                  ": expected '<base64> <rank>'");
      const std::string bytes = bpe_detail::base64_decode(std::string_view(line).substr(0, space));
      const long long rank = std::stoll(line.substr(space + 1));
      EMBER_CHECK(rank >= 0 && rank < std::numeric_limits<std::int32_t>::max(),
                  "ember: gpt2_bpe: ", path.string(), ":", number, ": rank ", rank);
      if (bpe.tokens_.size() <= static_cast<std::size_t>(rank)) {
        bpe.tokens_.resize(static_cast<std::size_t>(rank) + 1);
      }
      EMBER_CHECK(bpe.ranks_.emplace(bytes, static_cast<std::int32_t>(rank)).second,
                  "ember: gpt2_bpe: ", path.string(), ":", number, ": a token listed twice");
      bpe.tokens_[static_cast<std::size_t>(rank)] = bytes;
    }
    EMBER_CHECK(bpe.ranks_.size() == bpe.tokens_.size(), "ember: gpt2_bpe: ", path.string(),
                ": ranks are not 0..", bpe.tokens_.size() - 1, " each once");
    for (int b = 0; b < 256; ++b) {
      EMBER_CHECK(bpe.ranks_.count(std::string(1, static_cast<char>(b))) == 1,
                  "ember: gpt2_bpe: ", path.string(), ": byte ", b, " has no token");
    }
    return bpe;
  }

  /// GPT-2's vocabulary file: $EMBER_GPT2_VOCAB, else openai-whisper's copy where pip installed
  /// it (pip install --no-deps openai-whisper); none when neither is there.
  static std::optional<std::filesystem::path> find_vocabulary() {
    if (const char* path = std::getenv("EMBER_GPT2_VOCAB")) return std::filesystem::path(path);
    return find_python_package_file(std::filesystem::path("whisper") / "assets" / "gpt2.tiktoken");
  }

  /// The number of token ids: the ranks and the end-of-text token.
  std::int64_t vocab_size() const { return static_cast<std::int64_t>(tokens_.size()) + 1; }

  /// The pieces GPT-2's pattern cuts `text` into (views into it).
  static std::vector<std::string_view> pre_split(std::string_view text) {
    // One name a declaration: nvcc's front end fails on a list of them.
    using bpe_unicode::kLetter;
    using bpe_unicode::kNumber;
    using bpe_unicode::kOther;
    using bpe_unicode::kSpace;
    struct Char {
      std::size_t at;
      char32_t cp;
      bpe_unicode::CharClass cls;
    };
    std::vector<Char> chars;
    for (std::size_t i = 0; i < text.size();) {
      const bpe_detail::CodePoint c = bpe_detail::next_code_point(text, i);
      chars.push_back({i, c.cp, bpe_detail::char_class(c)});
      i += c.bytes;
    }
    const std::size_t n = chars.size();
    const auto byte_at = [&](std::size_t k) { return k < n ? chars[k].at : text.size(); };
    const auto run_end = [&](std::size_t k, auto in_run) {
      while (k < n && in_run(chars[k].cls)) ++k;
      return k;
    };
    std::vector<std::string_view> pieces;
    std::size_t pos = 0;
    while (pos < n) {
      std::size_t end = pos;
      const auto at = [&](std::size_t k) { return k < n ? chars[k].cp : char32_t{0}; };
      // 's 't 're 've 'm 'll 'd
      if (at(pos) == U'\'') {
        const char32_t a = at(pos + 1), b = at(pos + 2);
        if (a == U's' || a == U't' || a == U'm' || a == U'd') end = pos + 2;
        if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) {
          end = pos + 3;
        }
      }
      //  ?\p{L}+,  ?\p{N}+,  ?[^\s\p{L}\p{N}]+
      if (end == pos) {
        const std::size_t first = at(pos) == U' ' && pos + 1 < n ? pos + 1 : pos;
        for (const auto cls : {kLetter, kNumber, kOther}) {
          const auto same = [cls](bpe_unicode::CharClass c) { return c == cls; };
          if (chars[first].cls == cls) {  // (a leading space is in none of the three classes)
            end = run_end(first, same);
            break;
          }
        }
      }
      // \s+(?!\S), then \s+
      if (end == pos) {
        const std::size_t run = run_end(pos, [](bpe_unicode::CharClass c) { return c == kSpace; });
        end = run == n || run - pos < 2 ? run : run - 1;
      }
      pieces.push_back(text.substr(chars[pos].at, byte_at(end) - chars[pos].at));
      pos = end;
    }
    return pieces;
  }

  /// The token ids of `text` (any bytes; "<|endoftext|>" in it is ordinary text).
  std::vector<std::int32_t> encode(std::string_view text) const {
    std::vector<std::int32_t> ids;
    std::unordered_map<std::string_view, std::vector<std::int32_t>> seen;  // pieces repeat
    for (const std::string_view piece : pre_split(text)) {
      auto it = seen.find(piece);
      if (it == seen.end()) it = seen.emplace(piece, encode_piece(piece)).first;
      ids.insert(ids.end(), it->second.begin(), it->second.end());
    }
    return ids;
  }

  /// The bytes of `ids` (kEndOfText as "<|endoftext|>"); an id outside the vocabulary is an error.
  std::string decode(const std::vector<std::int32_t>& ids) const {
    std::string out;
    for (const std::int32_t id : ids) {
      if (id == kEndOfText) {
        out += "<|endoftext|>";
        continue;
      }
      EMBER_CHECK(id >= 0 && static_cast<std::size_t>(id) < tokens_.size(), "ember: gpt2_bpe: id ",
                  id, " is outside the vocabulary of ", vocab_size());
      out += tokens_[static_cast<std::size_t>(id)];
    }
    return out;
  }

 private:
  Gpt2Bpe() = default;

  /// BPE of one piece's bytes: merge the adjacent pair of lowest rank until none has a rank.
  std::vector<std::int32_t> encode_piece(std::string_view piece) const {
    if (const auto whole = ranks_.find(std::string(piece)); whole != ranks_.end()) {
      return {whole->second};
    }
    std::vector<std::size_t> starts(piece.size() + 1);  // part k is [starts[k], starts[k + 1])
    for (std::size_t i = 0; i <= piece.size(); ++i) starts[i] = i;
    std::string pair;
    while (starts.size() > 2) {
      std::int32_t best = std::numeric_limits<std::int32_t>::max();
      std::size_t best_at = 0;
      for (std::size_t k = 0; k + 2 < starts.size(); ++k) {
        pair.assign(piece.substr(starts[k], starts[k + 2] - starts[k]));
        const auto r = ranks_.find(pair);
        if (r != ranks_.end() && r->second < best) best = r->second, best_at = k;
      }
      if (best == std::numeric_limits<std::int32_t>::max()) break;
      starts.erase(starts.begin() + static_cast<std::ptrdiff_t>(best_at) + 1);
    }
    std::vector<std::int32_t> ids;
    for (std::size_t k = 0; k + 1 < starts.size(); ++k) {
      ids.push_back(ranks_.at(std::string(piece.substr(starts[k], starts[k + 1] - starts[k]))));
    }
    return ids;
  }

  std::unordered_map<std::string, std::int32_t> ranks_;
  std::vector<std::string> tokens_;  // by rank
};

}  // namespace ember::data
