// BERT's pretraining data, make_batch: the definitions of batches.hpp, which says what each
// function does. Compiled once into bert_pretraining_data (pretraining.cmake).
#include "batches.hpp"

#include <algorithm>

#include <ember/core/error.hpp>
#include <ember/tensor/factories.hpp>

namespace bert {

PretrainingBatch make_batch(const std::vector<Instance>& instances,
                            std::span<const std::int64_t> indices, const BatchOptions& options) {
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
