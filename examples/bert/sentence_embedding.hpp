// Sentence embeddings with all-MiniLM-L6-v2, as sentence-transformers computes them: each
// sentence as [CLS] tokens [SEP] (at most 256 ids, the model's max_seq_length), the batch
// padded to its longest, BertModel's last hidden state averaged over each sentence's own tokens
// (the attention mask), then scaled to unit length. examples/bert/bert_embed.cpp is the command
// line; tests/examples/test_bert.cpp checks the values against the Python stack's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <ember/data/wordpiece.hpp>
#include <ember/ember.hpp>

#include "bert.hpp"

namespace bert {

/// all-MiniLM-L6-v2's shape: 6 layers, 384 wide, 12 heads, 1536 in the feed-forward.
inline BertConfig minilm_config() {
  return BertConfig{.hidden = 384, .layers = 6, .heads = 12, .intermediate = 1536};
}

/// A padded batch of sentences: ids, token types (all 0) and the attention mask, int64 [B, S].
struct SentenceBatch {
  ember::Tensor<std::int64_t> input_ids, token_type_ids, attention_mask;
};

/// [CLS] sentence [SEP] for each line, truncated to max_length ids, padded with [PAD].
inline SentenceBatch encode_sentences(const ember::data::WordPieceTokenizer& tok,
                                      const std::vector<std::string>& lines,
                                      std::int64_t max_length = 256) {
  EMBER_CHECK(!lines.empty(), "bert: encode_sentences: no sentences");
  EMBER_CHECK(max_length >= 2, "bert: encode_sentences: max_length ", max_length,
              " leaves no room for [CLS] and [SEP]");
  std::vector<std::vector<std::int64_t>> rows;
  std::size_t longest = 0;
  for (const std::string& line : lines) {
    std::vector<std::int64_t> ids = tok.encode(line);
    ids.resize(std::min<std::size_t>(ids.size(), static_cast<std::size_t>(max_length - 2)));
    ids.insert(ids.begin(), tok.cls_id());
    ids.push_back(tok.sep_id());
    longest = std::max(longest, ids.size());
    rows.push_back(std::move(ids));
  }
  const auto B = static_cast<std::int64_t>(rows.size()), S = static_cast<std::int64_t>(longest);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(B * S), tok.pad_id()), mask(ids.size(), 0);
  for (std::size_t b = 0; b < rows.size(); ++b) {
    std::copy(rows[b].begin(), rows[b].end(),
              ids.begin() + static_cast<std::ptrdiff_t>(b * longest));
    std::fill_n(mask.begin() + static_cast<std::ptrdiff_t>(b * longest), rows[b].size(), 1);
  }
  return {ember::from_vector(ids, ember::Shape{B, S}),
          ember::zeros<std::int64_t>(ember::Shape{B, S}),
          ember::from_vector(mask, ember::Shape{B, S})};
}

/// Mean-pooled, unit-length embeddings [B, H] of a batch, in float, without recording.
template <class T>
ember::Tensor<float> sentence_embeddings(BertModel<T>& model, const SentenceBatch& batch,
                                         ember::Device device = ember::Device::cpu()) {
  using namespace ember;
  no_grad guard;
  const Tensor<float> hidden =
      Tensor<float>(cast<float>(model(batch.input_ids.to(device), batch.token_type_ids.to(device),
                                      batch.attention_mask.to(device))
                                    .last_hidden_state.value()));
  const Tensor<float> mask =
      Tensor<float>(cast<float>(batch.attention_mask.to(device))).unsqueeze(2);  // [B, S, 1]
  const Tensor<float> summed = sum(hidden * mask, {1});                          // [B, H]
  const Tensor<float> count = sum(mask, {1});                                    // [B, 1]
  // sentence-transformers clamps the count at 1e-9, and its Normalize layer the norm at 1e-12.
  const Tensor<float> mean = summed / max(count, 1e-9);
  const Tensor<float> norm = sqrt(sum(mean * mean, {1}, true));
  return Tensor<float>(mean / max(norm, 1e-12)).to(Device::cpu());
}

}  // namespace bert
