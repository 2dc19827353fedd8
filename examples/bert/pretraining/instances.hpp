// BERT pretraining data: masked-LM + next-sentence-prediction instances, made the way Google's
// create_pretraining_data.py makes them (the MLPerf BERT reference's data), from tokenized
// documents. See docs/bert.md, "Pretraining data".
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
#pragma once

#include <cstdint>
#include <vector>

#include <ember/core/philox.hpp>
#include <ember/data/wordpiece.hpp>

#include "documents.hpp"

namespace bert {

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

}  // namespace detail::pt

/// The WordPiece ids of every sentence (sentences without tokens dropped, then documents
/// without sentences), tokenized in parallel with OpenMP.
std::vector<TokenizedDocument> tokenize_documents(const std::vector<Document>& docs,
                                                  const ember::data::WordPieceTokenizer& tok);

/// Masked-LM + NSP instances from tokenized documents (see the top of this file), shuffled.
/// Deterministic for options.seed whatever the number of threads. `stats`, when given, receives
/// the counts. Throws ember::Error on invalid options, an empty document or sentence, or an id
/// outside the vocab.
std::vector<Instance> create_instances(const std::vector<TokenizedDocument>& docs,
                                       const ember::data::WordPieceTokenizer& tok,
                                       const PretrainingOptions& options,
                                       InstanceStats* stats = nullptr);

/// tokenize_documents, then create_instances.
std::vector<Instance> create_instances(const std::vector<Document>& docs,
                                       const ember::data::WordPieceTokenizer& tok,
                                       const PretrainingOptions& options,
                                       InstanceStats* stats = nullptr);

/// Documents split into a training and a held-out evaluation set: each document goes to eval
/// with probability eval_fraction, by a hash of (seed, its index), so the split is the same on
/// every run and does not depend on the other documents. Splitting documents (not instances)
/// keeps the text of eval instances out of training.
struct DocumentSplit {
  std::vector<Document> train, eval;
};
DocumentSplit split_documents(std::vector<Document> docs, double eval_fraction,
                              std::uint64_t seed = 12345);

}  // namespace bert
