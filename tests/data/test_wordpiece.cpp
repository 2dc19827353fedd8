// BERT's WordPiece tokenizer against Hugging Face's: wordpiece_cases.json holds the ids that
// transformers' Python BertTokenizer gives on the vocab wordpiece_vocab.txt (bert-base-uncased's
// 30522 tokens) for hand-written and pseudo-random text, pairs, and every code point
// (make_wordpiece_fixtures.py writes both files). Then the special tokens, [UNK] for long words,
// invalid UTF-8, refused vocabs, and bert_tokenize's loop.
#include <catch2/catch.hpp>

#include <cstdint>
#include <ember/data/wordpiece.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/files.hpp"

using namespace ember;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ember::testing::TempDir;
using ember::testing::write_bytes;

namespace {
namespace test_data_wordpiece {

fs::path data_path(const std::string& name) { return fs::path(__FILE__).parent_path() / name; }

const nlohmann::json& fixtures() {
  static const nlohmann::json doc = [] {
    std::ifstream in(data_path("wordpiece_cases.json"));
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
  }();
  return doc;
}

const data::WordPieceTokenizer& uncased() {
  static const data::WordPieceTokenizer tok(data_path("wordpiece_vocab.txt"));
  return tok;
}

std::string hex(const std::string& s) {
  std::ostringstream os;
  for (char c : s) os << std::hex << (static_cast<int>(c) & 0xFF) << ' ';
  return os.str();
}

// 64-bit FNV-1a over the ids as 8 little-endian bytes each (make_wordpiece_fixtures.py's fnv1a).
std::string fnv1a(const std::vector<std::int64_t>& ids) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (std::int64_t v : ids) {
    const auto u = static_cast<std::uint64_t>(v);
    for (int b = 0; b < 8; ++b) {
      h ^= (u >> (8 * b)) & 0xFF;
      h *= 0x100000001B3ull;
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

TEST_CASE("wordpiece: every fixture text gives Hugging Face's ids", "[data][wordpiece]") {
  const auto& cases = fixtures().at("cases");
  REQUIRE(cases.size() >= 250);
  for (const auto& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    const auto want = c.at("ids").get<std::vector<std::int64_t>>();
    INFO("text: " << text << "\nbytes: " << hex(text));
    CHECK(uncased().encode(text) == want);
    // tokenize() names the same pieces.
    const std::vector<std::string> pieces = uncased().tokenize(text);
    REQUIRE(pieces.size() == want.size());
    for (std::size_t i = 0; i < pieces.size(); ++i) CHECK(uncased().id(pieces[i]) == want[i]);
  }
}

TEST_CASE("wordpiece: every code point is tokenized as Hugging Face does", "[data][wordpiece]") {
  const auto& blocks = fixtures().at("codepoint_blocks");
  REQUIRE(blocks.size() == 0x110000 / 4096);
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    std::string text;
    for (char32_t c = static_cast<char32_t>(4096 * k); c < 4096 * (k + 1); ++c) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      data::detail::wp::append_utf8(text, c);
      text += ' ';
    }
    INFO("code points " << std::hex << 4096 * k << " to " << 4096 * (k + 1) - 1);
    CHECK(fnv1a(uncased().encode(text)) == blocks[k].get<std::string>());
  }
}

TEST_CASE("wordpiece: a cased tokenizer on NFC text gives Hugging Face's ids",
          "[data][wordpiece]") {
  data::WordPieceOptions opts;
  opts.lower_case = false;
  const data::WordPieceTokenizer cased(data_path("wordpiece_vocab.txt"), opts);
  for (const auto& c : fixtures().at("cased_cases")) {
    const std::string text = c.at("text").get<std::string>();
    INFO("text: " << text);
    CHECK(cased.encode(text) == c.at("ids").get<std::vector<std::int64_t>>());
  }
}

TEST_CASE("wordpiece: encode_pair truncates longest first as Hugging Face", "[data][wordpiece]") {
  for (const auto& c : fixtures().at("pairs")) {
    const auto a = c.at("a").get<std::string>(), b = c.at("b").get<std::string>();
    const auto max_len = c.at("max_len").get<std::size_t>();
    INFO("a: " << a << "\nb: " << b << "\nmax_len: " << max_len);
    const data::EncodedPair p = uncased().encode_pair(a, b, max_len);
    CHECK(p.input_ids == c.at("input_ids").get<std::vector<std::int64_t>>());
    CHECK(p.token_type_ids == c.at("token_type_ids").get<std::vector<std::int64_t>>());
  }
  CHECK_THROWS_WITH(uncased().encode_pair("a", "b", 2), Contains("max_len 2"));
  const data::EncodedPair empty = uncased().encode_pair("", "", 3);
  CHECK(empty.input_ids == std::vector<std::int64_t>{101, 102, 102});
  CHECK(empty.token_type_ids == std::vector<std::int64_t>{0, 0, 1});
}

TEST_CASE("wordpiece: vocab, special tokens and examples", "[data][wordpiece]") {
  const data::WordPieceTokenizer& t = uncased();
  CHECK(t.vocab_size() == 30522);
  CHECK(t.pad_id() == 0);
  CHECK(t.unk_id() == 100);
  CHECK(t.cls_id() == 101);
  CHECK(t.sep_id() == 102);
  CHECK(t.mask_id() == 103);
  CHECK(t.token(101) == "[CLS]");
  CHECK(t.id("hello") == 7592);
  CHECK(t.id("no-such-token") == t.unk_id());
  CHECK_FALSE(t.contains("no-such-token"));
  CHECK_THROWS_WITH(t.token(30522), Contains("outside the vocab"));
  CHECK_THROWS_WITH(t.token(-1), Contains("outside the vocab"));

  CHECK(t.tokenize("unaffable") == std::vector<std::string>{"una", "##ffa", "##ble"});
  CHECK(t.encode("Hello, world!") == std::vector<std::int64_t>{7592, 1010, 2088, 999});
  CHECK(t.basic_tokenize("  Caf\xC3\xA9, NA\xC3\x8FVE!\t\xE4\xBD\xA0\xE5\xA5\xBD ") ==
        std::vector<std::string>{"cafe", ",", "naive", "!", "\xE4\xBD\xA0", "\xE5\xA5\xBD"});
  CHECK(t.encode("").empty());
  CHECK(t.encode(" \t\r\n").empty());
}

TEST_CASE("wordpiece: words longer than 100 characters are [UNK]", "[data][wordpiece]") {
  const data::WordPieceTokenizer& t = uncased();
  CHECK(t.encode(std::string(100, 'a')) != std::vector<std::int64_t>{t.unk_id()});
  CHECK(t.encode(std::string(101, 'a')) == std::vector<std::int64_t>{t.unk_id()});
  // Counted in code points after normalization: 101 "é" are 202 bytes, 101 letters.
  std::string e101;
  for (int i = 0; i < 101; ++i) e101 += "\xC3\xA9";
  CHECK(t.encode(e101) == std::vector<std::int64_t>{t.unk_id()});
  data::WordPieceOptions opts;
  opts.max_input_chars_per_word = 3;
  const data::WordPieceTokenizer short_words(data_path("wordpiece_vocab.txt"), opts);
  CHECK(short_words.encode("the cats") == std::vector<std::int64_t>{1996, 100});
}

TEST_CASE("wordpiece: invalid UTF-8 is dropped, never a crash", "[data][wordpiece]") {
  const data::WordPieceTokenizer& t = uncased();
  // Bad bytes become U+FFFD, which the cleaning drops (Python: decode(errors="replace")).
  CHECK(t.encode("ab\xFF"
                 "cd") == t.encode("abcd"));
  CHECK(t.encode("hello \xC3") == t.encode("hello "));             // cut short at the end
  CHECK(t.encode("\xE2\x82 x") == t.encode(" x"));                 // cut short before a space
  CHECK(t.encode("\xC0\xAF \xE0\x80\xAF") == t.encode(" "));       // overlong "/"
  CHECK(t.encode("\xED\xA0\x80 ok") == t.encode(" ok"));           // a surrogate
  CHECK(t.encode("\xF4\x90\x80\x80 ok") == t.encode(" ok"));       // above U+10FFFF
  CHECK(t.encode("\x80\x80\xBF word") == t.encode("word"));        // stray continuations
  CHECK(t.encode("\xF0\x9F\x98") == std::vector<std::int64_t>{});  // a truncated emoji
  // Every byte value in every position: no crash, no id outside the vocab.
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>((i * 7919 + i / 256) & 0xFF);
  for (std::int64_t id : t.encode(junk)) CHECK((id >= 0 && id < t.vocab_size()));
}

TEST_CASE("wordpiece: missing and incomplete vocabs are refused", "[data][wordpiece]") {
  TempDir dir("ember_wordpiece");
  CHECK_THROWS_WITH(data::WordPieceTokenizer(dir / "missing.txt"),
                    Contains("missing.txt") && Contains("cannot open"));
  write_bytes(dir / "empty.txt", "");
  CHECK_THROWS_WITH(data::WordPieceTokenizer(dir / "empty.txt"), Contains("empty"));
  write_bytes(dir / "no_unk.txt", "[PAD]\n[CLS]\n[SEP]\n[MASK]\nthe\n");
  CHECK_THROWS_WITH(data::WordPieceTokenizer(dir / "no_unk.txt"),
                    Contains("no_unk.txt") && Contains("[UNK]"));
  write_bytes(dir / "no_mask.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n");
  CHECK_THROWS_WITH(data::WordPieceTokenizer(dir / "no_mask.txt"), Contains("[MASK]"));
  write_bytes(dir / "bad.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n\xFF\n");
  CHECK_THROWS_WITH(data::WordPieceTokenizer(dir / "bad.txt"),
                    Contains("line 6") && Contains("UTF-8"));
  data::WordPieceOptions opts;
  opts.unk = "<unk>";
  CHECK_THROWS_WITH(data::WordPieceTokenizer(data_path("wordpiece_vocab.txt"), opts),
                    Contains("<unk>"));

  // A small vocab in memory; a token listed twice keeps its last id, as HF's load_vocab.
  const data::WordPieceTokenizer small(std::vector<std::string>{
      "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "un"});
  CHECK(small.encode("unaffable") == std::vector<std::int64_t>{8, 6, 7});
  CHECK(small.encode("unaffabl") == std::vector<std::int64_t>{1});
}

TEST_CASE("wordpiece: bert_tokenize's loop writes one line of ids per line", "[data][wordpiece]") {
  std::istringstream in("Hello, world!\n\nunaffable\nlast line without newline");
  std::ostringstream out;
  CHECK(data::encode_lines(uncased(), in, out) == 4);
  std::string want = "7592 1010 2088 999\n\n";
  for (std::int64_t id : uncased().encode("unaffable")) want += std::to_string(id) + " ";
  want.back() = '\n';
  for (std::int64_t id : uncased().encode("last line without newline")) {
    want += std::to_string(id) + " ";
  }
  want.back() = '\n';
  CHECK(out.str() == want);
}

}  // namespace test_data_wordpiece
}  // namespace
