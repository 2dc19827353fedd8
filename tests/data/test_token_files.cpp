// llm.c's token files and batches (include/ember/data/token_files.hpp): the bytes of the format
// (header, little-endian uint16 tokens), a round trip, files that are not token files, and the
// batches' windows, wrap-around, positions and the ranks' disjoint shares.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <ember/data/token_files.hpp>
#include <ember/ember.hpp>

namespace {
namespace test_token_files {

namespace fs = std::filesystem;
using ember::data::read_token_file;
using ember::data::TokenBatches;
using ember::data::write_token_file;

fs::path temp(const char* name) { return fs::temp_directory_path() / name; }

std::vector<std::uint16_t> iota_tokens(std::size_t n) {
  std::vector<std::uint16_t> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<std::uint16_t>(i);
  return t;
}

TEST_CASE("token files: llm.c's bytes, a round trip, and what is not a token file",
          "[data][token_files]") {
  const fs::path path = temp("ember_test_tokens.bin");
  const std::vector<std::int32_t> ids = {50256, 0, 1, 65535, 15496, 995};
  write_token_file(path, ids);
  // The header: magic, version, count, zeros; then the tokens, two bytes each, low byte first.
  REQUIRE(fs::file_size(path) == 1024 + 2 * ids.size());
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  const auto int_at = [&](std::size_t k) {
    return static_cast<std::int32_t>(bytes[4 * k] | bytes[4 * k + 1] << 8 | bytes[4 * k + 2] << 16 |
                                     static_cast<std::uint32_t>(bytes[4 * k + 3]) << 24);
  };
  CHECK(int_at(0) == 20240520);
  CHECK(int_at(1) == 1);
  CHECK(int_at(2) == 6);
  CHECK(int_at(255) == 0);
  CHECK(bytes[1024] == (50256 & 0xFF));
  CHECK(bytes[1025] == (50256 >> 8));
  CHECK(read_token_file(path) == std::vector<std::uint16_t>{50256, 0, 1, 65535, 15496, 995});
  CHECK_FALSE(fs::exists(path.string() + ".tmp"));

  REQUIRE_THROWS_WITH(write_token_file(path, std::vector<std::int32_t>{65536}),
                      Catch::Contains("does not fit"));
  REQUIRE_THROWS_WITH(write_token_file(path, std::vector<std::int32_t>{-1}),
                      Catch::Contains("does not fit"));
  CHECK(read_token_file(path).size() == 6);  // a refused write left the file as it was

  { std::ofstream(path, std::ios::binary | std::ios::trunc) << "not a token file"; }
  REQUIRE_THROWS_WITH(read_token_file(path), Catch::Contains("shorter than the 1,024-byte header"));
  write_token_file(path, ids);
  fs::resize_file(path, fs::file_size(path) - 1);
  REQUIRE_THROWS_WITH(read_token_file(path), Catch::Contains("where its header counts 6"));
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    const std::int32_t wrong = 20240519;
    f.write(reinterpret_cast<const char*>(&wrong), 4);
  }
  REQUIRE_THROWS_WITH(read_token_file(path), Catch::Contains("is not a token file"));
  fs::remove(path);
  REQUIRE_THROWS_WITH(read_token_file(path), Catch::Contains("cannot open"));
  write_token_file(path, std::vector<std::int32_t>{});
  CHECK(read_token_file(path).empty());
  fs::remove(path);
}

TEST_CASE("token batches: next-token windows, as llm.c's DataLoader", "[data][token_files]") {
  TokenBatches batches(iota_tokens(50), 2, 4);
  CHECK(batches.batches_per_pass() == 6);  // (50 - 1) / 8
  auto [x, y] = batches.next();
  REQUIRE(x.shape() == ember::Shape{2, 4});
  CHECK(x.to_vector() == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(y.to_vector() == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(batches.position() == 8);
  for (int i = 0; i < 5; ++i) batches.next();
  CHECK(batches.position() == 48);
  // 48 + 8 + 1 > 50: the next batch starts over.
  std::tie(x, y) = batches.next();
  CHECK(x.to_vector().front() == 0);
  // A position kept in a checkpoint resumes exactly.
  batches.seek(16);
  std::tie(x, y) = batches.next();
  CHECK(x.to_vector().front() == 16);
  CHECK(y.to_vector().back() == 24);
  REQUIRE_THROWS_WITH(batches.seek(50), Catch::Contains("outside"));
}

TEST_CASE("token batches: ranks read disjoint batches; too few tokens is an error",
          "[data][token_files]") {
  TokenBatches r0(iota_tokens(100), 2, 3, 0, 2), r1(iota_tokens(100), 2, 3, 1, 2);
  std::vector<std::int64_t> seen;
  for (int step = 0; step < 3; ++step) {
    for (TokenBatches* b : {&r0, &r1}) {
      const auto x = b->next().first.to_vector();
      seen.insert(seen.end(), x.begin(), x.end());
    }
  }
  // Two ranks, three steps: the first 36 tokens, each once, in order of (step, rank).
  std::vector<std::int64_t> expect(36);
  for (std::size_t i = 0; i < expect.size(); ++i) expect[i] = static_cast<std::int64_t>(i);
  CHECK(seen == expect);
  // The position is the group's, the same on both ranks: rank 0's, kept in a checkpoint,
  // resumes rank 1 at its own batch.
  CHECK(r0.position() == 36);
  CHECK(r1.position() == 36);
  TokenBatches resumed(iota_tokens(100), 2, 3, 1, 2);
  resumed.seek(r0.position());
  CHECK(resumed.next().first.to_vector().front() == r1.next().first.to_vector().front());
  CHECK(r1.position() == 48);
  // Groups of 12 in 100 tokens: after 8 groups (96 tokens) the next one would need token 108,
  // so both ranks start over together.
  TokenBatches w0(iota_tokens(100), 2, 3, 0, 2), w1(iota_tokens(100), 2, 3, 1, 2);
  for (int step = 0; step < 8; ++step) {
    w0.next();
    w1.next();
  }
  CHECK(w0.next().first.to_vector().front() == 0);
  CHECK(w1.next().first.to_vector().front() == 6);
  REQUIRE_THROWS_WITH(TokenBatches(iota_tokens(12), 2, 3, 0, 2), Catch::Contains("too few"));
  REQUIRE_THROWS_WITH(TokenBatches(iota_tokens(12), 0, 3), Catch::Contains("positive"));
  REQUIRE_THROWS_WITH(TokenBatches(iota_tokens(12), 1, 3, 2, 2), Catch::Contains("rank 2 of 2"));
}

}  // namespace test_token_files
}  // namespace
