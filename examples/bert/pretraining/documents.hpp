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
#include <vector>

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

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace detail::pt

/// The sentences of `text`, by rule: a sentence ends at '.', '!' or '?' (a run of them, then any
/// closing quotes or brackets) followed by whitespace and a character that may start a sentence
/// (an upper-case letter, a digit, an opening quote), unless the '.' ends an abbreviation or an
/// initial (period_is_abbreviation, documents.cpp). A period inside a number (3.5) is followed by
/// no whitespace and never splits. Whitespace runs become one space; sentences are trimmed and
/// empty ones dropped.
std::vector<std::string> split_sentences(std::string_view text);

// ---- text documents -----------------------------------------------------------------------------

/// Google's create_pretraining_data.py input: one sentence per line, a blank line (or a line of
/// whitespace) between documents, and a document also ends with its file. Files may be
/// gzip-compressed. Lines are trimmed; empty documents are dropped.
std::vector<Document> read_text_documents(std::span<const std::filesystem::path> paths);
inline std::vector<Document> read_text_documents(
    std::initializer_list<std::filesystem::path> paths) {
  return read_text_documents(std::span<const std::filesystem::path>(paths.begin(), paths.size()));
}

}  // namespace bert
