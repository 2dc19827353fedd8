// GPT-2's byte-level BPE (include/ember/data/gpt2_bpe.hpp) against tiktoken with GPT-2's own ranks
// (tests/data/gpt2_bpe_cases.json, written by make_gpt2_bpe_fixtures.py): hard strings (white
// space runs, contractions, digits, non-ASCII, emoji, combining marks) and 40,000 characters of
// English prose from dict-gcide give the same ids, and decoding gives the text back. The
// vocabulary is openai-whisper's copy of GPT-2's (scripts/test.sh installs it).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <ember/data/gpt2_bpe.hpp>
#include <nlohmann/json.hpp>

namespace {
namespace test_gpt2_bpe {

namespace fs = std::filesystem;
using ember::data::Gpt2Bpe;

nlohmann::json cases() {
  std::ifstream in(fs::path(__FILE__).parent_path() / "gpt2_bpe_cases.json");
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

/// GPT-2's vocabulary, which the suite requires (scripts/test.sh installs openai-whisper): fails
/// without it, unless EMBER_SKIP_GPT2_VOCAB=1 (then none, with a warning).
std::optional<Gpt2Bpe> tokenizer() {
  if (const std::optional<fs::path> vocab = Gpt2Bpe::find_vocabulary()) {
    return Gpt2Bpe::from_tiktoken(*vocab);
  }
  const char* skip = std::getenv("EMBER_SKIP_GPT2_VOCAB");
  if (skip && std::string(skip) == "1") {
    WARN("EMBER_SKIP_GPT2_VOCAB=1: the checks against GPT-2's vocabulary are left out");
    return std::nullopt;
  }
  FAIL(
      "GPT-2's vocabulary not found: pip install --no-deps openai-whisper (scripts/test.sh does), "
      "or set EMBER_GPT2_VOCAB to a gpt2.tiktoken file (EMBER_SKIP_GPT2_VOCAB=1 skips)");
  return std::nullopt;
}

TEST_CASE("gpt2_bpe: GPT-2's pattern cuts text as the reference does", "[data][gpt2_bpe]") {
  using V = std::vector<std::string>;
  const auto split = [](std::string_view text) {
    V out;
    for (const std::string_view p : Gpt2Bpe::pre_split(text)) out.emplace_back(p);
    return out;
  };
  CHECK(split("Hello world") == V{"Hello", " world"});
  CHECK(split("Hello   world") == V{"Hello", "  ", " world"});
  CHECK(split("I'm here's") == V{"I", "'m", " here", "'s"});
  CHECK(split("a\n\nb ") == V{"a", "\n", "\n", "b", " "});  // the last \n is left to "b", which
  // takes only a space: it stands alone
  CHECK(split("x\tyz") == V{"x", "\t", "yz"});
  CHECK(split("route 66!!") == V{"route", " 66", "!!"});
  CHECK(split("") == V{});
  // A byte that is not UTF-8 is a character of the "other" class, and the bytes come back.
  CHECK(split("a\xff\xfe b") == V{"a", "\xff\xfe", " b"});
}

TEST_CASE("gpt2_bpe: ids equal tiktoken's on hard strings and English prose", "[data][gpt2_bpe]") {
  const std::optional<Gpt2Bpe> bpe = tokenizer();
  if (!bpe) return;
  const nlohmann::json fx = cases();
  CHECK(bpe->vocab_size() == fx.at("n_vocab").get<std::int64_t>());
  CHECK(bpe->vocab_size() == 50257);
  for (const auto& c : fx.at("cases")) {
    const std::string text = c.at("text");
    INFO("text: '" << text << "'");
    const std::vector<std::int32_t> want = c.at("ids");
    CHECK(bpe->encode(text) == want);
    CHECK(bpe->decode(want) == text);
  }
  const std::string prose = fx.at("prose").at("text");
  const std::vector<std::int32_t> want = fx.at("prose").at("ids");
  const std::vector<std::int32_t> got = bpe->encode(prose);
  CHECK(got.size() == want.size());
  CHECK(got == want);
  CHECK(bpe->decode(got) == prose);
}

TEST_CASE("gpt2_bpe: any bytes round-trip; end of text; bad ids and files are errors",
          "[data][gpt2_bpe]") {
  const std::optional<Gpt2Bpe> bpe = tokenizer();
  if (!bpe) return;
  std::string bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  CHECK(bpe->decode(bpe->encode(bytes)) == bytes);
  CHECK(bpe->encode("Hello world") == std::vector<std::int32_t>{15496, 995});
  CHECK(bpe->decode({Gpt2Bpe::kEndOfText}) == "<|endoftext|>");
  // The string "<|endoftext|>" in text is text, not the token.
  const std::vector<std::int32_t> ids = bpe->encode("<|endoftext|>");
  CHECK(ids.size() > 1);
  REQUIRE_THROWS_WITH(bpe->decode({50257}), Catch::Contains("outside the vocabulary"));
  REQUIRE_THROWS_WITH(bpe->decode({-1}), Catch::Contains("outside the vocabulary"));
  const fs::path bad = fs::temp_directory_path() / "ember_test_gpt2_bpe_bad.tiktoken";
  { std::ofstream(bad) << "IQ== 0\nIQ== 1\n"; }
  REQUIRE_THROWS_WITH(Gpt2Bpe::from_tiktoken(bad), Catch::Contains("listed twice"));
  { std::ofstream(bad) << "IQ== 0\n"; }
  REQUIRE_THROWS_WITH(Gpt2Bpe::from_tiktoken(bad), Catch::Contains("has no token"));
  fs::remove(bad);
  REQUIRE_THROWS_WITH(Gpt2Bpe::from_tiktoken("/nonexistent/gpt2.tiktoken"),
                      Catch::Contains("cannot open"));
}

}  // namespace test_gpt2_bpe
}  // namespace
