// BERT's WordPiece tokenizer: text to the token ids of a BERT vocab.txt, equal to Hugging Face's
// BertTokenizer (transformers' Python BasicTokenizer + WordpieceTokenizer) on the same vocab.
// See docs/data.md, "WordPiece tokenizer".
//
// The pipeline, as BERT's:
//   1. UTF-8 to code points. Bytes that are not valid UTF-8 (stray continuation bytes, overlong
//      forms, surrogates, above U+10FFFF, a sequence cut short) become U+FFFD, as Python's
//      bytes.decode("utf-8", errors="replace") makes them; step 2 then drops them.
//   2. Cleaning: NUL, U+FFFD and control characters (categories C*, tab/newline/return excepted)
//      are dropped; whitespace (space, tab, newline, return, Zs) becomes a space. CJK ideographs
//      get a space on each side.
//   3. Split at spaces (and at U+2028/U+2029, where Python's str.split() splits too).
//   4. When lower-casing: each word through Python's str.lower() (with its final-sigma rule),
//      then NFD, then combining marks (category Mn) dropped.
//   5. Each punctuation character (category P*, or ASCII 33-47, 58-64, 91-96, 123-126) becomes a
//      word of its own.
//   6. Greedy longest-match-first WordPiece with "##" continuations; a word longer than
//      max_input_chars_per_word code points, or one that cannot be covered, is [UNK].
//
// The Unicode data (unicode_tables.hpp) is generated from Python's unicodedata, so ids equal
// BertTokenizer's run under a Python with the same Unicode version (tables: 14.0.0, Python 3.11).
// Needs nothing beyond the standard library; not included by <ember/ember.hpp>.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "unicode_tables.hpp"

namespace ember::data {

/// Options of a WordPieceTokenizer; the defaults are those of BERT's uncased vocabularies.
struct WordPieceOptions {
  /// Lower-case and strip accents (uncased vocabularies). False keeps case and accents (cased
  /// vocabularies, BertTokenizer(do_lower_case=False)).
  bool lower_case = true;
  /// Longer words (in code points, after normalization) become the unknown token.
  std::size_t max_input_chars_per_word = 100;
  /// The unknown token; it must be in the vocab.
  std::string unk = "[UNK]";
};

/// What encode_pair returns: [CLS] a [SEP] b [SEP] and the segment of each token (0 for [CLS],
/// a and the first [SEP]; 1 for b and the last [SEP]).
struct EncodedPair {
  std::vector<std::int64_t> input_ids;
  std::vector<std::int64_t> token_type_ids;
};

namespace detail::wp {

inline constexpr char32_t kReplacement = 0xFFFD;

/// Decodes UTF-8; every byte that does not start a valid sequence, and every sequence cut
/// short, gives one U+FFFD (one per byte, where Python gives one per maximal invalid subpart:
/// the count does not matter, cleaning drops them).
inline std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned b = p[i];
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    }
    int len = 0;
    char32_t cp = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the valid range of the second byte (RFC 3629's table)
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2, cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3, cp = b & 0x0F;
      if (b == 0xE0) lo = 0xA0;  // overlong
      if (b == 0xED) hi = 0x9F;  // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4, cp = b & 0x07;
      if (b == 0xF0) lo = 0x90;  // overlong
      if (b == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      out.push_back(kReplacement);  // C0, C1, F5-FF, or a stray continuation byte
      ++i;
      continue;
    }
    int k = 1;
    for (; k < len && i + static_cast<std::size_t>(k) < n; ++k) {
      const unsigned c = p[i + static_cast<std::size_t>(k)];
      if (c < (k == 1 ? lo : 0x80u) || c > (k == 1 ? hi : 0xBFu)) break;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (k < len) {
      out.push_back(kReplacement);  // the valid prefix is replaced; resume at the bad byte
      i += static_cast<std::size_t>(k);
      continue;
    }
    out.push_back(cp);
    i += static_cast<std::size_t>(len);
  }
  return out;
}

inline void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

inline bool valid_utf8(std::string_view s) {
  const std::u32string cps = decode_utf8(s);
  std::string back;
  for (char32_t c : cps) append_utf8(back, c);
  return back == s;
}

inline std::uint8_t props(char32_t cp) {
  using unicode::kPropRuns;
  const auto* it =
      std::upper_bound(std::begin(kPropRuns), std::end(kPropRuns), cp,
                       [](char32_t c, const unicode::PropRun& r) { return c < r.first; });
  return it == std::begin(kPropRuns) ? std::uint8_t{unicode::kControl} : (it - 1)->props;
}
inline unicode::CharClass char_class(char32_t cp) {
  return static_cast<unicode::CharClass>(props(cp) & 7);
}
inline unicode::CaseClass case_class(char32_t cp) {
  return static_cast<unicode::CaseClass>((props(cp) >> 3) & 3);
}

/// The CJK ideograph blocks BERT puts spaces around (its _is_chinese_char). Hangul, kana and
/// the other CJK scripts are words like any other.
inline bool is_cjk(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/// The one-code-point lower case of `cp` (itself when it has none).
inline char32_t simple_lower(char32_t cp) {
  using unicode::kLowerRuns;
  const auto* it =
      std::upper_bound(std::begin(kLowerRuns), std::end(kLowerRuns), cp,
                       [](char32_t c, const unicode::LowerRun& r) { return c < r.first; });
  if (it == std::begin(kLowerRuns)) return cp;
  const unicode::LowerRun& r = *(it - 1);
  if (cp > r.last || (cp - r.first) % r.stride != 0) return cp;
  return static_cast<char32_t>(static_cast<std::int64_t>(cp) + r.delta);
}

/// Python's str.lower() of a word: simple mappings, U+0130 to "i" + U+0307 (its only
/// multi-code-point mapping), and capital sigma to final sigma where CPython's
/// handle_capital_sigma says: after a cased letter and not before one, case-ignorable
/// characters skipped both ways.
inline void lower_word(const char32_t* w, std::size_t n, std::u32string& out) {
  for (std::size_t i = 0; i < n; ++i) {
    const char32_t c = w[i];
    if (c == 0x130) {
      out.push_back(U'i');
      out.push_back(0x307);
    } else if (c == 0x3A3) {
      std::size_t j = i;
      while (j > 0 && case_class(w[j - 1]) == unicode::kCaseIgnorable) --j;
      bool final_sigma = j > 0 && case_class(w[j - 1]) == unicode::kCaseCased;
      if (final_sigma) {
        std::size_t k = i + 1;
        while (k < n && case_class(w[k]) == unicode::kCaseIgnorable) ++k;
        final_sigma = k == n || case_class(w[k]) != unicode::kCaseCased;
      }
      out.push_back(final_sigma ? 0x3C2 : 0x3C3);
    } else {
      out.push_back(simple_lower(c));
    }
  }
}

inline std::uint8_t ccc(char32_t cp) {
  using unicode::kCccRuns;
  const auto* it =
      std::upper_bound(std::begin(kCccRuns), std::end(kCccRuns), cp,
                       [](char32_t c, const unicode::CccRun& r) { return c < r.first; });
  if (it == std::begin(kCccRuns) || cp > (it - 1)->last) return 0;
  return (it - 1)->ccc;
}

/// Appends the canonical decomposition of `cp` (Hangul syllables by the algorithm of the
/// Unicode standard, section 3.12; the others from the table, already fully decomposed).
inline void decompose(char32_t cp, std::u32string& out) {
  constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
  constexpr char32_t kTCount = 28, kNCount = 21 * 28, kSCount = 19 * 21 * 28;
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  using unicode::kDecomps;
  const auto* it = std::lower_bound(std::begin(kDecomps), std::end(kDecomps), cp,
                                    [](const unicode::Decomp& d, char32_t c) { return d.cp < c; });
  if (it == std::end(kDecomps) || it->cp != cp) {
    out.push_back(cp);
    return;
  }
  out.append(unicode::kDecompPool + it->offset, it->length);
}

/// NFD: every code point decomposed, then each run of non-zero combining classes sorted
/// stably by class (canonical ordering).
inline std::u32string nfd(const std::u32string& s) {
  std::u32string out;
  out.reserve(s.size() + s.size() / 2);
  for (char32_t c : s) decompose(c, out);
  for (std::size_t i = 1; i < out.size(); ++i) {  // insertion sort: runs are short
    const std::uint8_t k = ccc(out[i]);
    if (k == 0) continue;
    std::size_t j = i;
    while (j > 0) {
      const std::uint8_t prev = ccc(out[j - 1]);
      if (prev == 0 || prev <= k) break;
      std::swap(out[j - 1], out[j]);
      --j;
    }
  }
  return out;
}

}  // namespace detail::wp

/// BERT's WordPiece tokenizer over a vocab.txt. Immutable after construction, so one instance
/// may be shared by threads.
class WordPieceTokenizer {
 public:
  /// Reads a BERT vocab.txt: one token per line, the id of a token is its line number from 0
  /// (as transformers' load_vocab: only the "\n" is stripped; a token listed twice keeps its
  /// last line's id). Throws ember::Error naming the file when it cannot be read, is empty,
  /// holds a line that is not UTF-8, or lacks one of [CLS] [SEP] [MASK] [PAD] or the unknown
  /// token.
  explicit WordPieceTokenizer(const std::filesystem::path& vocab_file,
                              const WordPieceOptions& opts = {})
      : opts_(opts) {
    const std::string where =
        ::ember::detail::concat("ember: WordPieceTokenizer: '", vocab_file.string(), "'");
    std::ifstream in(vocab_file, std::ios::binary);
    if (!in) fail(where, ": cannot open the file: ", std::system_category().message(errno));
    std::vector<std::string> tokens;
    std::string line;
    while (std::getline(in, line)) tokens.push_back(line);
    EMBER_CHECK(!in.bad(), where, ": cannot read the file");
    init(std::move(tokens), where);
  }

  /// A tokenizer over the given tokens (id = position), for vocabularies built in memory.
  explicit WordPieceTokenizer(std::vector<std::string> tokens, const WordPieceOptions& opts = {})
      : opts_(opts) {
    init(std::move(tokens), "ember: WordPieceTokenizer");
  }

  const WordPieceOptions& options() const { return opts_; }
  std::int64_t vocab_size() const { return static_cast<std::int64_t>(tokens_.size()); }

  /// The id of `token`, or the unknown token's id when the vocab lacks it (as HF's
  /// convert_tokens_to_ids).
  std::int64_t id(std::string_view token) const {
    const auto it = ids_.find(std::string(token));
    return it == ids_.end() ? unk_id_ : it->second;
  }
  /// Whether the vocab holds `token`.
  bool contains(std::string_view token) const { return ids_.count(std::string(token)) != 0; }
  /// The token of `id`; throws ember::Error when it is outside [0, vocab_size()).
  const std::string& token(std::int64_t id) const {
    EMBER_CHECK(id >= 0 && id < vocab_size(), "ember: WordPieceTokenizer::token: id ", id,
                " is outside the vocab [0, ", vocab_size(), ")");
    return tokens_[static_cast<std::size_t>(id)];
  }

  std::int64_t cls_id() const { return cls_id_; }
  std::int64_t sep_id() const { return sep_id_; }
  std::int64_t mask_id() const { return mask_id_; }
  std::int64_t pad_id() const { return pad_id_; }
  std::int64_t unk_id() const { return unk_id_; }

  /// BERT's basic tokenization (cleaning, CJK, lower case and accents, whitespace and
  /// punctuation splits): the words WordPiece then splits, as UTF-8.
  std::vector<std::string> basic_tokenize(std::string_view text) const {
    std::vector<std::string> out;
    for_each_word(text, [&](const std::u32string& w) {
      std::string s;
      for (char32_t c : w) detail::wp::append_utf8(s, c);
      out.push_back(std::move(s));
    });
    return out;
  }

  /// The word pieces of `text` ("##" marking continuations; the unknown token for words that
  /// cannot be split), without special tokens. HF: tokenizer.tokenize(text).
  std::vector<std::string> tokenize(std::string_view text) const {
    std::vector<std::string> out;
    pieces(text, [&](std::int64_t id) { out.push_back(tokens_[static_cast<std::size_t>(id)]); });
    return out;
  }

  /// The ids of `text`'s word pieces, without special tokens. HF:
  /// tokenizer.encode(text, add_special_tokens=False).
  std::vector<std::int64_t> encode(std::string_view text) const {
    std::vector<std::int64_t> out;
    pieces(text, [&](std::int64_t id) { out.push_back(id); });
    return out;
  }

  /// [CLS] a [SEP] b [SEP] and the token types, at most `max_len` ids: when longer, tokens are
  /// dropped one at a time from the end of the longer side (of b when they are as long), HF's
  /// truncation="longest_first". HF: tokenizer(a, b, truncation="longest_first",
  /// max_length=max_len). Throws ember::Error when max_len < 3.
  EncodedPair encode_pair(std::string_view a, std::string_view b, std::size_t max_len) const {
    EMBER_CHECK(max_len >= 3, "ember: WordPieceTokenizer::encode_pair: max_len ", max_len,
                " leaves no room for [CLS] and the two [SEP]");
    std::vector<std::int64_t> ia = encode(a), ib = encode(b);
    while (ia.size() + ib.size() + 3 > max_len) {
      if (ia.size() > ib.size()) {
        ia.pop_back();
      } else {
        ib.pop_back();
      }
    }
    EncodedPair p;
    p.input_ids.reserve(ia.size() + ib.size() + 3);
    p.input_ids.push_back(cls_id_);
    p.input_ids.insert(p.input_ids.end(), ia.begin(), ia.end());
    p.input_ids.push_back(sep_id_);
    p.token_type_ids.assign(p.input_ids.size(), 0);
    p.input_ids.insert(p.input_ids.end(), ib.begin(), ib.end());
    p.input_ids.push_back(sep_id_);
    p.token_type_ids.resize(p.input_ids.size(), 1);
    return p;
  }

 private:
  void init(std::vector<std::string> tokens, const std::string& where) {
    EMBER_CHECK(!tokens.empty(), where, ": the vocab is empty");
    tokens_ = std::move(tokens);
    ids_.reserve(tokens_.size());
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      EMBER_CHECK(detail::wp::valid_utf8(tokens_[i]), where, ": line ", i + 1,
                  " is not valid UTF-8");
      ids_[tokens_[i]] = static_cast<std::int64_t>(i);
      // The longest piece bounds the matches worth trying (code points, "##" not counted).
      std::string_view t = tokens_[i];
      if (t.size() >= 2 && t.substr(0, 2) == "##") t.remove_prefix(2);
      max_piece_ = std::max(max_piece_, detail::wp::decode_utf8(t).size());
    }
    auto special = [&](const std::string& name) {
      const auto it = ids_.find(name);
      EMBER_CHECK(it != ids_.end(), where, ": the vocab has no ", name,
                  " token (is this a BERT vocab.txt?)");
      return it->second;
    };
    unk_id_ = special(opts_.unk);
    cls_id_ = special("[CLS]");
    sep_id_ = special("[SEP]");
    mask_id_ = special("[MASK]");
    pad_id_ = special("[PAD]");
  }

  // Calls f(word) for each word of the basic tokenization, as code points.
  template <class F>
  void for_each_word(std::string_view text, F&& f) const {
    using namespace detail::wp;
    const std::u32string in = decode_utf8(text);
    // Cleaning and CJK spacing, in one pass.
    std::u32string clean;
    clean.reserve(in.size());
    for (char32_t c : in) {
      if (c == 0 || c == kReplacement) continue;
      const unicode::CharClass k = char_class(c);
      if (k == unicode::kControl) continue;
      if (k == unicode::kSpace || k == unicode::kBreak) {
        clean.push_back(U' ');  // U+2028/9 survive HF's cleaning, but only to split words there
      } else if (is_cjk(c)) {
        clean.push_back(U' ');
        clean.push_back(c);
        clean.push_back(U' ');
      } else {
        clean.push_back(c);
      }
    }
    // HF normalizes the text to NFC here. With lower_case the words then go through lower()
    // and NFD, which give the same as without the NFC (test_wordpiece.cpp checks
    // every code point). Without lower_case, text not already in NFC differs: see docs/data.md.
    std::u32string word, lowered, piece;
    std::size_t i = 0;
    while (i < clean.size()) {
      while (i < clean.size() && clean[i] == U' ') ++i;
      const std::size_t start = i;
      while (i < clean.size() && clean[i] != U' ') ++i;
      if (i == start) break;
      word.assign(clean, start, i - start);
      if (opts_.lower_case) {
        lowered.clear();
        lower_word(word.data(), word.size(), lowered);
        const std::u32string d = nfd(lowered);
        word.clear();
        for (char32_t c : d) {
          if (char_class(c) != unicode::kMark) word.push_back(c);
        }
      }
      // Punctuation splits: each punctuation character is a word of its own.
      piece.clear();
      for (char32_t c : word) {
        if (char_class(c) == unicode::kPunct) {
          if (!piece.empty()) f(piece);
          piece.assign(1, c);
          f(piece);
          piece.clear();
        } else {
          piece.push_back(c);
        }
      }
      if (!piece.empty()) f(piece);
    }
  }

  // Calls emit(id) for each word piece of `text`.
  template <class Emit>
  void pieces(std::string_view text, Emit&& emit) const {
    std::string utf8, candidate;
    std::vector<std::size_t> at;  // byte offset of each code point in utf8, and the end
    std::vector<std::int64_t> found;
    for_each_word(text, [&](const std::u32string& w) {
      if (w.size() > opts_.max_input_chars_per_word) {
        emit(unk_id_);
        return;
      }
      utf8.clear();
      at.clear();
      for (char32_t c : w) {
        at.push_back(utf8.size());
        detail::wp::append_utf8(utf8, c);
      }
      at.push_back(utf8.size());
      // Greedy longest match first, from the left; a piece after the first starts with "##".
      found.clear();
      const std::size_t n = w.size();
      std::size_t start = 0;
      while (start < n) {
        std::size_t end = std::min(n, start + max_piece_);
        std::int64_t hit = -1;
        for (; end > start; --end) {
          candidate.assign(start > 0 ? "##" : "");
          candidate.append(utf8, at[start], at[end] - at[start]);
          const auto it = ids_.find(candidate);
          if (it != ids_.end()) {
            hit = it->second;
            break;
          }
        }
        if (hit < 0) {  // this part matches nothing: the whole word is unknown
          emit(unk_id_);
          return;
        }
        found.push_back(hit);
        start = end;
      }
      for (std::int64_t id : found) emit(id);
    });
  }

  WordPieceOptions opts_;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, std::int64_t> ids_;
  std::size_t max_piece_ = 0;
  std::int64_t unk_id_ = 0, cls_id_ = 0, sep_id_ = 0, mask_id_ = 0, pad_id_ = 0;
};

/// bert_tokenize's loop: for each line of `in` (split at "\n"), one line on `out` with the ids
/// of its word pieces separated by spaces (no special tokens; an empty line for a line without
/// tokens). Returns the number of lines.
inline std::size_t encode_lines(const WordPieceTokenizer& tok, std::istream& in,
                                std::ostream& out) {
  std::string line;
  std::size_t lines = 0;
  while (std::getline(in, line)) {
    const std::vector<std::int64_t> ids = tok.encode(line);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i) out << ' ';
      out << ids[i];
    }
    out << '\n';
    ++lines;
  }
  return lines;
}

}  // namespace ember::data
