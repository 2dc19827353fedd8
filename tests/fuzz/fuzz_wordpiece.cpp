// vocab.txt and WordPiece encoding (data/wordpiece.hpp). The first byte chooses: bit 0 lower-case
// (uncased) or not; bit 1 the vocab: the rest up to its first NUL byte as a vocab.txt of its own
// (then the text after it), or tests/data/wordpiece_vocab.txt (then the whole rest is text). The
// text goes through tokenize, encode, encode_pair and bert_tokenize's line loop.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include <ember/data/wordpiece.hpp>

#include "fuzz_target.hpp"

namespace {

/// The committed vocab's tokenizer, read once per option (reading 30,522 lines per input would
/// leave the fuzzer a few inputs a second).
const ember::data::WordPieceTokenizer& committed_vocab(bool lower_case) {
  static const ember::data::WordPieceTokenizer uncased(EMBER_FUZZ_VOCAB, {.lower_case = true});
  static const ember::data::WordPieceTokenizer cased(EMBER_FUZZ_VOCAB, {.lower_case = false});
  return lower_case ? uncased : cased;
}

}  // namespace

EMBER_FUZZ_TARGET(wordpiece)(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  ember::data::WordPieceOptions options;
  options.lower_case = (data[0] & 1) != 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::optional<ember::data::WordPieceTokenizer> own;
  if ((data[0] & 2) != 0) {
    const std::size_t nul = std::min(text.find('\0'), text.size());
    const auto path = ember::fuzz::scratch_file("vocab.txt", text.data(), nul);
    ember::fuzz::expect_file_errors([&] { own.emplace(path, options); });
    if (!own) return 0;
    text.remove_prefix(std::min(nul + 1, text.size()));
  }
  ember::fuzz::expect_errors([&] {
    const ember::data::WordPieceTokenizer& tok = own ? *own : committed_vocab(options.lower_case);
    (void)tok.tokenize(text);
    (void)tok.encode(text);
    (void)tok.encode_pair(text, text.substr(text.size() / 2), 3 + text.size() % 16);
    std::istringstream lines{std::string(text)};
    std::ostringstream ids;
    (void)ember::data::encode_lines(tok, lines, ids);
  });
  return 0;
}
