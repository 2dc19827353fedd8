// BERT pretraining corpora as documents: a Document is a list of sentences. split_sentences cuts
// running text into sentences by rule; read_text_documents reads Google's input format (one
// sentence per line, a blank line between documents; gzip-compressed files too). Dictionary
// corpora: gcide.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ember/core/error.hpp>
#include <ember/data/idx.hpp>

namespace bert {

/// A document: its sentences, in order.
using Document = std::vector<std::string>;
/// A tokenized document: the WordPiece ids of each sentence (no empty sentence).
using TokenizedDocument = std::vector<std::vector<std::int32_t>>;

// ---- sentences ----------------------------------------------------------------------------------

namespace detail::pt {

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
inline bool is_upper_ascii(char c) { return c >= 'A' && c <= 'Z'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_alpha_ascii(char c) { return (c >= 'a' && c <= 'z') || is_upper_ascii(c); }
inline char lower_ascii(char c) { return is_upper_ascii(c) ? static_cast<char>(c - 'A' + 'a') : c; }

/// The bytes of a closing quote or bracket starting at s[i] (0 when there is none): " ' ) ]
/// and the UTF-8 right quotes ’ ” and ».
inline std::size_t closer_at(std::string_view s, std::size_t i) {
  const char c = s[i];
  if (c == '"' || c == '\'' || c == ')' || c == ']') return 1;
  if (s.substr(i, 3) == "\xE2\x80\x99" || s.substr(i, 3) == "\xE2\x80\x9D") return 3;
  if (s.substr(i, 2) == "\xC2\xBB") return 2;
  return 0;
}

/// Whether a sentence may start at s[i]: an upper-case letter (ASCII, or Latin-1's À-Þ), a
/// digit, or an opening quote (" ' “ ‘ «).
inline bool sentence_start_at(std::string_view s, std::size_t i) {
  const char c = s[i];
  if (is_upper_ascii(c) || is_digit(c) || c == '"' || c == '\'') return true;
  const auto u = [&](std::size_t k) {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
  };
  if (u(0) == 0xC3 && u(1) >= 0x80 && u(1) <= 0x9E && u(1) != 0x97) return true;    // À-Þ, not ×
  if (u(0) == 0xE2 && u(1) == 0x80 && (u(2) == 0x9C || u(2) == 0x98)) return true;  // “ ‘
  if (u(0) == 0xC2 && u(1) == 0xAB) return true;                                    // «
  return false;
}

/// Abbreviations after which a period never ends a sentence (compared in lower case).
inline bool is_abbreviation(std::string_view word) {
  static constexpr std::array<std::string_view, 48> kAbbreviations{
      "mr",  "mrs",    "ms",  "dr",  "prof", "sr",  "jr",     "st",   "rev", "gen", "col", "capt",
      "lt",  "sgt",    "hon", "gov", "pres", "mt",  "messrs", "mme",  "vs",  "etc", "cf",  "viz",
      "al",  "approx", "ca",  "fig", "figs", "vol", "vols",   "pp",   "no",  "nos", "esp", "jan",
      "feb", "mar",    "apr", "jun", "jul",  "aug", "sep",    "sept", "oct", "nov", "dec", "ibid"};
  if (word.empty() || word.size() > 6) return false;
  char buf[8];
  for (std::size_t i = 0; i < word.size(); ++i) buf[i] = lower_ascii(word[i]);
  const std::string_view lower(buf, word.size());
  return std::find(kAbbreviations.begin(), kAbbreviations.end(), lower) != kAbbreviations.end();
}

/// Whether the period at s[dot] belongs to an abbreviation or an initial: the word before it
/// (back to a space or an opening bracket or quote) ends in a single letter after a '.' or at
/// its start ("J.", "e.g.", "U.S."), or is a listed abbreviation ("Mr.", "etc.").
inline bool period_is_abbreviation(std::string_view s, std::size_t dot) {
  std::size_t b = dot;
  while (b > 0 && !is_space(s[b - 1]) && s[b - 1] != '(' && s[b - 1] != '[' && s[b - 1] != '"' &&
         s[b - 1] != '\'') {
    --b;
  }
  const std::string_view word = s.substr(b, dot - b);
  if (word.empty()) return false;
  const std::size_t last_dot = word.rfind('.');
  const std::string_view part =
      last_dot == std::string_view::npos ? word : word.substr(last_dot + 1);
  if (part.size() == 1 && is_alpha_ascii(part[0])) return true;
  return last_dot == std::string_view::npos && is_abbreviation(part);
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace detail::pt

/// The sentences of `text`, by rule: a sentence ends at '.', '!' or '?' (a run of them, then any
/// closing quotes or brackets) followed by whitespace and a character that may start a sentence
/// (an upper-case letter, a digit, an opening quote), unless the '.' ends an abbreviation or an
/// initial (see detail::pt::period_is_abbreviation). A period inside a number (3.5) is followed by
/// no whitespace and never splits. Whitespace runs become one space; sentences are trimmed and
/// empty ones dropped.
inline std::vector<std::string> split_sentences(std::string_view text) {
  using namespace detail::pt;
  std::string s;  // whitespace collapsed
  s.reserve(text.size());
  for (char c : text) {
    if (is_space(c)) {
      if (!s.empty() && s.back() != ' ') s.push_back(' ');
    } else {
      s.push_back(c);
    }
  }
  if (!s.empty() && s.back() == ' ') s.pop_back();

  std::vector<std::string> out;
  std::size_t start = 0, i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    const char c = s[i];
    if (c != '.' && c != '!' && c != '?') {
      ++i;
      continue;
    }
    const std::size_t first = i;
    bool has_period = false;
    while (i < n && (s[i] == '.' || s[i] == '!' || s[i] == '?')) has_period |= s[i++] == '.';
    const bool lone_period = has_period && i - first == 1;
    while (i < n) {
      const std::size_t k = closer_at(s, i);
      if (k == 0) break;
      i += k;
    }
    if (i >= n || s[i] != ' ' || i + 1 >= n || !sentence_start_at(s, i + 1)) continue;
    if (lone_period && period_is_abbreviation(s, first)) continue;
    out.emplace_back(s, start, i - start);
    start = i + 1;
    ++i;
  }
  if (start < n) out.emplace_back(s, start, n - start);
  return out;
}

// ---- text documents -----------------------------------------------------------------------------

/// Google's create_pretraining_data.py input: one sentence per line, a blank line (or a line of
/// whitespace) between documents, and a document also ends with its file. Files may be
/// gzip-compressed. Lines are trimmed; empty documents are dropped.
inline std::vector<Document> read_text_documents(std::span<const std::filesystem::path> paths) {
  std::vector<Document> docs;
  for (const std::filesystem::path& p : paths) {
    ember::data::detail::GzFile f(
        p, ember::detail::concat("bert: read_text_documents: '", p.string(), "'"));
    Document doc;
    std::string pending;
    std::array<char, 1 << 16> buf;
    auto line_done = [&](std::string_view line) {
      line = detail::pt::trim(line);
      if (line.empty()) {
        if (!doc.empty()) docs.push_back(std::move(doc));
        doc.clear();
      } else {
        doc.emplace_back(line);
      }
    };
    for (std::size_t got; (got = f.read(buf.data(), buf.size())) > 0;) {
      pending.append(buf.data(), got);
      std::size_t start = 0;
      for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
        line_done(std::string_view(pending).substr(start, nl - start));
      }
      pending.erase(0, start);
    }
    line_done(pending);
    if (!doc.empty()) docs.push_back(std::move(doc));
  }
  return docs;
}
inline std::vector<Document> read_text_documents(
    std::initializer_list<std::filesystem::path> paths) {
  return read_text_documents(std::span<const std::filesystem::path>(paths.begin(), paths.size()));
}

}  // namespace bert
