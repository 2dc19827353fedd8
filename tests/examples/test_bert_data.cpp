// examples/bert/pretraining_data.hpp: the sentence splitter, dictd's base64, the dict-gcide
// reader on Debian's real files (apt-get install dict-gcide; CI installs it), masked-LM + NSP
// instances on a few thousand gcide entries with the committed bert-base-uncased vocab (layout,
// masking, the original text recovered from the masked ids, the NSP and 80/10/10 proportions
// against binomial bounds, determinism), the binary cache (round trip, refused files, an
// interrupted save) and batches.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "bert/pretraining_data.hpp"
#include "support/files.hpp"

namespace {
namespace test_examples_bert_data {

namespace fs = std::filesystem;
using bert::Document;
using bert::Instance;
using bert::TokenizedDocument;
using ember::testing::TempDir;
using Strings = std::vector<std::string>;

const fs::path kGcide = "/usr/share/dictd/gcide.dict.dz";

const ember::data::WordPieceTokenizer& tokenizer() {
  static const ember::data::WordPieceTokenizer tok(fs::path(__FILE__).parent_path().parent_path() /
                                                   "data" / "wordpiece_vocab.txt");
  return tok;
}

void require_gcide() {
  if (!fs::exists(kGcide) || !fs::exists("/usr/share/dictd/gcide.index")) {
    FAIL("dict-gcide is not installed (" << kGcide.string()
                                         << " is missing): apt-get install dict-gcide (CI "
                                            "installs it)");
  }
}

const std::vector<Document>& all_gcide() {
  require_gcide();
  static const std::vector<Document> docs = bert::read_gcide(kGcide);
  return docs;
}

// The first 2,000 gcide entries, tokenized once.
const std::vector<TokenizedDocument>& gcide_tokens() {
  static const std::vector<TokenizedDocument> docs = [] {
    require_gcide();
    return bert::tokenize_documents(bert::read_gcide(kGcide, 2000), tokenizer());
  }();
  return docs;
}

bert::PretrainingOptions small_options() {
  return {.seq_len = 64, .max_predictions = 20, .dupe_factor = 2, .seed = 7};
}

const std::vector<Instance>& gcide_instances(bert::InstanceStats* stats = nullptr) {
  static bert::InstanceStats s;
  static const std::vector<Instance> inst =
      bert::create_instances(gcide_tokens(), tokenizer(), small_options(), &s);
  if (stats) *stats = s;
  return inst;
}

// input_ids with the masked positions restored to their original ids.
std::vector<std::int32_t> unmasked(const Instance& in) {
  std::vector<std::int32_t> ids = in.input_ids;
  for (std::size_t k = 0; k < in.masked_positions.size(); ++k) {
    ids[static_cast<std::size_t>(in.masked_positions[k])] = in.masked_ids[k];
  }
  return ids;
}

// The documents' tokens end to end, to find where a segment came from.
struct Corpus {
  std::vector<std::int32_t> tokens;
  std::vector<std::int32_t> doc_of;  // the document of each token
  std::unordered_map<std::int32_t, std::vector<std::size_t>> at;

  explicit Corpus(const std::vector<TokenizedDocument>& docs) {
    for (std::size_t d = 0; d < docs.size(); ++d) {
      for (const auto& s : docs[d]) {
        for (std::int32_t t : s) {
          at[t].push_back(tokens.size());
          tokens.push_back(t);
          doc_of.push_back(static_cast<std::int32_t>(d));
        }
      }
    }
  }
  // The starts of `seg` inside one document.
  std::vector<std::size_t> find(const std::vector<std::int32_t>& seg) const {
    std::vector<std::size_t> out;
    if (seg.empty()) return out;
    std::size_t anchor = 0;  // the rarest token of seg
    for (std::size_t j = 0; j < seg.size(); ++j) {
      if (!at.count(seg[j])) return out;  // a token the corpus does not have
      if (at.at(seg[j]).size() < at.at(seg[anchor]).size()) anchor = j;
    }
    for (std::size_t p : at.at(seg[anchor])) {
      if (p < anchor || p - anchor + seg.size() > tokens.size()) continue;
      const std::size_t s = p - anchor;
      if (doc_of[s] == doc_of[s + seg.size() - 1] &&
          std::equal(seg.begin(), seg.end(), tokens.begin() + static_cast<std::ptrdiff_t>(s))) {
        out.push_back(s);
      }
    }
    return out;
  }
};

// |observed - p| within 4.5 binomial standard deviations of n draws (two-sided, about 7e-6 per
// check for a correct implementation; the data are fixed by the seed, so a pass is repeatable).
void check_proportion(std::int64_t hits, std::int64_t n, double p, const char* what) {
  REQUIRE(n > 0);
  const double observed = static_cast<double>(hits) / static_cast<double>(n);
  const double sigma = std::sqrt(p * (1 - p) / static_cast<double>(n));
  INFO(what << ": " << hits << " of " << n << " = " << observed << ", expected " << p
            << " +- 4.5 * " << sigma);
  CHECK(std::abs(observed - p) <= 4.5 * sigma);
}

TEST_CASE("split_sentences: boundaries, abbreviations, initials and numbers", "[bert][data]") {
  using bert::split_sentences;
  CHECK(split_sentences("Hello world. This is a test.") ==
        Strings{"Hello world.", "This is a test."});
  CHECK(split_sentences("Dr. Smith arrived. He named e.g. Paris and London. It cost 3.5 dollars. "
                        "Really? Yes!") == Strings{"Dr. Smith arrived.",
                                                   "He named e.g. Paris and London.",
                                                   "It cost 3.5 dollars.", "Really?", "Yes!"});
  CHECK(split_sentences("J. R. R. Tolkien wrote it. Mr. Baggins agreed.") ==
        Strings{"J. R. R. Tolkien wrote it.", "Mr. Baggins agreed."});
  CHECK(split_sentences("Small, i.e. Tiny ones. Apples, pears, etc. Then more.") ==
        Strings{"Small, i.e. Tiny ones.", "Apples, pears, etc. Then more."});
  CHECK(split_sentences("It is done. and more follows.") ==
        Strings{"It is done. and more follows."});  // no upper case: no boundary
  CHECK(split_sentences("He said \"Stop.\" \"Why?\" she asked.") ==
        Strings{"He said \"Stop.\"", "\"Why?\" she asked."});
  CHECK(split_sentences("It was 1990. 1991 came next.") ==
        Strings{"It was 1990.", "1991 came next."});
  CHECK(
      split_sentences("Pi is 3.14159 or so. The U.S. Army marched. Wait... Then go (now). Ok") ==
      Strings{"Pi is 3.14159 or so.", "The U.S. Army marched.", "Wait...", "Then go (now).", "Ok"});
  CHECK(split_sentences("  One.\n\n  Two\tparts.  ") == Strings{"One.", "Two parts."});
  CHECK(split_sentences("Caf\xC3\xA9 closed. \xC3\x89t\xC3\xA9 came.") ==
        Strings{"Caf\xC3\xA9 closed.", "\xC3\x89t\xC3\xA9 came."});
  CHECK(split_sentences("").empty());
  CHECK(split_sentences(" \n\t ").empty());
}

TEST_CASE("dictd base64 numbers", "[bert][data]") {
  using bert::decode_dictd_base64;
  CHECK(decode_dictd_base64("A") == 0);
  CHECK(decode_dictd_base64("/") == 63);
  CHECK(decode_dictd_base64("+") == 62);
  CHECK(decode_dictd_base64("BA") == 64);
  CHECK(decode_dictd_base64("5I") == 57 * 64 + 8);  // gcide.index: "0\t5I\tFz"
  CHECK(decode_dictd_base64("Fz") == 371);
  CHECK(decode_dictd_base64("Bchrk") == ((((1ull * 64 + 28) * 64 + 33) * 64 + 43) * 64 + 36));
  CHECK(decode_dictd_base64("//////////") == (1ull << 60) - 1);
  CHECK_THROWS_AS(decode_dictd_base64(""), ember::Error);
  CHECK_THROWS_WITH(decode_dictd_base64("A=B"), Catch::Contains("'='"));
  CHECK_THROWS_AS(decode_dictd_base64("AAAAAAAAAAA"), ember::Error);  // 11 digits
}

TEST_CASE("gcide entries become plain sentences", "[bert][data]") {
  const std::string apple =
      "Apple \\Ap\"ple\\ ([a^]p\"p'l), n. [OE. appel, eppel, AS. [ae]ppel,\n"
      "   [ae]pl; akin to Fries. & D. appel; of\n"
      "   unknown origin.]\n"
      "   1. The fleshy pome or fruit of a rosaceous tree ({Pyrus\n"
      "      malus}) cultivated in numberless varieties in the\n"
      "      temperate zones.\n"
      "      [1913 Webster]\n"
      "\n"
      "   2. (bot.) Any tree genus {Pyrus} which has the stalk sunken\n"
      "      into the base of the fruit; an apple tree. [Obs.]\n"
      "      [1913 Webster]\n"
      "\n"
      "         Improperatios and terms of scurrility.   --Sir T.\n"
      "                                                  Browne\n"
      "   [1913 Webster]\n"
      "\n"
      "   Syn: pome, fruit\n"
      "        [WordNet 1.5]\n"
      "\n"
      "   -- {Un*wor\"thi*ly}, adv.\n";
  const Document doc = bert::gcide_entry_sentences(apple);
  CHECK(doc == Document{"The fleshy pome or fruit of a rosaceous tree (Pyrus malus) cultivated in "
                        "numberless varieties in the temperate zones.",
                        "Any tree genus Pyrus which has the stalk sunken into the base of the "
                        "fruit; an apple tree.",
                        "Improperatios and terms of scurrility.", "-- Unworthily, adv."});
  // gcide's letters with diacritics become UTF-8, which the uncased tokenizer folds to ASCII.
  const Document ruins = bert::gcide_entry_sentences(
      "Ruin \\Ru\"in\\, n.\n   Ruins; d['e]bris, as M[\"u]ller said. [Obs.]\n   [1913\n   "
      "Webster]\n");
  CHECK(ruins == Document{"Ruins; de\xCC\x81"
                          "bris, as Mu\xCC\x88"
                          "ller said."});
  CHECK(tokenizer().basic_tokenize(ruins[0]) ==
        Strings{"ruins", ";", "debris", ",", "as", "muller", "said", "."});
  // A header whose part of speech wraps to the next line.
  CHECK(bert::gcide_entry_sentences("Quixotically \\Quix*ot\"ic*al*ly\\ (kw[i^]ks),\n"
                                    "   adv.\n   In a quixotic way.\n   [1913 Webster]\n") ==
        Document{"In a quixotic way."});
}

TEST_CASE("read_gcide reads Debian's dict-gcide", "[bert][data]") {
  const std::vector<Document>& docs = all_gcide();
  std::size_t sentences = 0;
  bool apple = false, metadata = false, markup = false;
  for (const Document& d : docs) {
    REQUIRE_FALSE(d.empty());
    sentences += d.size();
    for (const std::string& s : d) {
      apple |= s.find("The fleshy pome or fruit of a rosaceous tree (Pyrus malus)") == 0;
      metadata |= s.find("converted from the original database") != std::string::npos;
      markup |= s.find("[1913 Webster]") != std::string::npos || s.find('\\') != std::string::npos;
    }
  }
  INFO(docs.size() << " documents, " << sentences << " sentences");
  CHECK(docs.size() > 120000);  // 126,236 entries in dict-gcide 0.48
  CHECK(sentences > 250000);
  CHECK(apple);
  CHECK_FALSE(metadata);  // the 00-database-* entries are skipped
  CHECK_FALSE(markup);

  // max_documents reads a prefix, the same documents.
  const std::vector<Document> first = bert::read_gcide(kGcide, 300);
  REQUIRE(first.size() == 300);
  CHECK(std::equal(first.begin(), first.end(), docs.begin()));

  CHECK_THROWS_WITH(bert::read_gcide("/nonexistent/gcide.dict.dz"),
                    Catch::Contains("apt-get install dict-gcide"));
}

TEST_CASE("merge_short_documents joins neighbours up to a sentence count", "[bert][data]") {
  const std::vector<Document> docs{{"a"}, {"b", "c"}, {"d", "e", "f"}, {"g"}, {"h"}};
  CHECK(bert::merge_short_documents(docs, 3) ==
        std::vector<Document>{{"a", "b", "c"}, {"d", "e", "f"}, {"g", "h"}});
  CHECK(bert::merge_short_documents(docs, 1) == docs);
  CHECK(bert::merge_short_documents({}, 4).empty());
}

TEST_CASE("read_text_documents reads Google's one-sentence-per-line format", "[bert][data]") {
  TempDir dir("ember_bert_text");
  ember::testing::write_bytes(dir / "a.txt",
                              "First sentence.\n  Second one.  \n\nOther document.\n \t\n\n");
  {
    gzFile gz = gzopen((dir / "b.txt.gz").c_str(), "wb");
    REQUIRE(gz != nullptr);
    const std::string text = "Zipped one.\nZipped two.";  // no final newline
    REQUIRE(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())) ==
            static_cast<int>(text.size()));
    REQUIRE(gzclose(gz) == Z_OK);
  }
  const std::vector<Document> docs = bert::read_text_documents({dir / "a.txt", dir / "b.txt.gz"});
  CHECK(docs == std::vector<Document>{{"First sentence.", "Second one."},
                                      {"Other document."},
                                      {"Zipped one.", "Zipped two."}});
  CHECK_THROWS_WITH(bert::read_text_documents({dir / "missing.txt"}),
                    Catch::Contains("missing.txt"));
}

TEST_CASE("instances: layout, masking, and the original text behind them", "[bert][data]") {
  const auto& tok = tokenizer();
  bert::InstanceStats stats;
  const std::vector<Instance>& inst = gcide_instances(&stats);
  const bert::PretrainingOptions o = small_options();
  REQUIRE(inst.size() > 2000);
  CHECK(stats.instances == static_cast<std::int64_t>(inst.size()));
  CHECK(stats.documents == static_cast<std::int64_t>(gcide_tokens().size()));
  const Corpus corpus(gcide_tokens());
  const std::int32_t cls = static_cast<std::int32_t>(tok.cls_id());
  const std::int32_t sep = static_cast<std::int32_t>(tok.sep_id());
  const std::int32_t msk = static_cast<std::int32_t>(tok.mask_id());
  std::int64_t masked = 0, as_mask = 0, kept = 0, replaced = 0, tokens = 0, short_ones = 0;
  std::int64_t not_found = 0, not_following = 0;
  for (const Instance& in : inst) {
    const auto L = static_cast<std::int64_t>(in.input_ids.size());
    REQUIRE(L <= o.seq_len);
    REQUIRE(in.token_type_ids.size() == in.input_ids.size());
    // [CLS] A [SEP] B [SEP], types 0 through the first [SEP], 1 after.
    REQUIRE(in.input_ids.front() == cls);
    REQUIRE(in.input_ids.back() == sep);
    const auto sep1 = static_cast<std::size_t>(
        std::find(in.input_ids.begin() + 1, in.input_ids.end(), sep) - in.input_ids.begin());
    REQUIRE(sep1 >= 2);                       // A is not empty
    REQUIRE(sep1 + 2 < in.input_ids.size());  // B is not empty
    REQUIRE(std::count(in.input_ids.begin(), in.input_ids.end(), sep) == 2);
    REQUIRE(std::count(in.input_ids.begin(), in.input_ids.end(), cls) == 1);
    for (std::size_t i = 0; i < in.input_ids.size(); ++i) {
      REQUIRE(in.token_type_ids[i] == (i <= sep1 ? 0 : 1));
    }
    // Masked positions: ascending, unique, not [CLS]/[SEP], as many as the rule says.
    const std::size_t K = in.masked_positions.size();
    REQUIRE(in.masked_ids.size() == K);
    const auto want = static_cast<std::size_t>(
        std::min<double>(static_cast<double>(o.max_predictions),
                         std::max(1.0, std::nearbyint(static_cast<double>(L) * 0.15))));
    REQUIRE(K == want);
    for (std::size_t k = 0; k < K; ++k) {
      const std::int32_t p = in.masked_positions[k];
      REQUIRE(p > 0);
      REQUIRE(p < L - 1);
      REQUIRE(p != static_cast<std::int32_t>(sep1));
      if (k > 0) REQUIRE(p > in.masked_positions[k - 1]);
      const std::int32_t now = in.input_ids[static_cast<std::size_t>(p)];
      const std::int32_t was = in.masked_ids[k];
      REQUIRE(was != cls);
      REQUIRE(was != sep);
      if (now == msk) {
        ++as_mask;
      } else if (now == was) {
        ++kept;
      } else {
        ++replaced;
        REQUIRE(now >= 0);
        REQUIRE(now < tok.vocab_size());
        REQUIRE(now != tok.pad_id());
        REQUIRE(now != tok.unk_id());
      }
    }
    masked += static_cast<std::int64_t>(K);
    tokens += L;
    short_ones += L < o.seq_len - 10 ? 1 : 0;
    // With the masked ids put back, A and B are runs of the corpus' tokens; when B is the real
    // next segment it comes after A in the same document.
    const std::vector<std::int32_t> ids = unmasked(in);
    const std::vector<std::int32_t> a(ids.begin() + 1, ids.begin() + static_cast<long>(sep1));
    const std::vector<std::int32_t> b(ids.begin() + static_cast<long>(sep1) + 1, ids.end() - 1);
    const auto at_a = corpus.find(a), at_b = corpus.find(b);
    if (at_a.empty() || at_b.empty()) {
      ++not_found;
      continue;
    }
    if (!in.random_next) {
      bool follows = false;
      for (std::size_t sa : at_a) {
        for (std::size_t sb : at_b) {
          follows |= corpus.doc_of[sa] == corpus.doc_of[sb] && sb >= sa + a.size();
        }
      }
      not_following += follows ? 0 : 1;
    }
  }
  CHECK(not_found == 0);  // every masked id is the token it replaced
  CHECK(not_following == 0);
  CHECK(stats.masked == masked);
  // About 15% of the tokens are predicted (rounding per instance moves it a little).
  CHECK(static_cast<double>(masked) / static_cast<double>(tokens) == Approx(0.15).margin(0.01));
  // 80% [MASK], 10% kept, 10% random, each a binomial draw over all masked positions.
  check_proportion(as_mask, masked, 0.8, "[MASK]");
  check_proportion(kept, masked, 0.1, "kept");
  check_proportion(replaced, masked, 0.1, "random token");
  // Most instances fill seq_len; short_seq_prob makes some shorter, and so do short documents.
  CHECK(short_ones > 0);
  CHECK(short_ones < static_cast<std::int64_t>(inst.size()));
}

TEST_CASE("instances: next-sentence labels are a fair coin where one is tossed", "[bert][data]") {
  bert::InstanceStats stats;
  const std::vector<Instance>& inst = gcide_instances(&stats);
  const auto random =
      std::count_if(inst.begin(), inst.end(), [](const Instance& i) { return i.random_next; });
  CHECK(stats.random_next == random);
  // A chunk of one sentence always takes a random B (Google's rule); the others toss the coin.
  REQUIRE(stats.forced_random_next < stats.instances);
  check_proportion(stats.random_next - stats.forced_random_next,
                   stats.instances - stats.forced_random_next, 0.5, "random next (tossed)");
  // With random_next_prob = 0 only the forced ones are random.
  bert::PretrainingOptions o = small_options();
  o.random_next_prob = 0.0;
  o.dupe_factor = 1;
  bert::InstanceStats s0;
  const auto none = bert::create_instances(gcide_tokens(), tokenizer(), o, &s0);
  CHECK(s0.random_next == s0.forced_random_next);
  // A random B uses none of the chunk's sentences after A: they go back to the document, so
  // always taking a random B makes more instances from the same text.
  o.random_next_prob = 1.0;
  bert::InstanceStats s1;
  bert::create_instances(gcide_tokens(), tokenizer(), o, &s1);
  CHECK(s1.random_next == s1.instances);
  CHECK(static_cast<double>(s1.instances) > 1.2 * static_cast<double>(s0.instances));
}

TEST_CASE("instances: deterministic for a seed, whatever the threads", "[bert][data]") {
  const std::vector<TokenizedDocument> docs(gcide_tokens().begin(), gcide_tokens().begin() + 500);
  bert::PretrainingOptions o = small_options();
  const auto a = bert::create_instances(docs, tokenizer(), o);
  const auto b = bert::create_instances(docs, tokenizer(), o);
  CHECK(a == b);
#ifdef _OPENMP
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = bert::create_instances(docs, tokenizer(), o);
  omp_set_num_threads(threads);
  CHECK(one == a);
#endif
  o.seed = 8;
  CHECK(bert::create_instances(docs, tokenizer(), o) != a);
  // The text overload tokenizes the same way.
  const std::vector<Document> text(all_gcide().begin(), all_gcide().begin() + 50);
  CHECK(bert::create_instances(text, tokenizer(), o) ==
        bert::create_instances(bert::tokenize_documents(text, tokenizer()), tokenizer(), o));

  bert::PretrainingOptions bad = small_options();
  bad.seq_len = 4;
  CHECK_THROWS_WITH(bert::create_instances(docs, tokenizer(), bad), Catch::Contains("seq_len"));
  CHECK_THROWS_WITH(bert::create_instances(std::vector<TokenizedDocument>{{{5, 6}, {}}},
                                           tokenizer(), small_options()),
                    Catch::Contains("empty sentence"));
  CHECK_THROWS_WITH(bert::create_instances(std::vector<TokenizedDocument>{{{5, 1 << 30}}},
                                           tokenizer(), small_options()),
                    Catch::Contains("outside the vocab"));
  bad = small_options();
  bad.masked_lm_prob = 1.5;
  CHECK_THROWS_WITH(bert::create_instances(docs, tokenizer(), bad),
                    Catch::Contains("masked_lm_prob"));
}

TEST_CASE("split_documents holds out a stable evaluation set", "[bert][data]") {
  std::vector<Document> docs;
  for (int i = 0; i < 2000; ++i) docs.push_back({"Document " + std::to_string(i) + "."});
  const bert::DocumentSplit s = bert::split_documents(docs, 0.1, 3);
  CHECK(s.train.size() + s.eval.size() == docs.size());
  check_proportion(static_cast<std::int64_t>(s.eval.size()), 2000, 0.1, "eval documents");
  const bert::DocumentSplit again = bert::split_documents(docs, 0.1, 3);
  CHECK(again.eval == s.eval);
  // A document's side does not depend on the others: drop the last half, the first half's
  // eval documents stay.
  const bert::DocumentSplit half =
      bert::split_documents(std::vector<Document>(docs.begin(), docs.begin() + 1000), 0.1, 3);
  const auto in_first_half = std::count_if(s.eval.begin(), s.eval.end(), [](const Document& d) {
    return std::stoi(d[0].substr(9)) < 1000;
  });
  CHECK(static_cast<std::int64_t>(half.eval.size()) == in_first_half);
  CHECK(bert::split_documents(docs, 0.1, 4).eval != s.eval);
}

TEST_CASE("instance cache: round trip, refused files, interrupted saves", "[bert][data]") {
  const bert::PretrainingOptions o = small_options();
  const std::vector<Instance> inst(gcide_instances().begin(), gcide_instances().begin() + 1000);
  TempDir dir("ember_bert_cache");
  const fs::path file = dir / "train.bpt";
  bert::save_instances(file, inst, o, 42);
  bert::CacheHeader h;
  CHECK(bert::load_instances(file, &h) == inst);
  CHECK(h.seq_len == o.seq_len);
  CHECK(h.max_predictions == o.max_predictions);
  CHECK(h.count == 1000);
  CHECK(h.key == 42);
  const std::string bytes = ember::testing::read_bytes(file);
  CHECK(bytes.size() == 64 + 1000 * 4 * (3 + 2 * 64 + 2 * 20));
  CHECK(dir.files() == Strings{"train.bpt"});

  const fs::path bad = dir / "bad.bpt";
  auto refused = [&](const std::string& content, const std::string& why) {
    ember::testing::write_bytes(bad, content);
    CHECK_THROWS_WITH(bert::load_instances(bad),
                      Catch::Contains("bad.bpt") && Catch::Contains(why));
  };
  refused(bytes.substr(0, bytes.size() - 5), "truncated");
  refused(bytes.substr(0, 40), "truncated");
  refused(bytes + "x", "trailing");
  std::string wrong = bytes;
  wrong[0] = 'X';
  refused(wrong, "not a BERT pretraining cache");
  wrong = bytes;
  wrong[8] = 2;  // version
  refused(wrong, "format version 2");
  wrong = bytes;
  wrong[64 + 4 * 5] ^= 1;  // an input id
  refused(wrong, "CRC-32");
  // A record that breaks the format, with a matching CRC: length beyond seq_len.
  wrong = bytes;
  const std::int32_t too_long = 65;
  std::memcpy(wrong.data() + 64, &too_long, 4);
  const auto crc = static_cast<std::uint32_t>(crc32(
      0L, reinterpret_cast<const Bytef*>(wrong.data() + 64), static_cast<uInt>(wrong.size() - 64)));
  std::memcpy(wrong.data() + 48, &crc, 4);
  refused(wrong, "instance 0: length 65");
  CHECK_THROWS_WITH(bert::load_instances(dir / "none.bpt"), Catch::Contains("none.bpt"));
  fs::remove(bad);

  // An interrupted save (a bad instance after megabytes were written) leaves the old file and
  // no temporary file.
  std::vector<Instance> many;
  while (many.size() < 8000) many.insert(many.end(), inst.begin(), inst.end());
  many.push_back(inst[0]);
  many.back().input_ids.resize(70, 5);
  many.back().token_type_ids.resize(70, 1);
  CHECK_THROWS_WITH(bert::save_instances(file, many, o),
                    Catch::Contains("instance 8000") && Catch::Contains("seq_len = 64"));
  CHECK(dir.files() == Strings{"train.bpt"});
  CHECK(bert::load_instances(file) == inst);
}

TEST_CASE("cached_instances builds once, then loads", "[bert][data]") {
  TempDir dir("ember_bert_cached");
  const fs::path cache = dir / "cache";
  const std::vector<Document> docs(all_gcide().begin(), all_gcide().begin() + 200);
  int built = 0;
  auto read = [&] {
    ++built;
    return docs;
  };
  bert::PretrainingOptions o = small_options();
  const std::string corpus = bert::corpus_identity({kGcide}, "gcide first 200");
  bert::CacheInfo info;
  const auto first = bert::cached_instances(cache, corpus, tokenizer(), o, read, &info);
  CHECK(built == 1);
  CHECK_FALSE(info.loaded);
  CHECK(fs::exists(info.file));
  CHECK(first == bert::create_instances(docs, tokenizer(), o));
  const auto second = bert::cached_instances(cache, corpus, tokenizer(), o, read, &info);
  CHECK(built == 1);
  CHECK(info.loaded);
  CHECK(second == first);
  // Other options or another corpus: another key, another file.
  o.seed = 99;
  bert::CacheInfo other;
  bert::cached_instances(cache, corpus, tokenizer(), o, read, &other);
  CHECK(built == 2);
  CHECK(other.file != info.file);
  CHECK(bert::cache_key(corpus + "x", tokenizer(), o) != bert::cache_key(corpus, tokenizer(), o));
  // A damaged cache is rebuilt, saying why.
  ember::testing::write_bytes(info.file, "garbage");
  o.seed = small_options().seed;
  const auto third = bert::cached_instances(cache, corpus, tokenizer(), o, read, &info);
  CHECK(built == 3);
  CHECK_FALSE(info.loaded);
  CHECK_THAT(info.rebuilt_because, Catch::Contains("not a BERT pretraining cache"));
  CHECK(third == first);
}

TEST_CASE("make_batch: shapes, padding and labels", "[bert][data]") {
  const std::vector<Instance>& inst = gcide_instances();
  const std::vector<std::int64_t> idx{3, 0, 17};
  const bert::PretrainingBatch b =
      bert::make_batch(inst, idx, {.seq_len = 64, .max_predictions = 20});
  CHECK(b.input_ids.shape() == ember::Shape{3, 64});
  CHECK(b.token_type_ids.shape() == ember::Shape{3, 64});
  CHECK(b.attention_mask.shape() == ember::Shape{3, 64});
  CHECK(b.masked_positions.shape() == ember::Shape{3, 20});
  CHECK(b.masked_ids.shape() == ember::Shape{3, 20});
  CHECK(b.next_sentence_labels.shape() == ember::Shape{3});
  for (std::size_t r = 0; r < idx.size(); ++r) {
    const Instance& in = inst[static_cast<std::size_t>(idx[r])];
    const auto row = static_cast<std::int64_t>(r);
    for (std::int64_t j = 0; j < 64; ++j) {
      const bool real = j < static_cast<std::int64_t>(in.input_ids.size());
      const auto u = static_cast<std::size_t>(j);
      REQUIRE(b.input_ids.data()[row * 64 + j] == (real ? in.input_ids[u] : 0));
      REQUIRE(b.token_type_ids.data()[row * 64 + j] == (real ? in.token_type_ids[u] : 0));
      REQUIRE(b.attention_mask.data()[row * 64 + j] == (real ? 1 : 0));
    }
    for (std::int64_t k = 0; k < 20; ++k) {
      const bool real = k < static_cast<std::int64_t>(in.masked_positions.size());
      const auto u = static_cast<std::size_t>(k);
      REQUIRE(b.masked_positions.data()[row * 20 + k] == (real ? in.masked_positions[u] : 0));
      REQUIRE(b.masked_ids.data()[row * 20 + k] == (real ? in.masked_ids[u] : -100));
    }
    CHECK(b.next_sentence_labels.data()[r] == (in.random_next ? 1 : 0));
  }
  // Default shapes: the longest instance and the most masked positions of the batch.
  const bert::PretrainingBatch d = bert::make_batch(inst, idx);
  std::int64_t S = 0, P = 0;
  for (std::int64_t i : idx) {
    S = std::max<std::int64_t>(
        S, static_cast<std::int64_t>(inst[static_cast<std::size_t>(i)].input_ids.size()));
    P = std::max<std::int64_t>(
        P, static_cast<std::int64_t>(inst[static_cast<std::size_t>(i)].masked_positions.size()));
  }
  CHECK(d.input_ids.shape() == ember::Shape{3, S});
  CHECK(d.masked_ids.shape() == ember::Shape{3, P});
  const std::vector<std::int64_t> out_of_range{static_cast<std::int64_t>(inst.size())};
  CHECK_THROWS_WITH(bert::make_batch(inst, out_of_range), Catch::Contains("outside"));
  CHECK_THROWS_WITH(bert::make_batch(inst, idx, {.seq_len = 8}), Catch::Contains("seq_len 8"));
}

}  // namespace test_examples_bert_data
}  // namespace
