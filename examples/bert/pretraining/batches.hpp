// BERT pretraining instances as a batch of int64 tensors: ids, token types and the attention
// mask padded to seq_len, masked positions and their ids padded to max_predictions, and the
// next-sentence labels.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <ember/core/error.hpp>
#include <ember/tensor/factories.hpp>
#include <ember/tensor/tensor.hpp>

#include "instances.hpp"

namespace bert {

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
