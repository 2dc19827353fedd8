// BERT's pretraining data, the dict-gcide reader (dictd's index, an entry's text made plain): the
// definitions of gcide.hpp, which says what each function does. Compiled once into
// bert_pretraining_data (pretraining.cmake).
#include "gcide.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <string>
#include <utility>

#include <ember/core/error.hpp>
#include <ember/data/idx.hpp>

namespace bert {

std::uint64_t decode_dictd_base64(std::string_view s) {
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

namespace {

/// Whether `inner` (the text between brackets) is a label of abbreviations such as "Zool.",
/// "Obs.", "Naut. & Mil." or "R." (every word ends in '.'), or in square brackets one of a few
/// usage words ("Archaic", "Colloq"); at most 24 characters.
bool is_label(std::string_view inner, bool square) {
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
bool is_pos_line(std::string_view t) {
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
bool is_source_tag(std::string_view inner) {
  for (std::string_view tag : {"Webster", "WordNet", "PJC", "Century", "Dict.", "Supp"}) {
    if (inner.find(tag) != std::string_view::npos) return true;
  }
  return false;
}

/// Whether `t` (a trimmed line) starts with a source tag or is one bracketed group.
bool is_source_tag_line(std::string_view t) {
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
std::string gcide_letter(std::string_view two) {
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
std::string plain_gcide_paragraph(const std::vector<std::string_view>& lines) {
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

}  // namespace

}  // namespace detail::pt

Document gcide_entry_sentences(std::string_view entry) {
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

namespace {

struct GcideEntry {
  std::uint64_t offset = 0, length = 0;
};

/// The entries of a dictd .index, unique by byte range and sorted by offset; the ranges of the
/// 00-database-* metadata headwords (and other headwords sharing them) are left out.
std::vector<GcideEntry> read_dictd_index(const std::filesystem::path& index) {
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

}  // namespace

}  // namespace detail::pt

std::vector<Document> read_gcide(const std::filesystem::path& dict, std::int64_t max_documents) {
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

std::vector<Document> merge_short_documents(std::vector<Document> docs, std::size_t min_sentences) {
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

}  // namespace bert
