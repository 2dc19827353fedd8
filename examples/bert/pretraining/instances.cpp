// BERT's pretraining data, tokenize_documents, create_instances (the algorithm) and
// split_documents: the definitions of instances.hpp, which says what each function does. Compiled
// once into bert_pretraining_data (pretraining.cmake).
#include "instances.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include <ember/core/error.hpp>

namespace bert {

namespace detail::pt {

namespace {

constexpr std::uint64_t kShuffleStream = ~std::uint64_t{0};

void check_options(const PretrainingOptions& o) {
  EMBER_CHECK(o.seq_len >= 5 && o.seq_len <= (1 << 20), "bert: PretrainingOptions: seq_len ",
              o.seq_len, " must be in [5, 2^20] (room for [CLS], two [SEP] and a token each)");
  EMBER_CHECK(o.max_predictions >= 0 && o.max_predictions <= o.seq_len,
              "bert: PretrainingOptions: max_predictions ", o.max_predictions,
              " must be in [0, seq_len = ", o.seq_len, "]");
  auto prob = [](double p, const char* name) {
    EMBER_CHECK(p >= 0.0 && p <= 1.0, "bert: PretrainingOptions: ", name, " = ", p,
                " is not a probability");
  };
  prob(o.masked_lm_prob, "masked_lm_prob");
  prob(o.short_seq_prob, "short_seq_prob");
  prob(o.random_next_prob, "random_next_prob");
  EMBER_CHECK(o.dupe_factor >= 1, "bert: PretrainingOptions: dupe_factor ", o.dupe_factor,
              " must be at least 1");
}

struct Specials {
  std::int32_t cls, sep, mask;
  std::int64_t vocab;
  std::vector<std::int32_t> special;  // never drawn as the random token
};

/// Masks `inst` (input_ids complete) as BERT's masked LM does.
void mask_instance(Instance& inst, const PretrainingOptions& o, const Specials& sp, Rng& rng) {
  std::vector<std::int32_t> cand;
  cand.reserve(inst.input_ids.size());
  for (std::size_t i = 0; i < inst.input_ids.size(); ++i) {
    const std::int32_t id = inst.input_ids[i];
    if (id != sp.cls && id != sp.sep) cand.push_back(static_cast<std::int32_t>(i));
  }
  for (std::size_t i = cand.size(); i > 1; --i) {
    std::swap(cand[i - 1], cand[rng.below(i)]);
  }
  const double expected = std::nearbyint(static_cast<double>(inst.input_ids.size()) *
                                         o.masked_lm_prob);  // half to even, as Python's round
  const std::size_t want = static_cast<std::size_t>(
      std::min<double>(static_cast<double>(o.max_predictions), std::max(1.0, expected)));
  cand.resize(std::min(want, cand.size()));
  std::sort(cand.begin(), cand.end());
  inst.masked_positions = cand;
  inst.masked_ids.resize(cand.size());
  for (std::size_t k = 0; k < cand.size(); ++k) {
    std::int32_t& id = inst.input_ids[static_cast<std::size_t>(cand[k])];
    inst.masked_ids[k] = id;
    if (rng.uniform() < 0.8) {
      id = sp.mask;
    } else if (rng.uniform() < 0.5) {
      // keep the original
    } else {
      std::int32_t r;
      do {
        r = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(sp.vocab)));
      } while (std::find(sp.special.begin(), sp.special.end(), r) != sp.special.end());
      id = r;
    }
  }
}

/// The instances of one document in one round (create_pretraining_data.py's
/// create_instances_from_document).
void document_instances(const std::vector<TokenizedDocument>& docs, std::size_t d,
                        const PretrainingOptions& o, const Specials& sp, Rng& rng,
                        std::vector<Instance>& out, std::int64_t& forced) {
  const TokenizedDocument& doc = docs[d];
  const std::int64_t max_tokens = o.seq_len - 3;
  std::int64_t target = max_tokens;
  if (rng.uniform() < o.short_seq_prob) target = rng.between(2, max_tokens);

  std::vector<std::int32_t> a, b;
  std::size_t chunk_begin = 0;  // the chunk is doc[chunk_begin, i]
  std::int64_t chunk_len = 0;
  std::size_t i = 0;
  while (i < doc.size()) {
    chunk_len += static_cast<std::int64_t>(doc[i].size());
    if (i + 1 != doc.size() && chunk_len < target) {
      ++i;
      continue;
    }
    const std::size_t chunk_size = i + 1 - chunk_begin;
    const std::size_t a_end =
        chunk_size >= 2
            ? static_cast<std::size_t>(rng.between(1, static_cast<std::int64_t>(chunk_size - 1)))
            : 1;
    a.clear();
    b.clear();
    for (std::size_t k = chunk_begin; k < chunk_begin + a_end; ++k) {
      a.insert(a.end(), doc[k].begin(), doc[k].end());
    }
    bool random_next = chunk_size == 1;
    if (random_next) {
      ++forced;
    } else {
      random_next = rng.uniform() < o.random_next_prob;
    }
    if (random_next) {
      const std::int64_t target_b = target - static_cast<std::int64_t>(a.size());
      std::size_t r = d;
      for (int tries = 0; tries < 10 && r == d && docs.size() > 1; ++tries) {
        r = static_cast<std::size_t>(rng.below(docs.size()));
      }
      const TokenizedDocument& other = docs[r];
      for (std::size_t k = static_cast<std::size_t>(rng.below(other.size())); k < other.size();
           ++k) {
        b.insert(b.end(), other[k].begin(), other[k].end());
        if (static_cast<std::int64_t>(b.size()) >= target_b) break;
      }
      i = chunk_begin + a_end - 1;  // the sentences after A go back to the document
    } else {
      for (std::size_t k = chunk_begin + a_end; k <= i; ++k) {
        b.insert(b.end(), doc[k].begin(), doc[k].end());
      }
    }
    // Cut the pair to max_tokens: from the longer side, at its front or back at random. The
    // front is cut by moving a start index (erasing from a vector's front is quadratic).
    std::size_t a0 = 0, a1 = a.size(), b0 = 0, b1 = b.size();
    while (static_cast<std::int64_t>((a1 - a0) + (b1 - b0)) > max_tokens) {
      const bool cut_a = a1 - a0 > b1 - b0;
      std::size_t& front = cut_a ? a0 : b0;
      std::size_t& back = cut_a ? a1 : b1;
      if (rng.uniform() < 0.5) {
        ++front;
      } else {
        --back;
      }
    }
    Instance inst;
    inst.random_next = random_next;
    const std::size_t n = (a1 - a0) + (b1 - b0) + 3;
    inst.input_ids.reserve(n);
    inst.input_ids.push_back(sp.cls);
    inst.input_ids.insert(inst.input_ids.end(), a.begin() + static_cast<std::ptrdiff_t>(a0),
                          a.begin() + static_cast<std::ptrdiff_t>(a1));
    inst.input_ids.push_back(sp.sep);
    inst.token_type_ids.assign(inst.input_ids.size(), 0);
    inst.input_ids.insert(inst.input_ids.end(), b.begin() + static_cast<std::ptrdiff_t>(b0),
                          b.begin() + static_cast<std::ptrdiff_t>(b1));
    inst.input_ids.push_back(sp.sep);
    inst.token_type_ids.resize(n, 1);
    mask_instance(inst, o, sp, rng);
    out.push_back(std::move(inst));

    chunk_begin = i + 1;
    chunk_len = 0;
    ++i;
  }
}

}  // namespace

}  // namespace detail::pt

std::vector<TokenizedDocument> tokenize_documents(const std::vector<Document>& docs,
                                                  const ember::data::WordPieceTokenizer& tok) {
  EMBER_CHECK(tok.vocab_size() <= (std::int64_t{1} << 31), "bert: tokenize_documents: the vocab (",
              tok.vocab_size(), " tokens) does not fit int32 ids");
  std::vector<std::pair<std::size_t, std::size_t>> where;  // (document, sentence)
  for (std::size_t d = 0; d < docs.size(); ++d) {
    for (std::size_t s = 0; s < docs[d].size(); ++s) where.emplace_back(d, s);
  }
  std::vector<std::vector<std::int32_t>> ids(where.size());
  const auto n = static_cast<std::int64_t>(where.size());
#pragma omp parallel for schedule(dynamic, 256)
  for (std::int64_t k = 0; k < n; ++k) {
    const auto& [d, s] = where[static_cast<std::size_t>(k)];
    const std::vector<std::int64_t> v = tok.encode(docs[d][s]);
    ids[static_cast<std::size_t>(k)].assign(v.begin(), v.end());
  }
  std::vector<TokenizedDocument> out(docs.size());
  for (std::size_t k = 0; k < where.size(); ++k) {
    if (!ids[k].empty()) out[where[k].first].push_back(std::move(ids[k]));
  }
  std::erase_if(out, [](const TokenizedDocument& d) { return d.empty(); });
  return out;
}

std::vector<Instance> create_instances(const std::vector<TokenizedDocument>& docs,
                                       const ember::data::WordPieceTokenizer& tok,
                                       const PretrainingOptions& options, InstanceStats* stats) {
  detail::pt::check_options(options);
  for (std::size_t d = 0; d < docs.size(); ++d) {
    EMBER_CHECK(!docs[d].empty(), "bert: create_instances: tokenized document ", d,
                " has no sentence");
    for (const std::vector<std::int32_t>& sentence : docs[d]) {
      EMBER_CHECK(!sentence.empty(), "bert: create_instances: tokenized document ", d,
                  " has an empty sentence");
      for (std::int32_t id : sentence) {
        EMBER_CHECK(id >= 0 && id < tok.vocab_size(), "bert: create_instances: tokenized document ",
                    d, " holds the id ", id, ", outside the vocab [0, ", tok.vocab_size(), ")");
      }
    }
  }
  detail::pt::Specials sp{static_cast<std::int32_t>(tok.cls_id()),
                          static_cast<std::int32_t>(tok.sep_id()),
                          static_cast<std::int32_t>(tok.mask_id()),
                          tok.vocab_size(),
                          {}};
  for (std::int64_t id : {tok.cls_id(), tok.sep_id(), tok.mask_id(), tok.pad_id(), tok.unk_id()}) {
    sp.special.push_back(static_cast<std::int32_t>(id));
  }
  EMBER_CHECK(tok.vocab_size() > static_cast<std::int64_t>(sp.special.size()),
              "bert: create_instances: the vocab holds only special tokens");

  const std::size_t rounds = static_cast<std::size_t>(options.dupe_factor);
  const std::size_t jobs = rounds * docs.size();
  std::vector<std::vector<Instance>> parts(jobs);
  std::int64_t forced = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : forced)
  for (std::int64_t j = 0; j < static_cast<std::int64_t>(jobs); ++j) {
    const std::size_t round = static_cast<std::size_t>(j) / docs.size();
    const std::size_t d = static_cast<std::size_t>(j) % docs.size();
    detail::pt::Rng rng(options.seed, (static_cast<std::uint64_t>(round) << 40) | d);
    detail::pt::document_instances(docs, d, options, sp, rng, parts[static_cast<std::size_t>(j)],
                                   forced);
  }
  std::size_t total = 0;
  for (const auto& p : parts) total += p.size();
  std::vector<Instance> out;
  out.reserve(total);
  for (auto& p : parts) {
    for (Instance& inst : p) out.push_back(std::move(inst));
    std::vector<Instance>().swap(p);
  }
  detail::pt::Rng shuffle(options.seed, detail::pt::kShuffleStream);
  for (std::size_t i = out.size(); i > 1; --i) std::swap(out[i - 1], out[shuffle.below(i)]);

  if (stats) {
    *stats = {};
    stats->documents = static_cast<std::int64_t>(docs.size());
    for (const TokenizedDocument& d : docs) {
      stats->sentences += static_cast<std::int64_t>(d.size());
      for (const auto& s : d) stats->tokens += static_cast<std::int64_t>(s.size());
    }
    stats->instances = static_cast<std::int64_t>(out.size());
    stats->forced_random_next = forced;
    for (const Instance& inst : out) {
      stats->random_next += inst.random_next ? 1 : 0;
      stats->masked += static_cast<std::int64_t>(inst.masked_positions.size());
    }
  }
  return out;
}

std::vector<Instance> create_instances(const std::vector<Document>& docs,
                                       const ember::data::WordPieceTokenizer& tok,
                                       const PretrainingOptions& options, InstanceStats* stats) {
  detail::pt::check_options(options);
  return create_instances(tokenize_documents(docs, tok), tok, options, stats);
}

DocumentSplit split_documents(std::vector<Document> docs, double eval_fraction,
                              std::uint64_t seed) {
  EMBER_CHECK(eval_fraction >= 0.0 && eval_fraction <= 1.0, "bert: split_documents: eval_fraction ",
              eval_fraction, " is not in [0, 1]");
  DocumentSplit out;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const ember::PhiloxBlock r = ember::philox4x32(seed, i, 0x5EEDu);
    const double u = static_cast<double>((std::uint64_t{r.v[0]} << 21) ^ r.v[1]) * 0x1p-53;
    (u < eval_fraction ? out.eval : out.train).push_back(std::move(docs[i]));
  }
  return out;
}

}  // namespace bert
