// The GPT-2 trainer's data: --text tokenized once with GPT-2's BPE into llm.c's token files
// (train.bin, and val.bin: the last --val-fraction of the tokens), or the files --data names.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <sstream>
#include <vector>

#include <ember/data/gpt2_bpe.hpp>
#include <ember/data/token_files.hpp>
#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>

#include "common/run_support.hpp"
#include "options.hpp"

namespace gpt2 {

using namespace ember;
using trainer::printf0;

/// The training and validation tokens, and the unigram entropy of the training tokens (nats):
/// the loss of a model that predicts every token from its frequency alone.
struct Corpus {
  std::vector<std::uint16_t> train, val;
  double unigram_entropy = 0;
};

/// --text's tokens ([end of text] first, as llm.c's files start) into train.bin and val.bin.
inline void write_token_files(const TrainConfig& c, const data::Gpt2Bpe& bpe) {
  std::ifstream in(c.text, std::ios::binary);
  EMBER_CHECK(in, "gpt2_train: cannot read --text '", c.text, "'");
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<std::int32_t> ids{data::Gpt2Bpe::kEndOfText};
  const std::vector<std::int32_t> body = bpe.encode(text.str());
  ids.insert(ids.end(), body.begin(), body.end());
  const auto held_out =
      static_cast<std::size_t>(std::ceil(c.val_fraction * static_cast<double>(ids.size())));
  const std::size_t split = ids.size() - std::min(held_out, ids.size());
  const std::filesystem::path dir = data_dir(c);
  std::filesystem::create_directories(dir);
  data::write_token_file(dir / "train.bin", std::span(ids).first(split));
  data::write_token_file(dir / "val.bin", std::span(ids).subspan(split));
  printf0("tokenized %s: %zu characters, %zu tokens (%zu held out) into %s\n", c.text.c_str(),
          text.str().size(), ids.size(), ids.size() - split, dir.string().c_str());
}

inline Corpus open_corpus(const TrainConfig& c) {
  // Rank 0 tokenizes --text first; the others then read its files.
  if (!c.text.empty()) {
    if (dist::rank() == 0) write_token_files(c, data::Gpt2Bpe::from_tiktoken(c.vocab));
    dist::barrier();
  }
  Corpus corpus{data::read_token_file(data_dir(c) / "train.bin"),
                data::read_token_file(data_dir(c) / "val.bin")};
  std::map<std::uint16_t, std::int64_t> counts;
  for (const std::uint16_t t : corpus.train) ++counts[t];
  for (const auto& [token, n] : counts) {
    const double p = static_cast<double>(n) / static_cast<double>(corpus.train.size());
    corpus.unigram_entropy -= p * std::log(p);
  }
  return corpus;
}

}  // namespace gpt2
