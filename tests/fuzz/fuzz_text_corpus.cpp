// BERT's text corpora (examples/bert/pretraining_data.hpp). An even first byte: the rest is a
// text file (plain or gzip) for read_text_documents, each line then split into sentences. An odd
// one: the rest is a GCIDE dictionary in dictd's format, its .index up to the first NUL byte and
// its .dict after it, for read_gcide (the index parsed, each entry's text made sentences).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bert/pretraining_data.hpp"
#include "fuzz_target.hpp"

EMBER_FUZZ_TARGET(text_corpus)(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    const auto path = ember::fuzz::scratch_file("corpus.txt", rest.data(), rest.size());
    ember::fuzz::expect_file_errors([&] {
      for (const bert::Document& doc : bert::read_text_documents({path})) {
        for (const std::string& line : doc) (void)bert::split_sentences(line);
      }
    });
  } else {
    const std::size_t nul = std::min(rest.find('\0'), rest.size());
    (void)ember::fuzz::scratch_file("gcide.index", rest.data(), nul);
    const std::string_view dict = rest.substr(std::min(nul + 1, rest.size()));
    const auto path = ember::fuzz::scratch_file("gcide.dict", dict.data(), dict.size());
    ember::fuzz::expect_file_errors([&] { (void)bert::read_gcide(path); });
  }
  return 0;
}
