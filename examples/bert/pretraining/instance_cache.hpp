// BERT pretraining instances in a binary cache file, and the cache that keys them by corpus,
// vocabulary and options (cached_instances).
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
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ember/data/wordpiece.hpp>

#include "instances.hpp"

namespace bert {

// ---- the cache file -----------------------------------------------------------------------------

inline constexpr char kCacheMagic[8] = {'E', 'M', 'B', 'E', 'R', 'B', 'P', 'T'};
inline constexpr std::uint32_t kCacheVersion = 1;
inline constexpr std::uint32_t kCacheHeaderBytes = 64;

/// Writes `instances` to `path` in the cache format (top of this file), atomically: a crash or
/// an error leaves the previous file, if any, and no temporary file (bar a crash). Every
/// instance is checked as it is written (at most options.seq_len ids, options.max_predictions
/// positions, the [CLS] A [SEP] B [SEP] type layout); a bad one throws ember::Error naming its
/// index. `key` is stored for cached_instances.
void save_instances(const std::filesystem::path& path, const std::vector<Instance>& instances,
                    const PretrainingOptions& options, std::uint64_t key = 0);

/// What a cache file's header says.
struct CacheHeader {
  std::int64_t seq_len = 0, max_predictions = 0, count = 0;
  std::uint64_t key = 0;
};

/// Reads a file written by save_instances. Throws ember::Error naming the file when it is
/// missing, not this format (magic), of another version, truncated or longer than its header
/// says, fails its CRC, or holds an inconsistent record. `header`, when given, receives the
/// header.
std::vector<Instance> load_instances(const std::filesystem::path& path,
                                     CacheHeader* header = nullptr);

// ---- cache keys ---------------------------------------------------------------------------------

/// Bumped whenever the readers or the instance algorithm change what they produce, so that old
/// caches are not reused.
inline constexpr std::string_view kDataVersion = "bert-pretraining-data/1";

/// The identity of corpus files: for each, its absolute path, size and modification time (and
/// `extra`, e.g. the reader and its arguments), as a string for cache_key. Throws ember::Error
/// naming a file that does not exist.
std::string corpus_identity(std::span<const std::filesystem::path> files,
                            std::string_view extra = {});
inline std::string corpus_identity(std::initializer_list<std::filesystem::path> files,
                                   std::string_view extra = {}) {
  return corpus_identity(std::span<const std::filesystem::path>(files.begin(), files.size()),
                         extra);
}

/// A 64-bit FNV-1a hash of kDataVersion, the corpus identity, the vocab (every token, and the
/// tokenizer's options) and the options.
std::uint64_t cache_key(std::string_view corpus, const ember::data::WordPieceTokenizer& tok,
                        const PretrainingOptions& o);

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
std::vector<Instance> cached_instances(const std::filesystem::path& cache_dir,
                                       std::string_view corpus,
                                       const ember::data::WordPieceTokenizer& tok,
                                       const PretrainingOptions& options,
                                       const std::function<std::vector<Document>()>& read_corpus,
                                       CacheInfo* info = nullptr);

}  // namespace bert
