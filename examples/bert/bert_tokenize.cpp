// bert_tokenize: BERT WordPiece token ids for each line of stdin, as Hugging Face's BertTokenizer
// gives them (tokenizer.encode(line, add_special_tokens=False)): one line of space-separated ids
// per input line, an empty line for a line without tokens.
//
//   bert_tokenize --vocab vocab.txt [--cased] < text.txt > ids.txt
//
// The work is data::encode_lines (include/ember/data/wordpiece.hpp), which
// tests/data/test_wordpiece.cpp tests; this file only reads the arguments. Host code only: it
// needs no GPU.
#include <cstdio>
#include <cstring>
#include <ember/core/error.hpp>
#include <ember/data/wordpiece.hpp>
#include <iostream>
#include <string>

namespace {

constexpr const char* kUsage =
    "usage: bert_tokenize --vocab FILE [--cased] < text > ids\n"
    "  --vocab FILE  a BERT vocab.txt (one token per line, id = line number from 0)\n"
    "  --cased       keep case and accents (cased vocabularies); the default lower-cases and\n"
    "                strips accents (uncased vocabularies)\n"
    "Prints the WordPiece ids of each stdin line, space-separated, one line per input line,\n"
    "without [CLS]/[SEP].\n";

}  // namespace

int main(int argc, char** argv) {
  std::string vocab;
  ember::data::WordPieceOptions opts;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (std::strcmp(a, "--vocab") == 0 && i + 1 < argc) {
      vocab = argv[++i];
    } else if (std::strncmp(a, "--vocab=", 8) == 0) {
      vocab = a + 8;
    } else if (std::strcmp(a, "--cased") == 0) {
      opts.lower_case = false;
    } else {
      std::fprintf(stderr, "bert_tokenize: unknown or incomplete argument '%s'\n%s", a, kUsage);
      return 2;
    }
  }
  if (vocab.empty()) {
    std::fprintf(stderr, "bert_tokenize: --vocab FILE is required\n%s", kUsage);
    return 2;
  }
  try {
    const ember::data::WordPieceTokenizer tok(vocab, opts);
    std::ios::sync_with_stdio(false);
    ember::data::encode_lines(tok, std::cin, std::cout);
    std::cout.flush();
    if (!std::cout) {
      std::fprintf(stderr, "bert_tokenize: cannot write the ids\n");
      return 1;
    }
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
