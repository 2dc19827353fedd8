// BERT pretraining instances as a batch of int64 tensors: ids, token types and the attention
// mask padded to seq_len, masked positions and their ids padded to max_predictions, and the
// next-sentence labels.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

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
PretrainingBatch make_batch(const std::vector<Instance>& instances,
                            std::span<const std::int64_t> indices,
                            const BatchOptions& options = {});

}  // namespace bert
