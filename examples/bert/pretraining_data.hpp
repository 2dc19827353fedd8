// BERT pretraining data: masked-LM + next-sentence-prediction instances, made the way Google's
// create_pretraining_data.py makes them (the MLPerf BERT reference's data), a binary cache of
// them, and batches as ember tensors. See docs/bert.md, "Pretraining data".
//
//   auto docs = bert::read_gcide();                       // or bert::read_text_documents(files)
//   ember::data::WordPieceTokenizer tok("vocab.txt");
//   bert::PretrainingOptions opts{.seq_len = 128};
//   auto instances = bert::create_instances(docs, tok, opts);
//   bert::save_instances("train.bpt", instances, opts);   // atomic; load_instances reads it back
//   bert::PretrainingBatch b = bert::make_batch(instances, indices, {.seq_len = 128,
//                                                                    .max_predictions = 20});
//
// Corpora. A Document is a list of sentences. read_gcide reads Debian's dict-gcide (GNU's
// Collaborative International Dictionary of English, the 1913 Webster plus WordNet): one
// document per dictionary entry, its headword lines, citations and source tags dropped and its
// text split into sentences by split_sentences. Entries are short (2.4 sentences on average):
// merge_short_documents joins neighbours into longer documents. read_text_documents reads
// Google's input format: one sentence per line, a blank line between documents.
//
// Instances, per document and per dupe_factor round (create_pretraining_data.py's algorithm):
//   - a target length of seq_len - 3 tokens, or with probability short_seq_prob a uniform length
//     in [2, seq_len - 3];
//   - sentences are gathered into a chunk until it reaches the target (or the document ends);
//     a random split point of the chunk makes segment A; segment B is the rest of the chunk, or,
//     with probability random_next_prob (always when the chunk holds one sentence), sentences
//     from a random place of another document, filled up to the target, and the chunk's
//     sentences B did not use are put back for the next instance;
//   - the pair is cut to seq_len - 3 tokens, one token at a time from the longer segment, from
//     its front or its back at random;
//   - [CLS] A [SEP] B [SEP], token types 0 up to the first [SEP] and 1 after;
//   - num_to_predict = min(max_predictions, max(1, round(len * masked_lm_prob))) positions
//     (len counts [CLS] and [SEP]; round half to even as Python's round) drawn from the non
//     special positions; each becomes [MASK] with probability 0.8, stays with 0.1, becomes a
//     random non-special vocab id with 0.1; masked_positions are sorted and masked_ids hold the
//     original ids.
// Every document and round draws from its own Philox stream keyed by (seed, round, document), so
// the instances are the same whatever the number of OpenMP threads; all instances are then
// shuffled with the seed.
//
// Differences from Google's script: the random token excludes the special tokens (Google draws
// from the whole vocab); there is no whole-word masking; the random numbers are Philox's, not
// Python's, so the instances are not those of the Python script for the same seed.
//
// The cache file ("EMBERBPT", little-endian), written atomically (a temporary file in the same
// directory, fsync, rename, fsync of the directory):
//   offset  0  char[8]  "EMBERBPT"
//           8  u32      format version (1)
//          12  u32      header bytes (64)
//          16  i64      seq_len S
//          24  i64      max_predictions P
//          32  i64      count N
//          40  u64      cache key (cached_instances' hash of corpus, vocab and options; 0 if none)
//          48  u32      CRC-32 (zlib's crc32) of the N records
//          52  u32[3]   zero
//          64  N records of 4 * (3 + 2 S + 2 P) bytes, each int32:
//                length L (3..S), predictions K (0..P), random_next (0 or 1),
//                input_ids[S] and token_type_ids[S] (zero after L),
//                masked_positions[P] and masked_ids[P] (zero after K)
// load_instances checks all of it (size, CRC, lengths, layout of the token types, positions
// sorted inside the sequence) and throws ember::Error naming the file on any mismatch.
//
// Needs zlib (gzip for dict-gcide and .gz text, crc32 for the cache; CMake: ZLIB::ZLIB) and
// OpenMP pragmas, which ember's target already enables. Host code only.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <ember/core/error.hpp>
#include <ember/core/philox.hpp>
#include <ember/data/idx.hpp>
#include <ember/data/wordpiece.hpp>
#include <ember/io/temp_file.hpp>
#include <ember/tensor/factories.hpp>
#include <ember/tensor/tensor.hpp>

namespace bert {

/// A document: its sentences, in order.
using Document = std::vector<std::string>;
/// A tokenized document: the WordPiece ids of each sentence (no empty sentence).
using TokenizedDocument = std::vector<std::vector<std::int32_t>>;

struct PretrainingOptions {
  /// Tokens of an instance, [CLS] and the two [SEP] included (at least 5).
  std::int64_t seq_len = 128;
  /// The most masked positions of an instance.
  std::int64_t max_predictions = 20;
  double masked_lm_prob = 0.15;
  /// Probability of a shorter target length (uniform in [2, seq_len - 3]).
  double short_seq_prob = 0.1;
  /// Probability that segment B comes from another document.
  double random_next_prob = 0.5;
  /// Rounds over the corpus, each with other random choices.
  int dupe_factor = 1;
  std::uint64_t seed = 12345;
};

/// One masked-LM + NSP example.
struct Instance {
  /// [CLS] A [SEP] B [SEP], masked; at most seq_len ids.
  std::vector<std::int32_t> input_ids;
  /// 0 for [CLS], A and the first [SEP]; 1 for B and the last [SEP].
  std::vector<std::int32_t> token_type_ids;
  /// The masked positions, ascending.
  std::vector<std::int32_t> masked_positions;
  /// The original ids at masked_positions.
  std::vector<std::int32_t> masked_ids;
  /// Whether B comes from another document (NSP label 1) rather than following A (label 0).
  bool random_next = false;

  bool operator==(const Instance&) const = default;
};

/// What create_instances made.
struct InstanceStats {
  std::int64_t documents = 0;  // tokenized documents with at least one sentence
  std::int64_t sentences = 0;
  std::int64_t tokens = 0;  // WordPiece tokens of the corpus (one round)
  std::int64_t instances = 0;
  std::int64_t random_next = 0;
  /// Random next only because the chunk held one sentence (no coin was tossed).
  std::int64_t forced_random_next = 0;
  std::int64_t masked = 0;
};

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

// ---- dict-gcide ---------------------------------------------------------------------------------

/// A number in dictd's base64 (digits A-Z a-z 0-9 + / for 0..63, most significant first), as in
/// the offsets and lengths of a dictd .index file. Throws ember::Error on any other character,
/// an empty string or more than 10 digits.
inline std::uint64_t decode_dictd_base64(std::string_view s) {
  EMBER_CHECK(!s.empty() && s.size() <= 10, "bert: dictd base64 number '", s,
              "' must have 1 to 10 digits");
  std::uint64_t v = 0;
  for (char c : s) {
    std::uint64_t d;
    if (c >= 'A' && c <= 'Z') {
      d = static_cast<std::uint64_t>(c - 'A');
    } else if (c >= 'a' && c <= 'z') {
      d = static_cast<std::uint64_t>(c - 'a' + 26);
    } else if (c >= '0' && c <= '9') {
      d = static_cast<std::uint64_t>(c - '0' + 52);
    } else if (c == '+') {
      d = 62;
    } else if (c == '/') {
      d = 63;
    } else {
      ember::fail("bert: dictd base64 number '", s, "' holds the character '", c,
                  "', not one of A-Z a-z 0-9 + /");
    }
    v = v * 64 + d;
  }
  return v;
}

namespace detail::pt {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

/// Whether `inner` (the text between brackets) is a label of abbreviations such as "Zool.",
/// "Obs.", "Naut. & Mil." or "R." (every word ends in '.'), or in square brackets one of a few
/// usage words ("Archaic", "Colloq"); at most 24 characters.
inline bool is_label(std::string_view inner, bool square) {
  inner = trim(inner);
  if (inner.empty() || inner.size() > 24) return false;
  bool all_abbrev = true;
  int words = 0;
  std::size_t i = 0;
  while (i < inner.size()) {
    while (i < inner.size() && inner[i] == ' ') ++i;
    const std::size_t b = i;
    while (i < inner.size() && inner[i] != ' ') ++i;
    if (i == b) break;
    const std::string_view w = inner.substr(b, i - b);
    ++words;
    for (char c : w) {
      if (!is_alpha_ascii(c) && c != '.' && c != '&' && c != ',') return false;
    }
    if (w.back() != '.' && w != "&" && w != "or" && w != "and") all_abbrev = false;
  }
  if (all_abbrev) return true;
  static constexpr std::array<std::string_view, 10> kWords{
      "Archaic", "Colloq", "Rare",     "Slang", "Poetic",
      "Dial",    "Vulgar", "Informal", "Local", "Prov"};
  return square && words == 1 && std::find(kWords.begin(), kWords.end(), inner) != kWords.end();
}

/// Whether `t` (a trimmed line) is only part-of-speech abbreviations: "adv.", "v. t.",
/// "a. & n." (short lower-case words ending in '.', and '&').
inline bool is_pos_line(std::string_view t) {
  if (t.empty() || t.size() > 24) return false;
  std::size_t i = 0;
  while (i < t.size()) {
    const std::size_t b = i;
    while (i < t.size() && t[i] != ' ') ++i;
    const std::string_view w = t.substr(b, i - b);
    if (w != "&" &&
        (w.size() > 6 || w.back() != '.' ||
         !std::all_of(w.begin(), w.end() - 1, [](char c) { return c >= 'a' && c <= 'z'; }))) {
      return false;
    }
    while (i < t.size() && t[i] == ' ') ++i;
  }
  return true;
}

/// Whether `inner` (the text between square brackets) is a source tag: "1913 Webster",
/// "WordNet 1.5 +PJC", "Webster 1913 Suppl.", "Century Dict." and the like.
inline bool is_source_tag(std::string_view inner) {
  for (std::string_view tag : {"Webster", "WordNet", "PJC", "Century", "Dict.", "Supp"}) {
    if (inner.find(tag) != std::string_view::npos) return true;
  }
  return false;
}

/// Whether `t` (a trimmed line) starts with a source tag or is one bracketed group.
inline bool is_source_tag_line(std::string_view t) {
  if (t.empty() || t.front() != '[') return false;
  const std::size_t close = t.find(']');
  if (close == std::string_view::npos) return false;
  return is_source_tag(t.substr(1, close - 1)) || close + 1 == t.size();
}

/// gcide's ASCII notation for a letter with a diacritic, the two characters inside the
/// brackets of "d['e]bris", "M["u]ller", "Nirv[=a]na", "[a^]" (mark before the letter: ' ` " ^
/// = ~ , . * for acute, grave, diaeresis, circumflex, macron, tilde, cedilla, dot, ring; '^'
/// after it for a breve) and the ligatures [ae] [oe]: the letter and a combining mark in UTF-8
/// (which an uncased tokenizer strips), or empty when `two` is not one of them.
inline std::string gcide_letter(std::string_view two) {
  if (two == "ae") return "\xC3\xA6";
  if (two == "AE") return "\xC3\x86";
  if (two == "oe") return "\xC5\x93";
  if (two == "OE") return "\xC5\x92";
  if (two.size() != 2) return {};
  const bool mark_first = is_alpha_ascii(two[1]) && !is_alpha_ascii(two[0]);
  const bool mark_after = is_alpha_ascii(two[0]) && two[1] == '^';
  if (!mark_first && !mark_after) return {};
  const char letter = mark_first ? two[1] : two[0];
  // The marks and the low bytes of their combining characters (U+0300 + byte - 0x80).
  static constexpr std::string_view kMarks = "'`\"^=~,.*";
  static constexpr unsigned char kLow[] = {0x81, 0x80, 0x88, 0x82, 0x84, 0x83, 0xA7, 0x87, 0x8A};
  unsigned char mark = 0x86;  // breve
  if (mark_first) {
    const std::size_t k = kMarks.find(two[0]);
    if (k == std::string_view::npos) return {};
    mark = kLow[k];
  }
  return std::string{letter, '\xCC', static_cast<char>(mark)};
}

/// One body paragraph of a gcide entry made plain. Per line: lines indented 30 columns or more
/// (the wrapped rest of a right-aligned citation) go, so do a leading sense number "1." or
/// "(a)" and "Note:", and "--Author" citations (to the end of the line, or to a quotation that
/// follows). Then over the joined lines: {braced} cross references keep their text without the
/// syllable marks * and "; \pronunciations\, (Zool.)/[Obs.] labels and [1913 Webster] source
/// tags go; gcide's letters with diacritics (d['e]bris) become UTF-8 (gcide_letter).
inline std::string plain_gcide_paragraph(const std::vector<std::string_view>& lines) {
  std::string joined;
  for (std::string_view line : lines) {
    std::size_t indent = 0;
    while (indent < line.size() && is_space(line[indent])) ++indent;
    if (indent >= 30) continue;
    line = trim(line);
    for (bool again = true; again;) {
      again = false;
      std::size_t d = 0;
      while (d < line.size() && is_digit(line[d])) ++d;
      if (d > 0 && d + 1 < line.size() && line[d] == '.' && line[d + 1] == ' ') {
        line = trim(line.substr(d + 1));
        again = true;
      } else if (line.size() >= 4 && line[0] == '(' && line[2] == ')' && line[3] == ' ' &&
                 (is_alpha_ascii(line[1]) || is_digit(line[1]))) {
        line = trim(line.substr(3));
        again = true;
      } else if (line.substr(0, 5) == "Note:") {
        line = trim(line.substr(5));
        again = true;
      }
    }
    if (!joined.empty()) joined.push_back(' ');
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '-' && i + 2 < line.size() && line[i + 1] == '-' && line[i + 2] != ' ' &&
          line[i + 2] != '-' && (i == 0 || line[i - 1] == ' ')) {
        const std::size_t quote = line.find(". \"", i);
        if (quote == std::string_view::npos) break;
        i = quote;  // resume at the space before the quotation
        continue;
      }
      joined.push_back(line[i]);
    }
  }
  const std::string_view p = joined;
  std::string out;
  out.reserve(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {  // \pro*nun"ci*a`tion\ : dropped when closed within 80 bytes
      const std::size_t close = p.find('\\', i + 1);
      if (close != std::string_view::npos && close - i <= 80) i = close;
      continue;
    }
    if (c == '[' && i + 3 < p.size() && p[i + 3] == ']') {
      if (const std::string letter = gcide_letter(p.substr(i + 1, 2)); !letter.empty()) {
        out += letter;
        i += 3;
        continue;
      }
    }
    if (c == '(' || c == '[') {
      const std::size_t close = p.find(c == '(' ? ')' : ']', i + 1);
      if (close != std::string_view::npos && close - i <= 40) {
        const std::string_view inner = p.substr(i + 1, close - i - 1);
        if (is_label(inner, c == '[') || (c == '[' && is_source_tag(inner))) {
          i = close;
          continue;
        }
      }
    }
    if (c == '{' || c == '}') continue;
    if (c == '*' || (c == '"' && i > 0 && is_alpha_ascii(p[i - 1]) && i + 1 < p.size() &&
                     is_alpha_ascii(p[i + 1]))) {
      continue;  // syllable and accent marks inside words
    }
    // Spaces left before punctuation by the removals ("tree ." -> "tree."), doubled spaces, and
    // ", ," runs.
    if ((c == '.' || c == ',' || c == ';' || c == ':') && !out.empty() && out.back() == ' ') {
      out.pop_back();
    }
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    if ((c == ',' || c == ';') && !out.empty() && (out.back() == ',' || out.back() == ';')) {
      continue;
    }
    out.push_back(c);
  }
  return std::string(trim(out));
}

}  // namespace detail::pt

/// The sentences of one dict-gcide entry, as dictd stores it:
///   Apple \Ap"ple\ ([a^]p"p'l), n. [OE. appel, ...
///      ...; of unknown origin.]
///      1. The fleshy pome or fruit of a rosaceous tree ({Pyrus
///         malus}) cultivated in numberless varieties in the
///         temperate zones.
///         [1913 Webster]
/// The headword lines (those at column 0, with the indented lines that continue an unclosed
/// etymology bracket or hold only abbreviations such as "adv.") go, as do lines that start with
/// a source tag ([1913 Webster], [WordNet 1.5]) or are one bracketed group, and "Syn:"
/// paragraphs; each remaining paragraph (blank lines separate them) is made plain
/// (detail::pt::plain_gcide_paragraph) and split into sentences; sentences without an ASCII
/// letter are dropped.
inline Document gcide_entry_sentences(std::string_view entry) {
  using namespace detail::pt;
  Document doc;
  std::vector<std::string_view> para;
  bool in_header = false, in_syn = false;
  int depth = 0;  // [ ] depth of a header line's etymology
  auto flush = [&] {
    if (!para.empty() && !in_syn) {
      const std::string text = plain_gcide_paragraph(para);
      for (std::string& s : split_sentences(text)) {
        // Keep sentences with a letter in them (not "14." left by a citation).
        if (std::any_of(s.begin(), s.end(), [](char c) { return is_alpha_ascii(c); })) {
          doc.push_back(std::move(s));
        }
      }
    }
    para.clear();
    in_syn = false;
  };
  std::size_t pos = 0;
  while (pos <= entry.size()) {
    std::size_t eol = entry.find('\n', pos);
    if (eol == std::string_view::npos) eol = entry.size();
    const std::string_view line = entry.substr(pos, eol - pos);
    pos = eol + 1;
    const std::string_view t = trim(line);
    if (t.empty()) {
      flush();
      in_header = false;
      depth = 0;
      continue;
    }
    const bool column0 = !is_space(line[0]);
    if (column0 || (in_header && depth > 0)) {
      if (column0) {
        flush();
        depth = 0;
      }
      in_header = true;
      for (char c : line) depth += c == '[' ? 1 : c == ']' ? -1 : 0;
      if (depth < 0) depth = 0;
      continue;
    }
    if (in_header && is_pos_line(t)) continue;  // "adv." on a line of its own
    in_header = false;
    if (is_source_tag_line(t)) continue;
    if (para.empty() && (t.substr(0, 4) == "Syn:" || t.substr(0, 4) == "Syn.")) in_syn = true;
    para.push_back(line);
  }
  flush();
  return doc;
}

namespace detail::pt {

struct GcideEntry {
  std::uint64_t offset = 0, length = 0;
};

/// The entries of a dictd .index, unique by byte range and sorted by offset; the ranges of the
/// 00-database-* metadata headwords (and other headwords sharing them) are left out.
inline std::vector<GcideEntry> read_dictd_index(const std::filesystem::path& index) {
  const std::string where = ember::detail::concat("bert: read_gcide: '", index.string(), "'");
  std::string text;
  {
    ember::data::detail::GzFile f(index, where);
    std::array<char, 1 << 16> buf;
    for (std::size_t got; (got = f.read(buf.data(), buf.size())) > 0;) text.append(buf.data(), got);
  }
  std::vector<GcideEntry> entries;
  std::vector<GcideEntry> metadata;
  std::size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (line.empty()) continue;
    const std::size_t t2 = line.rfind('\t');
    const std::size_t t1 =
        t2 == std::string_view::npos || t2 == 0 ? std::string_view::npos : line.rfind('\t', t2 - 1);
    EMBER_CHECK(t1 != std::string_view::npos, where, ": line ", line_no,
                " is not 'headword<TAB>offset<TAB>length'");
    GcideEntry e;
    try {
      e.offset = decode_dictd_base64(line.substr(t1 + 1, t2 - t1 - 1));
      e.length = decode_dictd_base64(line.substr(t2 + 1));
    } catch (const ember::Error& err) {
      ember::fail(where, ": line ", line_no, ": ", err.what());
    }
    (line.substr(0, 12) == "00-database-" ? metadata : entries).push_back(e);
  }
  const auto by_range = [](const GcideEntry& a, const GcideEntry& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.length < b.length;
  };
  const auto same = [](const GcideEntry& a, const GcideEntry& b) {
    return a.offset == b.offset && a.length == b.length;
  };
  std::sort(entries.begin(), entries.end(), by_range);
  entries.erase(std::unique(entries.begin(), entries.end(), same), entries.end());
  std::sort(metadata.begin(), metadata.end(), by_range);
  std::erase_if(entries, [&](const GcideEntry& e) {
    return std::binary_search(metadata.begin(), metadata.end(), e, by_range);
  });
  return entries;
}

}  // namespace detail::pt

/// The entries of Debian's dict-gcide (`apt-get install dict-gcide`) as documents, in the order
/// of the dictionary file, at most `max_documents` of them (all when negative). `dict` is the
/// dictzip file; the index is the same path with ".index" for ".dict.dz" (or ".dict").
/// Entries without a sentence are skipped. Throws ember::Error naming the file when a file is
/// missing or corrupt, or an index range lies outside the text.
inline std::vector<Document> read_gcide(
    const std::filesystem::path& dict = "/usr/share/dictd/gcide.dict.dz",
    std::int64_t max_documents = -1) {
  std::string stem = dict.string();
  for (std::string_view ext : {".dict.dz", ".dict"}) {
    if (stem.size() > ext.size() &&
        std::string_view(stem).substr(stem.size() - ext.size()) == ext) {
      stem.resize(stem.size() - ext.size());
      break;
    }
  }
  const std::filesystem::path index = stem + ".index";
  const std::string where = ember::detail::concat("bert: read_gcide: '", dict.string(), "'");
  std::error_code ec;
  EMBER_CHECK(std::filesystem::exists(dict, ec) && std::filesystem::exists(index, ec), where,
              ": dict-gcide is not installed here (need ", dict.string(), " and ", index.string(),
              "; Debian: apt-get install dict-gcide)");
  const std::vector<detail::pt::GcideEntry> entries = detail::pt::read_dictd_index(index);

  ember::data::detail::GzFile file(dict, where);
  std::string text;
  std::vector<Document> docs;
  constexpr std::size_t kBatch = 4096;
  for (std::size_t b = 0; b < entries.size(); b += kBatch) {
    if (max_documents >= 0 && static_cast<std::int64_t>(docs.size()) >= max_documents) break;
    const std::size_t e = std::min(entries.size(), b + kBatch);
    const std::uint64_t need = entries[e - 1].offset + entries[e - 1].length;
    while (text.size() < need) {  // decompress as far as this batch needs
      const std::size_t old = text.size();
      // At most 16 MiB a read: an index entry's offset is not trusted with an allocation.
      const std::size_t want =
          static_cast<std::size_t>(std::clamp<std::uint64_t>(need - old, 1u << 20, 1u << 24));
      text.resize(old + want);
      const std::size_t got = file.read(text.data() + old, want);
      text.resize(old + got);
      EMBER_CHECK(got > 0, where, ": the index (", index.string(), ") has an entry ending at byte ",
                  need, " but the text has only ", text.size(), " bytes");
    }
    std::vector<Document> batch(e - b);
#pragma omp parallel for schedule(dynamic, 64)
    for (std::size_t k = b; k < e; ++k) {
      batch[k - b] = gcide_entry_sentences(
          std::string_view(text).substr(entries[k].offset, entries[k].length));
    }
    for (Document& d : batch) {
      if (d.empty()) continue;
      if (max_documents >= 0 && static_cast<std::int64_t>(docs.size()) >= max_documents) break;
      docs.push_back(std::move(d));
    }
  }
  return docs;
}

/// Consecutive documents joined until each holds at least `min_sentences` sentences (the last
/// one may hold fewer). Dictionary entries are short (dict-gcide: 2.4 sentences on average), so
/// most of their instances would be short, and a chunk of one sentence always takes a random
/// B; joining neighbouring entries (alphabetical, so often related words) gives longer
/// instances and a next-sentence label nearer the coin's.
inline std::vector<Document> merge_short_documents(std::vector<Document> docs,
                                                   std::size_t min_sentences) {
  std::vector<Document> out;
  Document cur;
  for (Document& d : docs) {
    if (cur.empty()) {
      cur = std::move(d);
    } else {
      cur.insert(cur.end(), std::make_move_iterator(d.begin()), std::make_move_iterator(d.end()));
    }
    if (cur.size() >= min_sentences) out.push_back(std::exchange(cur, {}));
  }
  if (!cur.empty()) out.push_back(std::move(cur));
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

// ---- instances ----------------------------------------------------------------------------------

namespace detail::pt {

/// A stream of random numbers: Philox4x32-10 keyed by `seed`, blocks at counter (i, stream).
class Rng {
 public:
  Rng(std::uint64_t seed, std::uint64_t stream) : seed_(seed), stream_(stream) {}
  std::uint32_t next32() {
    if (used_ == 4) {
      block_ = ember::philox4x32(seed_, counter_++, stream_);
      used_ = 0;
    }
    return block_.v[used_++];
  }
  std::uint64_t next64() {
    const std::uint64_t hi = next32();
    return (hi << 32) | next32();
  }
  /// Uniform in [0, 1), 53 bits.
  double uniform() { return static_cast<double>(next64() >> 11) * 0x1p-53; }
  /// Uniform in [0, n) for n >= 1, unbiased (Lemire's multiply and reject).
  std::uint64_t below(std::uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next64()) * n;
    if (static_cast<std::uint64_t>(m) < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (static_cast<std::uint64_t>(m) < threshold) {
        m = static_cast<unsigned __int128>(next64()) * n;
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }
  /// Uniform in [lo, hi].
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo + 1)));
  }

 private:
  std::uint64_t seed_, stream_, counter_ = 0;
  ember::PhiloxBlock block_{};
  int used_ = 4;
};

inline constexpr std::uint64_t kShuffleStream = ~std::uint64_t{0};

inline void check_options(const PretrainingOptions& o) {
  EMBER_CHECK(o.seq_len >= 5 && o.seq_len <= (1 << 20), "bert: PretrainingOptions: seq_len ",
              o.seq_len, " must be in [5, 2^20] (room for [CLS], two [SEP] and a token each)");
  EMBER_CHECK(o.max_predictions >= 0 && o.max_predictions <= o.seq_len,
              "bert: PretrainingOptions: max_predictions ", o.max_predictions,
              " must be in [0, seq_len = ", o.seq_len, "]");
  auto prob = [](double p, const char* name) {
    EMBER_CHECK(p >= 0.0 && p <= 1.0, "bert: PretrainingOptions: ", name, " = ", p,
                " is not a probability");
  };
  prob(o.masked_lm_prob, "masked_lm_prob");
  prob(o.short_seq_prob, "short_seq_prob");
  prob(o.random_next_prob, "random_next_prob");
  EMBER_CHECK(o.dupe_factor >= 1, "bert: PretrainingOptions: dupe_factor ", o.dupe_factor,
              " must be at least 1");
}

struct Specials {
  std::int32_t cls, sep, mask;
  std::int64_t vocab;
  std::vector<std::int32_t> special;  // never drawn as the random token
};

/// Masks `inst` (input_ids complete) as BERT's masked LM does.
inline void mask_instance(Instance& inst, const PretrainingOptions& o, const Specials& sp,
                          Rng& rng) {
  std::vector<std::int32_t> cand;
  cand.reserve(inst.input_ids.size());
  for (std::size_t i = 0; i < inst.input_ids.size(); ++i) {
    const std::int32_t id = inst.input_ids[i];
    if (id != sp.cls && id != sp.sep) cand.push_back(static_cast<std::int32_t>(i));
  }
  for (std::size_t i = cand.size(); i > 1; --i) {
    std::swap(cand[i - 1], cand[rng.below(i)]);
  }
  const double expected = std::nearbyint(static_cast<double>(inst.input_ids.size()) *
                                         o.masked_lm_prob);  // half to even, as Python's round
  const std::size_t want = static_cast<std::size_t>(
      std::min<double>(static_cast<double>(o.max_predictions), std::max(1.0, expected)));
  cand.resize(std::min(want, cand.size()));
  std::sort(cand.begin(), cand.end());
  inst.masked_positions = cand;
  inst.masked_ids.resize(cand.size());
  for (std::size_t k = 0; k < cand.size(); ++k) {
    std::int32_t& id = inst.input_ids[static_cast<std::size_t>(cand[k])];
    inst.masked_ids[k] = id;
    if (rng.uniform() < 0.8) {
      id = sp.mask;
    } else if (rng.uniform() < 0.5) {
      // keep the original
    } else {
      std::int32_t r;
      do {
        r = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(sp.vocab)));
      } while (std::find(sp.special.begin(), sp.special.end(), r) != sp.special.end());
      id = r;
    }
  }
}

/// The instances of one document in one round (create_pretraining_data.py's
/// create_instances_from_document).
inline void document_instances(const std::vector<TokenizedDocument>& docs, std::size_t d,
                               const PretrainingOptions& o, const Specials& sp, Rng& rng,
                               std::vector<Instance>& out, std::int64_t& forced) {
  const TokenizedDocument& doc = docs[d];
  const std::int64_t max_tokens = o.seq_len - 3;
  std::int64_t target = max_tokens;
  if (rng.uniform() < o.short_seq_prob) target = rng.between(2, max_tokens);

  std::vector<std::int32_t> a, b;
  std::size_t chunk_begin = 0;  // the chunk is doc[chunk_begin, i]
  std::int64_t chunk_len = 0;
  std::size_t i = 0;
  while (i < doc.size()) {
    chunk_len += static_cast<std::int64_t>(doc[i].size());
    if (i + 1 != doc.size() && chunk_len < target) {
      ++i;
      continue;
    }
    const std::size_t chunk_size = i + 1 - chunk_begin;
    const std::size_t a_end =
        chunk_size >= 2
            ? static_cast<std::size_t>(rng.between(1, static_cast<std::int64_t>(chunk_size - 1)))
            : 1;
    a.clear();
    b.clear();
    for (std::size_t k = chunk_begin; k < chunk_begin + a_end; ++k) {
      a.insert(a.end(), doc[k].begin(), doc[k].end());
    }
    bool random_next = chunk_size == 1;
    if (random_next) {
      ++forced;
    } else {
      random_next = rng.uniform() < o.random_next_prob;
    }
    if (random_next) {
      const std::int64_t target_b = target - static_cast<std::int64_t>(a.size());
      std::size_t r = d;
      for (int tries = 0; tries < 10 && r == d && docs.size() > 1; ++tries) {
        r = static_cast<std::size_t>(rng.below(docs.size()));
      }
      const TokenizedDocument& other = docs[r];
      for (std::size_t k = static_cast<std::size_t>(rng.below(other.size())); k < other.size();
           ++k) {
        b.insert(b.end(), other[k].begin(), other[k].end());
        if (static_cast<std::int64_t>(b.size()) >= target_b) break;
      }
      i = chunk_begin + a_end - 1;  // the sentences after A go back to the document
    } else {
      for (std::size_t k = chunk_begin + a_end; k <= i; ++k) {
        b.insert(b.end(), doc[k].begin(), doc[k].end());
      }
    }
    // Cut the pair to max_tokens: from the longer side, at its front or back at random. The
    // front is cut by moving a start index (erasing from a vector's front is quadratic).
    std::size_t a0 = 0, a1 = a.size(), b0 = 0, b1 = b.size();
    while (static_cast<std::int64_t>((a1 - a0) + (b1 - b0)) > max_tokens) {
      const bool cut_a = a1 - a0 > b1 - b0;
      std::size_t& front = cut_a ? a0 : b0;
      std::size_t& back = cut_a ? a1 : b1;
      if (rng.uniform() < 0.5) {
        ++front;
      } else {
        --back;
      }
    }
    Instance inst;
    inst.random_next = random_next;
    const std::size_t n = (a1 - a0) + (b1 - b0) + 3;
    inst.input_ids.reserve(n);
    inst.input_ids.push_back(sp.cls);
    inst.input_ids.insert(inst.input_ids.end(), a.begin() + static_cast<std::ptrdiff_t>(a0),
                          a.begin() + static_cast<std::ptrdiff_t>(a1));
    inst.input_ids.push_back(sp.sep);
    inst.token_type_ids.assign(inst.input_ids.size(), 0);
    inst.input_ids.insert(inst.input_ids.end(), b.begin() + static_cast<std::ptrdiff_t>(b0),
                          b.begin() + static_cast<std::ptrdiff_t>(b1));
    inst.input_ids.push_back(sp.sep);
    inst.token_type_ids.resize(n, 1);
    mask_instance(inst, o, sp, rng);
    out.push_back(std::move(inst));

    chunk_begin = i + 1;
    chunk_len = 0;
    ++i;
  }
}

}  // namespace detail::pt

/// The WordPiece ids of every sentence (sentences without tokens dropped, then documents
/// without sentences), tokenized in parallel with OpenMP.
inline std::vector<TokenizedDocument> tokenize_documents(
    const std::vector<Document>& docs, const ember::data::WordPieceTokenizer& tok) {
  EMBER_CHECK(tok.vocab_size() <= (std::int64_t{1} << 31), "bert: tokenize_documents: the vocab (",
              tok.vocab_size(), " tokens) does not fit int32 ids");
  std::vector<std::pair<std::size_t, std::size_t>> where;  // (document, sentence)
  for (std::size_t d = 0; d < docs.size(); ++d) {
    for (std::size_t s = 0; s < docs[d].size(); ++s) where.emplace_back(d, s);
  }
  std::vector<std::vector<std::int32_t>> ids(where.size());
  const auto n = static_cast<std::int64_t>(where.size());
#pragma omp parallel for schedule(dynamic, 256)
  for (std::int64_t k = 0; k < n; ++k) {
    const auto& [d, s] = where[static_cast<std::size_t>(k)];
    const std::vector<std::int64_t> v = tok.encode(docs[d][s]);
    ids[static_cast<std::size_t>(k)].assign(v.begin(), v.end());
  }
  std::vector<TokenizedDocument> out(docs.size());
  for (std::size_t k = 0; k < where.size(); ++k) {
    if (!ids[k].empty()) out[where[k].first].push_back(std::move(ids[k]));
  }
  std::erase_if(out, [](const TokenizedDocument& d) { return d.empty(); });
  return out;
}

/// Masked-LM + NSP instances from tokenized documents (see the top of this file), shuffled.
/// Deterministic for options.seed whatever the number of threads. `stats`, when given, receives
/// the counts. Throws ember::Error on invalid options, an empty document or sentence, or an id
/// outside the vocab.
inline std::vector<Instance> create_instances(const std::vector<TokenizedDocument>& docs,
                                              const ember::data::WordPieceTokenizer& tok,
                                              const PretrainingOptions& options,
                                              InstanceStats* stats = nullptr) {
  detail::pt::check_options(options);
  for (std::size_t d = 0; d < docs.size(); ++d) {
    EMBER_CHECK(!docs[d].empty(), "bert: create_instances: tokenized document ", d,
                " has no sentence");
    for (const std::vector<std::int32_t>& sentence : docs[d]) {
      EMBER_CHECK(!sentence.empty(), "bert: create_instances: tokenized document ", d,
                  " has an empty sentence");
      for (std::int32_t id : sentence) {
        EMBER_CHECK(id >= 0 && id < tok.vocab_size(), "bert: create_instances: tokenized document ",
                    d, " holds the id ", id, ", outside the vocab [0, ", tok.vocab_size(), ")");
      }
    }
  }
  detail::pt::Specials sp{static_cast<std::int32_t>(tok.cls_id()),
                          static_cast<std::int32_t>(tok.sep_id()),
                          static_cast<std::int32_t>(tok.mask_id()),
                          tok.vocab_size(),
                          {}};
  for (std::int64_t id : {tok.cls_id(), tok.sep_id(), tok.mask_id(), tok.pad_id(), tok.unk_id()}) {
    sp.special.push_back(static_cast<std::int32_t>(id));
  }
  EMBER_CHECK(tok.vocab_size() > static_cast<std::int64_t>(sp.special.size()),
              "bert: create_instances: the vocab holds only special tokens");

  const std::size_t rounds = static_cast<std::size_t>(options.dupe_factor);
  const std::size_t jobs = rounds * docs.size();
  std::vector<std::vector<Instance>> parts(jobs);
  std::int64_t forced = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : forced)
  for (std::int64_t j = 0; j < static_cast<std::int64_t>(jobs); ++j) {
    const std::size_t round = static_cast<std::size_t>(j) / docs.size();
    const std::size_t d = static_cast<std::size_t>(j) % docs.size();
    detail::pt::Rng rng(options.seed, (static_cast<std::uint64_t>(round) << 40) | d);
    detail::pt::document_instances(docs, d, options, sp, rng, parts[static_cast<std::size_t>(j)],
                                   forced);
  }
  std::size_t total = 0;
  for (const auto& p : parts) total += p.size();
  std::vector<Instance> out;
  out.reserve(total);
  for (auto& p : parts) {
    for (Instance& inst : p) out.push_back(std::move(inst));
    std::vector<Instance>().swap(p);
  }
  detail::pt::Rng shuffle(options.seed, detail::pt::kShuffleStream);
  for (std::size_t i = out.size(); i > 1; --i) std::swap(out[i - 1], out[shuffle.below(i)]);

  if (stats) {
    *stats = {};
    stats->documents = static_cast<std::int64_t>(docs.size());
    for (const TokenizedDocument& d : docs) {
      stats->sentences += static_cast<std::int64_t>(d.size());
      for (const auto& s : d) stats->tokens += static_cast<std::int64_t>(s.size());
    }
    stats->instances = static_cast<std::int64_t>(out.size());
    stats->forced_random_next = forced;
    for (const Instance& inst : out) {
      stats->random_next += inst.random_next ? 1 : 0;
      stats->masked += static_cast<std::int64_t>(inst.masked_positions.size());
    }
  }
  return out;
}

/// tokenize_documents, then create_instances.
inline std::vector<Instance> create_instances(const std::vector<Document>& docs,
                                              const ember::data::WordPieceTokenizer& tok,
                                              const PretrainingOptions& options,
                                              InstanceStats* stats = nullptr) {
  detail::pt::check_options(options);
  return create_instances(tokenize_documents(docs, tok), tok, options, stats);
}

/// Documents split into a training and a held-out evaluation set: each document goes to eval
/// with probability eval_fraction, by a hash of (seed, its index), so the split is the same on
/// every run and does not depend on the other documents. Splitting documents (not instances)
/// keeps the text of eval instances out of training.
struct DocumentSplit {
  std::vector<Document> train, eval;
};
inline DocumentSplit split_documents(std::vector<Document> docs, double eval_fraction,
                                     std::uint64_t seed = 12345) {
  EMBER_CHECK(eval_fraction >= 0.0 && eval_fraction <= 1.0, "bert: split_documents: eval_fraction ",
              eval_fraction, " is not in [0, 1]");
  DocumentSplit out;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const ember::PhiloxBlock r = ember::philox4x32(seed, i, 0x5EEDu);
    const double u = static_cast<double>((std::uint64_t{r.v[0]} << 21) ^ r.v[1]) * 0x1p-53;
    (u < eval_fraction ? out.eval : out.train).push_back(std::move(docs[i]));
  }
  return out;
}

// ---- the cache file -----------------------------------------------------------------------------

inline constexpr char kCacheMagic[8] = {'E', 'M', 'B', 'E', 'R', 'B', 'P', 'T'};
inline constexpr std::uint32_t kCacheVersion = 1;
inline constexpr std::uint32_t kCacheHeaderBytes = 64;

namespace detail::pt {

static_assert(std::endian::native == std::endian::little,
              "bert: the pretraining cache format is little-endian; this host is not");

inline std::string errno_text(int err) { return std::system_category().message(err); }

/// The int32 count of one record.
inline std::size_t record_words(std::int64_t seq_len, std::int64_t max_predictions) {
  return static_cast<std::size_t>(3 + 2 * seq_len + 2 * max_predictions);
}

/// Checks one instance against the format's rules; `what` names it in the message.
template <class Where>
void check_instance(const std::int32_t* len_k_r, const std::int32_t* ids, const std::int32_t* types,
                    const std::int32_t* pos, const std::int32_t* mids, std::int64_t S,
                    std::int64_t P, bool padded, const Where& where) {
  const std::int64_t L = len_k_r[0], K = len_k_r[1], R = len_k_r[2];
  EMBER_CHECK(L >= 3 && L <= S, where(), ": length ", L, " is not in [3, seq_len = ", S, "]");
  EMBER_CHECK(K >= 0 && K <= P, where(), ": ", K,
              " masked positions, not in [0, max_predictions = ", P, "]");
  EMBER_CHECK(R == 0 || R == 1, where(), ": random_next is ", R, ", not 0 or 1");
  // Types: 0 ... 0 1 ... 1, starting with 0 and ending with 1.
  EMBER_CHECK(types[0] == 0 && types[L - 1] == 1, where(),
              ": token_type_ids must start with 0 and end with 1");
  for (std::int64_t i = 0; i < L; ++i) {
    EMBER_CHECK(ids[i] >= 0, where(), ": input id ", ids[i], " at ", i, " is negative");
    EMBER_CHECK((types[i] == 0 || types[i] == 1) && (i == 0 || types[i] >= types[i - 1]), where(),
                ": token_type_ids are not 0...0 1...1");
  }
  for (std::int64_t k = 0; k < K; ++k) {
    EMBER_CHECK(pos[k] > 0 && pos[k] < L - 1 && (k == 0 || pos[k] > pos[k - 1]), where(),
                ": masked positions are not ascending inside the sequence");
    EMBER_CHECK(mids[k] >= 0, where(), ": masked id ", mids[k], " is negative");
  }
  if (padded) {
    for (std::int64_t i = L; i < S; ++i) {
      EMBER_CHECK(ids[i] == 0 && types[i] == 0, where(), ": padding after length ", L,
                  " is not zero");
    }
    for (std::int64_t k = K; k < P; ++k) {
      EMBER_CHECK(pos[k] == 0 && mids[k] == 0, where(), ": padding after ", K,
                  " masked positions is not zero");
    }
  }
}

inline void put_u32(unsigned char* p, std::uint32_t v) { std::memcpy(p, &v, 4); }
inline void put_u64(unsigned char* p, std::uint64_t v) { std::memcpy(p, &v, 8); }
inline std::uint32_t get_u32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline std::uint64_t get_u64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace detail::pt

/// Writes `instances` to `path` in the cache format (top of this file), atomically: a crash or
/// an error leaves the previous file, if any, and no temporary file (bar a crash). Every
/// instance is checked as it is written (at most options.seq_len ids, options.max_predictions
/// positions, the [CLS] A [SEP] B [SEP] type layout); a bad one throws ember::Error naming its
/// index. `key` is stored for cached_instances.
inline void save_instances(const std::filesystem::path& path,
                           const std::vector<Instance>& instances,
                           const PretrainingOptions& options, std::uint64_t key = 0) {
  const std::int64_t S = options.seq_len, P = options.max_predictions;
  EMBER_CHECK(S >= 3 && P >= 0 && P <= S, "bert: save_instances: '", path.string(), "': seq_len ",
              S, " and max_predictions ", P, " are invalid");
  const std::size_t words = detail::pt::record_words(S, P);
  ember::io::TempFile tmp(path, "bert: save_instances");
  std::vector<std::int32_t> buf;
  constexpr std::size_t kFlushWords = 1 << 20;
  buf.reserve(kFlushWords + words);
  off_t offset = kCacheHeaderBytes;
  std::uint32_t crc = static_cast<std::uint32_t>(::crc32(0L, Z_NULL, 0));
  auto flush = [&] {
    const std::size_t bytes = buf.size() * 4;
    const auto* p = reinterpret_cast<const unsigned char*>(buf.data());
    for (std::size_t done = 0; done < bytes;) {
      const auto chunk = static_cast<uInt>(std::min<std::size_t>(bytes - done, 1u << 30));
      crc = static_cast<std::uint32_t>(::crc32(crc, p + done, chunk));
      done += chunk;
    }
    tmp.write_at(buf.data(), bytes, offset);
    offset += static_cast<off_t>(bytes);
    buf.clear();
  };
  for (std::size_t n = 0; n < instances.size(); ++n) {
    const Instance& in = instances[n];
    auto where = [&] {
      return ember::detail::concat("bert: save_instances: '", path.string(), "': instance ", n);
    };
    const std::int64_t L = static_cast<std::int64_t>(in.input_ids.size());
    const std::int64_t K = static_cast<std::int64_t>(in.masked_positions.size());
    EMBER_CHECK(L >= 3 && L <= S && in.token_type_ids.size() == in.input_ids.size(), where(), ": ",
                L, " input ids and ", in.token_type_ids.size(),
                " token types (need equal counts in [3, seq_len = ", S, "])");
    EMBER_CHECK(K <= P && in.masked_ids.size() == in.masked_positions.size(), where(), ": ", K,
                " masked positions and ", in.masked_ids.size(),
                " masked ids (need equal counts, at most max_predictions = ", P, ")");
    const std::size_t at = buf.size();
    buf.resize(at + words, 0);
    std::int32_t* r = buf.data() + at;
    r[0] = static_cast<std::int32_t>(L);
    r[1] = static_cast<std::int32_t>(K);
    r[2] = in.random_next ? 1 : 0;
    std::copy(in.input_ids.begin(), in.input_ids.end(), r + 3);
    std::copy(in.token_type_ids.begin(), in.token_type_ids.end(), r + 3 + S);
    std::copy(in.masked_positions.begin(), in.masked_positions.end(), r + 3 + 2 * S);
    std::copy(in.masked_ids.begin(), in.masked_ids.end(), r + 3 + 2 * S + P);
    detail::pt::check_instance(r, r + 3, r + 3 + S, r + 3 + 2 * S, r + 3 + 2 * S + P, S, P, false,
                               where);
    if (buf.size() >= kFlushWords) flush();
  }
  flush();
  unsigned char header[kCacheHeaderBytes] = {};
  std::memcpy(header, kCacheMagic, 8);
  detail::pt::put_u32(header + 8, kCacheVersion);
  detail::pt::put_u32(header + 12, kCacheHeaderBytes);
  detail::pt::put_u64(header + 16, static_cast<std::uint64_t>(S));
  detail::pt::put_u64(header + 24, static_cast<std::uint64_t>(P));
  detail::pt::put_u64(header + 32, instances.size());
  detail::pt::put_u64(header + 40, key);
  detail::pt::put_u32(header + 48, crc);
  tmp.write_at(header, sizeof header, 0);
  tmp.commit(path);
}

/// What a cache file's header says.
struct CacheHeader {
  std::int64_t seq_len = 0, max_predictions = 0, count = 0;
  std::uint64_t key = 0;
};

/// Reads a file written by save_instances. Throws ember::Error naming the file when it is
/// missing, not this format (magic), of another version, truncated or longer than its header
/// says, fails its CRC, or holds an inconsistent record. `header`, when given, receives the
/// header.
inline std::vector<Instance> load_instances(const std::filesystem::path& path,
                                            CacheHeader* header = nullptr) {
  const std::string where = ember::detail::concat("bert: load_instances: '", path.string(), "'");
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) ember::fail(where, ": cannot open the file: ", detail::pt::errno_text(errno));
  std::vector<unsigned char> data;
  {
    struct stat st {};
    const int rc = ::fstat(fd, &st);
    if (rc == 0) data.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (rc == 0 && got < data.size()) {
      const ssize_t r =
          ::read(fd, data.data() + got, std::min<std::size_t>(data.size() - got, 1u << 30));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    const int err = errno;
    ::close(fd);
    EMBER_CHECK(rc == 0 && got == data.size(), where,
                ": cannot read the file: ", detail::pt::errno_text(err));
  }
  EMBER_CHECK(data.size() >= 8 && std::memcmp(data.data(), kCacheMagic, 8) == 0, where,
              ": not a BERT pretraining cache (the file does not start with \"EMBERBPT\")");
  EMBER_CHECK(data.size() >= kCacheHeaderBytes, where, ": truncated: ", data.size(),
              " bytes, less than the ", kCacheHeaderBytes, "-byte header");
  const unsigned char* h = data.data();
  const std::uint32_t version = detail::pt::get_u32(h + 8);
  EMBER_CHECK(version == kCacheVersion, where, ": format version ", version,
              ", this reader knows version ", kCacheVersion, " (rebuild the cache)");
  EMBER_CHECK(detail::pt::get_u32(h + 12) == kCacheHeaderBytes, where, ": header size ",
              detail::pt::get_u32(h + 12), ", expected ", kCacheHeaderBytes);
  CacheHeader hd;
  hd.seq_len = static_cast<std::int64_t>(detail::pt::get_u64(h + 16));
  hd.max_predictions = static_cast<std::int64_t>(detail::pt::get_u64(h + 24));
  hd.count = static_cast<std::int64_t>(detail::pt::get_u64(h + 32));
  hd.key = detail::pt::get_u64(h + 40);
  const std::int64_t S = hd.seq_len, P = hd.max_predictions;
  EMBER_CHECK(S >= 3 && S <= (1 << 20) && P >= 0 && P <= S, where, ": seq_len ", S,
              " and max_predictions ", P, " are invalid");
  const std::size_t record_bytes = detail::pt::record_words(S, P) * 4;
  EMBER_CHECK(hd.count >= 0 && static_cast<std::uint64_t>(hd.count) <=
                                   (data.size() - kCacheHeaderBytes) / record_bytes,
              where, ": truncated: the header announces ", hd.count, " instances of ", record_bytes,
              " bytes, the file holds ", data.size() - kCacheHeaderBytes,
              " bytes after the header");
  const std::size_t payload = static_cast<std::size_t>(hd.count) * record_bytes;
  EMBER_CHECK(data.size() - kCacheHeaderBytes == payload, where, ": ",
              data.size() - kCacheHeaderBytes - payload,
              " bytes of trailing data after the last instance");
  std::uint32_t crc = static_cast<std::uint32_t>(::crc32(0L, Z_NULL, 0));
  for (std::size_t done = 0; done < payload;) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(payload - done, 1u << 30));
    crc = static_cast<std::uint32_t>(::crc32(crc, data.data() + kCacheHeaderBytes + done, chunk));
    done += chunk;
  }
  EMBER_CHECK(crc == detail::pt::get_u32(h + 48), where,
              ": the CRC-32 of the instances does not match the header's (the file is corrupt)");

  std::vector<Instance> out(static_cast<std::size_t>(hd.count));
  std::vector<std::int32_t> rec(detail::pt::record_words(S, P));
  for (std::size_t n = 0; n < out.size(); ++n) {
    std::memcpy(rec.data(), data.data() + kCacheHeaderBytes + n * record_bytes, record_bytes);
    const std::int32_t* r = rec.data();
    detail::pt::check_instance(r, r + 3, r + 3 + S, r + 3 + 2 * S, r + 3 + 2 * S + P, S, P, true,
                               [&] { return ember::detail::concat(where, ": instance ", n); });
    Instance& in = out[n];
    const std::size_t L = static_cast<std::size_t>(r[0]), K = static_cast<std::size_t>(r[1]);
    in.random_next = r[2] != 0;
    in.input_ids.assign(r + 3, r + 3 + L);
    in.token_type_ids.assign(r + 3 + S, r + 3 + S + L);
    in.masked_positions.assign(r + 3 + 2 * S, r + 3 + 2 * S + K);
    in.masked_ids.assign(r + 3 + 2 * S + P, r + 3 + 2 * S + P + K);
  }
  if (header) *header = hd;
  return out;
}

// ---- cache keys ---------------------------------------------------------------------------------

/// Bumped whenever the readers or the instance algorithm change what they produce, so that old
/// caches are not reused.
inline constexpr std::string_view kDataVersion = "bert-pretraining-data/1";

namespace detail::pt {

struct Fnv {
  std::uint64_t h = 0xcbf29ce484222325ull;
  void bytes(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 0x100000001b3ull;
  }
  void str(std::string_view s) {
    num(s.size());
    bytes(s.data(), s.size());
  }
  template <class T>
  void num(T v) {
    bytes(&v, sizeof v);
  }
};

}  // namespace detail::pt

/// The identity of corpus files: for each, its absolute path, size and modification time (and
/// `extra`, e.g. the reader and its arguments), as a string for cache_key. Throws ember::Error
/// naming a file that does not exist.
inline std::string corpus_identity(std::span<const std::filesystem::path> files,
                                   std::string_view extra = {}) {
  std::string id(extra);
  for (const std::filesystem::path& f : files) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(f, ec);
    const auto size = std::filesystem::file_size(f, ec);
    EMBER_CHECK(!ec, "bert: corpus_identity: '", f.string(), "': ", ec.message());
    const auto mtime = std::filesystem::last_write_time(f, ec).time_since_epoch().count();
    EMBER_CHECK(!ec, "bert: corpus_identity: '", f.string(), "': ", ec.message());
    id += ember::detail::concat("\n", abs.string(), "\t", size, "\t", mtime);
  }
  return id;
}
inline std::string corpus_identity(std::initializer_list<std::filesystem::path> files,
                                   std::string_view extra = {}) {
  return corpus_identity(std::span<const std::filesystem::path>(files.begin(), files.size()),
                         extra);
}

/// A 64-bit FNV-1a hash of kDataVersion, the corpus identity, the vocab (every token, and the
/// tokenizer's options) and the options.
inline std::uint64_t cache_key(std::string_view corpus, const ember::data::WordPieceTokenizer& tok,
                               const PretrainingOptions& o) {
  detail::pt::Fnv f;
  f.str(kDataVersion);
  f.str(corpus);
  f.num(tok.vocab_size());
  for (std::int64_t i = 0; i < tok.vocab_size(); ++i) f.str(tok.token(i));
  f.num(tok.options().lower_case);
  f.num(tok.options().max_input_chars_per_word);
  f.str(tok.options().unk);
  f.num(o.seq_len);
  f.num(o.max_predictions);
  f.num(o.masked_lm_prob);
  f.num(o.short_seq_prob);
  f.num(o.random_next_prob);
  f.num(o.dupe_factor);
  f.num(o.seed);
  return f.h;
}

/// Whether cached_instances built the instances or loaded them.
struct CacheInfo {
  std::filesystem::path file;
  bool loaded = false;
  /// Why an existing file was not used (an ember::Error's message), else empty.
  std::string rebuilt_because;
};

/// The instances of the corpus `read_corpus` returns, from `cache_dir` when a cache with the
/// same key (cache_key(corpus, tok, options)) is there, else made with create_instances and
/// saved there (the directory is created). A cache that fails to load is rebuilt. The file is
/// cache_dir/bert_pretraining_<key in hex>.bpt.
inline std::vector<Instance> cached_instances(
    const std::filesystem::path& cache_dir, std::string_view corpus,
    const ember::data::WordPieceTokenizer& tok, const PretrainingOptions& options,
    const std::function<std::vector<Document>()>& read_corpus, CacheInfo* info = nullptr) {
  const std::uint64_t key = cache_key(corpus, tok, options);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "bert_pretraining_0000000000000000.bpt";
  for (int i = 0; i < 16; ++i) name[17 + i] = kHex[(key >> (60 - 4 * i)) & 15];
  const std::filesystem::path file = cache_dir / name;
  CacheInfo local;
  CacheInfo& inf = info ? *info : local;
  inf = {};
  inf.file = file;
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) {
    try {
      CacheHeader h;
      std::vector<Instance> out = load_instances(file, &h);
      EMBER_CHECK(h.key == key && h.seq_len == options.seq_len &&
                      h.max_predictions == options.max_predictions,
                  "bert: cached_instances: '", file.string(),
                  "' was written for other data or options");
      inf.loaded = true;
      return out;
    } catch (const ember::Error& e) {
      inf.rebuilt_because = e.what();
    }
  }
  std::filesystem::create_directories(cache_dir, ec);
  EMBER_CHECK(!ec, "bert: cached_instances: cannot create '", cache_dir.string(),
              "': ", ec.message());
  std::vector<Instance> out = create_instances(read_corpus(), tok, options);
  save_instances(file, out, options, key);
  return out;
}

// ---- batches ------------------------------------------------------------------------------------

/// A batch on the CPU, all int64.
struct PretrainingBatch {
  /// [B, S]: ids padded with pad_id, segments padded with 0, mask 1 for a real token.
  ember::Tensor<std::int64_t> input_ids, token_type_ids, attention_mask;
  /// [B, P]: the masked positions (padding: position 0) and their original ids (padding: -100,
  /// the ignore index of the loss).
  ember::Tensor<std::int64_t> masked_positions, masked_ids;
  /// [B]: 0 when B follows A, 1 when B is random (Hugging Face's next_sentence_label).
  ember::Tensor<std::int64_t> next_sentence_labels;
};

struct BatchOptions {
  /// S; 0 for the longest instance of the batch. Pass the data's seq_len for fixed shapes.
  std::int64_t seq_len = 0;
  /// P; 0 for the most masked positions of an instance of the batch (at least 1).
  std::int64_t max_predictions = 0;
  /// The id of [PAD] (0 in BERT's vocabularies).
  std::int64_t pad_id = 0;
};

inline constexpr std::int64_t kIgnoreIndex = -100;

/// The instances at `indices` as a batch. Throws ember::Error on an index out of range or an
/// instance longer than options.seq_len (or with more masked positions than max_predictions).
inline PretrainingBatch make_batch(const std::vector<Instance>& instances,
                                   std::span<const std::int64_t> indices,
                                   const BatchOptions& options = {}) {
  const auto B = static_cast<std::int64_t>(indices.size());
  std::int64_t S = options.seq_len, P = options.max_predictions;
  for (std::int64_t i : indices) {
    EMBER_CHECK(i >= 0 && i < static_cast<std::int64_t>(instances.size()),
                "bert: make_batch: index ", i, " is outside the ", instances.size(), " instances");
    const Instance& in = instances[static_cast<std::size_t>(i)];
    const auto L = static_cast<std::int64_t>(in.input_ids.size());
    const auto K = static_cast<std::int64_t>(in.masked_positions.size());
    if (options.seq_len == 0) S = std::max(S, L);
    if (options.max_predictions == 0) P = std::max(P, K);
    EMBER_CHECK(L <= S && K <= P && in.token_type_ids.size() == in.input_ids.size() &&
                    in.masked_ids.size() == in.masked_positions.size(),
                "bert: make_batch: instance ", i, " (", L, " tokens, ", K,
                " masked) does not fit seq_len ", S, " and max_predictions ", P,
                " or has mismatched arrays");
  }
  P = std::max<std::int64_t>(P, 1);
  PretrainingBatch b;
  b.input_ids = ember::empty<std::int64_t>({B, S});
  b.token_type_ids = ember::empty<std::int64_t>({B, S});
  b.attention_mask = ember::empty<std::int64_t>({B, S});
  b.masked_positions = ember::empty<std::int64_t>({B, P});
  b.masked_ids = ember::empty<std::int64_t>({B, P});
  b.next_sentence_labels = ember::empty<std::int64_t>({B});
  std::int64_t* ids = b.input_ids.data();
  std::int64_t* types = b.token_type_ids.data();
  std::int64_t* mask = b.attention_mask.data();
  std::int64_t* pos = b.masked_positions.data();
  std::int64_t* mids = b.masked_ids.data();
  std::int64_t* nsp = b.next_sentence_labels.data();
  for (std::int64_t r = 0; r < B; ++r) {
    const Instance& in = instances[static_cast<std::size_t>(indices[static_cast<std::size_t>(r)])];
    const auto L = static_cast<std::int64_t>(in.input_ids.size());
    const auto K = static_cast<std::int64_t>(in.masked_positions.size());
    for (std::int64_t j = 0; j < S; ++j) {
      const bool real = j < L;
      const auto u = static_cast<std::size_t>(j);
      ids[r * S + j] = real ? in.input_ids[u] : options.pad_id;
      types[r * S + j] = real ? in.token_type_ids[u] : 0;
      mask[r * S + j] = real ? 1 : 0;
    }
    for (std::int64_t k = 0; k < P; ++k) {
      const bool real = k < K;
      const auto u = static_cast<std::size_t>(k);
      pos[r * P + k] = real ? in.masked_positions[u] : 0;
      mids[r * P + k] = real ? in.masked_ids[u] : kIgnoreIndex;
    }
    nsp[r] = in.random_next ? 1 : 0;
  }
  return b;
}

}  // namespace bert
