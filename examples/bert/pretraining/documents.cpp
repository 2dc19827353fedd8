// BERT's pretraining data, the sentence splitter and the text-file reader: the definitions of
// documents.hpp, which says what each function does. Compiled once into bert_pretraining_data
// (pretraining.cmake).
#include "documents.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <ember/core/error.hpp>
#include <ember/data/idx.hpp>

namespace bert {

namespace detail::pt {

namespace {

/// The bytes of a closing quote or bracket starting at s[i] (0 when there is none): " ' ) ]
/// and the UTF-8 right quotes ’ ” and ».
std::size_t closer_at(std::string_view s, std::size_t i) {
  const char c = s[i];
  if (c == '"' || c == '\'' || c == ')' || c == ']') return 1;
  if (s.substr(i, 3) == "\xE2\x80\x99" || s.substr(i, 3) == "\xE2\x80\x9D") return 3;
  if (s.substr(i, 2) == "\xC2\xBB") return 2;
  return 0;
}

/// Whether a sentence may start at s[i]: an upper-case letter (ASCII, or Latin-1's À-Þ), a
/// digit, or an opening quote (" ' “ ‘ «).
bool sentence_start_at(std::string_view s, std::size_t i) {
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
bool is_abbreviation(std::string_view word) {
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
bool period_is_abbreviation(std::string_view s, std::size_t dot) {
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

}  // namespace

}  // namespace detail::pt

std::vector<std::string> split_sentences(std::string_view text) {
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

std::vector<Document> read_text_documents(std::span<const std::filesystem::path> paths) {
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

}  // namespace bert
