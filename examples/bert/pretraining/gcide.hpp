// Debian's dict-gcide (GNU's Collaborative International Dictionary of English, the 1913 Webster
// plus WordNet) as BERT pretraining documents: read_gcide gives one document per dictionary
// entry, its headword lines, citations and source tags dropped and its text split into sentences
// by split_sentences. Entries are short (2.4 sentences on average): merge_short_documents joins
// neighbours into longer documents.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "documents.hpp"

namespace bert {

// ---- dict-gcide ---------------------------------------------------------------------------------

/// A number in dictd's base64 (digits A-Z a-z 0-9 + / for 0..63, most significant first), as in
/// the offsets and lengths of a dictd .index file. Throws ember::Error on any other character,
/// an empty string or more than 10 digits.
std::uint64_t decode_dictd_base64(std::string_view s);

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
/// (plain_gcide_paragraph, gcide.cpp) and split into sentences; sentences without an ASCII
/// letter are dropped.
Document gcide_entry_sentences(std::string_view entry);

/// The entries of Debian's dict-gcide (`apt-get install dict-gcide`) as documents, in the order
/// of the dictionary file, at most `max_documents` of them (all when negative). `dict` is the
/// dictzip file; the index is the same path with ".index" for ".dict.dz" (or ".dict").
/// Entries without a sentence are skipped. Throws ember::Error naming the file when a file is
/// missing or corrupt, or an index range lies outside the text.
std::vector<Document> read_gcide(
    const std::filesystem::path& dict = "/usr/share/dictd/gcide.dict.dz",
    std::int64_t max_documents = -1);

/// Consecutive documents joined until each holds at least `min_sentences` sentences (the last
/// one may hold fewer). Dictionary entries are short (dict-gcide: 2.4 sentences on average), so
/// most of their instances would be short, and a chunk of one sentence always takes a random
/// B; joining neighbouring entries (alphabetical, so often related words) gives longer
/// instances and a next-sentence label nearer the coin's.
std::vector<Document> merge_short_documents(std::vector<Document> docs, std::size_t min_sentences);

}  // namespace bert
