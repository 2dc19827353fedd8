// The BERT trainer's data: the corpus (--corpus) made into masked-LM and next-sentence instances
// once and cached (pretraining_data.hpp), a held-out part for evaluation, or random synthetic
// instances; and batches of them on the device.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <ember/data/wordpiece.hpp>
#include <ember/ember.hpp>

#include "common/run_support.hpp"
#include "options.hpp"
#include "pretraining_data.hpp"

namespace bert {

using namespace ember;
using trainer::printf0;
using trainer::seconds_since;

/// Training and evaluation instances, and what the report compares against.
struct PretrainData {
  std::vector<Instance> train, eval;
  /// The share of the evaluation set's masked tokens equal to the training set's most frequent
  /// masked token: the masked-LM accuracy of a model that learned only the unigram distribution.
  double unigram_baseline = 0;
};

/// `count` random full-length instances ([CLS], A and B of random non-special tokens, two [SEP],
/// max_predictions masked): the corpus of --corpus synthetic, for raw throughput, like the ResNet
/// trainer's synthetic images. Nothing in them can be learned beyond the unigram distribution.
inline std::vector<Instance> synthetic_instances(std::int64_t count, const PretrainingOptions& o,
                                                 const data::WordPieceTokenizer& tokenizer) {
  const auto S = static_cast<std::int32_t>(o.seq_len);
  const auto P = static_cast<std::int32_t>(std::min<std::int64_t>(o.max_predictions, S - 3));
  // Ids past the special and unused tokens of BERT's vocabularies ([unused*] end at 998).
  const std::int32_t low = tokenizer.vocab_size() > 2000 ? 999 : 5;
  const auto span = static_cast<std::uint64_t>(tokenizer.vocab_size() - low);
  detail::pt::Rng rng(o.seed, /*stream=*/0x5e7);
  std::vector<Instance> out(static_cast<std::size_t>(count));
  for (Instance& in : out) {
    const std::int32_t first_sep = 1 + (S - 3) / 2;
    for (std::int32_t t = 0; t < S; ++t) {
      const bool special = t == 0 || t == first_sep || t == S - 1;
      in.input_ids.push_back(
          special ? static_cast<std::int32_t>(t == 0 ? tokenizer.cls_id() : tokenizer.sep_id())
                  : low + static_cast<std::int32_t>(rng.below(span)));
      in.token_type_ids.push_back(t > first_sep ? 1 : 0);
    }
    for (std::int32_t k = 0; k < P; ++k) {
      // Evenly spread positions, none of them special.
      std::int32_t pos = 1 + k * (S - 2) / P;
      if (pos == first_sep) ++pos;
      in.masked_positions.push_back(pos);
      in.masked_ids.push_back(in.input_ids[static_cast<std::size_t>(pos)]);
      in.input_ids[static_cast<std::size_t>(pos)] = static_cast<std::int32_t>(tokenizer.mask_id());
    }
    in.random_next = (rng.next32() & 1) != 0;
  }
  return out;
}

inline PretrainData open_pretrain_data(const PretrainConfig& c,
                                       const data::WordPieceTokenizer& tokenizer) {
  PretrainingOptions po;
  po.seq_len = c.seq_len;
  po.max_predictions = c.max_predictions;
  po.dupe_factor = c.dupe_factor;
  po.seed = c.seed;
  const auto t0 = std::chrono::steady_clock::now();
  PretrainData d;
  if (c.corpus == "synthetic") {
    d.train = synthetic_instances(c.max_documents > 0 ? c.max_documents : 8192, po, tokenizer);
    po.seed += 1;
    d.eval = synthetic_instances(c.eval_sequences, po, tokenizer);
  } else {
    const std::filesystem::path gcide = "/usr/share/dictd/gcide.dict.dz";
    std::vector<std::filesystem::path> files;
    if (c.corpus == "gcide") {
      EMBER_CHECK(std::filesystem::exists(gcide), "bert_pretrain: ", gcide.string(),
                  " is missing: apt-get install dict-gcide (or pass --corpus FILES)");
      files.push_back(gcide);
    } else {
      std::string rest = c.corpus;
      while (!rest.empty()) {
        const std::size_t at = rest.find(',');
        files.emplace_back(rest.substr(0, at));
        rest = at == std::string::npos ? "" : rest.substr(at + 1);
      }
    }
    // Whole documents are held out (2% of them), so no evaluation text is trained on. Each
    // split is made once and cached; a second run loads both.
    const auto read_split = [&](bool eval) {
      const std::int64_t most = c.max_documents > 0 ? c.max_documents : -1;
      std::vector<Document> docs;
      if (c.corpus == "gcide") {
        // A dictionary entry holds 2.4 sentences on average: neighbouring entries are joined
        // into documents of at least 10 sentences, so most sentence pairs are real ones.
        docs = merge_short_documents(read_gcide(gcide, most), 10);
      } else {
        docs = read_text_documents(files);
        if (most > 0 && static_cast<std::int64_t>(docs.size()) > most) docs.resize(most);
      }
      DocumentSplit split = split_documents(std::move(docs), 0.02, c.seed);
      printf0("corpus: %zu training and %zu evaluation documents\n", split.train.size(),
              split.eval.size());
      return eval ? std::move(split.eval) : std::move(split.train);
    };
    for (const bool eval : {false, true}) {
      CacheInfo cache;
      std::vector<Instance> part = cached_instances(
          c.cache_dir,
          corpus_identity(files, c.corpus + (eval ? " eval" : " train") +
                                     " max_documents=" + std::to_string(c.max_documents)),
          tokenizer, po, [&] { return read_split(eval); }, &cache);
      printf0("%s instances %s %s\n", eval ? "evaluation" : "training",
              cache.loaded ? "loaded from" : "made and cached in", cache.file.string().c_str());
      (eval ? d.eval : d.train) = std::move(part);
    }
    if (static_cast<std::int64_t>(d.eval.size()) > c.eval_sequences)
      d.eval.resize(c.eval_sequences);
  }
  printf0("instances: %zu training and %zu evaluation sequences of up to %lld tokens (%.1f s)\n",
          d.train.size(), d.eval.size(), static_cast<long long>(c.seq_len), seconds_since(t0));
  EMBER_CHECK(static_cast<std::int64_t>(d.train.size()) >= c.batch && !d.eval.empty(),
              "bert_pretrain: the corpus gave ", d.train.size(), " training and ", d.eval.size(),
              " evaluation sequences: too few for batches of ", c.batch);

  std::map<std::int32_t, std::int64_t> counts;
  for (const Instance& in : d.train) {
    for (const std::int32_t id : in.masked_ids) ++counts[id];
  }
  const auto most =
      std::max_element(counts.begin(), counts.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  std::int64_t hits = 0, total = 0;
  for (const Instance& in : d.eval) {
    for (const std::int32_t id : in.masked_ids) {
      hits += most != counts.end() && id == most->first;
      ++total;
    }
  }
  d.unigram_baseline = total > 0 ? static_cast<double>(hits) / static_cast<double>(total) : 0;
  return d;
}

/// The batch of `indices`, on `device`.
inline PretrainingBatch batch_on(const std::vector<Instance>& instances,
                                 std::span<const std::int64_t> indices, const PretrainConfig& c,
                                 Device device) {
  // Fixed shapes: every batch is [B, seq_len] with max_predictions slots.
  PretrainingBatch b =
      make_batch(instances, indices, {.seq_len = c.seq_len, .max_predictions = c.max_predictions});
  if (device.is_cpu()) return b;
  for (Tensor<std::int64_t>* t : {&b.input_ids, &b.token_type_ids, &b.attention_mask,
                                  &b.masked_positions, &b.masked_ids, &b.next_sentence_labels}) {
    *t = t->to(device);
  }
  return b;
}

}  // namespace bert
