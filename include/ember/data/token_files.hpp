// Token files in llm.c's format, and its batches of next-token windows: the data of a language
// model, tokenized once. llm.c (github.com/karpathy/llm.c) and ember read the same files.
//
// The format: a header of 256 little-endian int32 (magic 20240520, version 1, the number of
// tokens, then zeros), then the tokens as little-endian uint16 (a vocabulary of at most 65,536:
// GPT-2's is 50,257).
//
//   ember::data::write_token_file("train.bin", ids);          // atomically: a temporary, renamed
//   std::vector<std::uint16_t> tokens = ember::data::read_token_file("train.bin");
//   ember::data::TokenBatches batches(tokens, B, T);
//   auto [inputs, targets] = batches.next();                  // int64 [B, T], targets shifted by 1
#pragma once

#include <bit>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../tensor/factories.hpp"

namespace ember::data {

inline constexpr std::int32_t kTokenFileMagic = 20240520;
inline constexpr std::int32_t kTokenFileVersion = 1;
inline constexpr std::size_t kTokenFileHeaderInts = 256;

static_assert(std::endian::native == std::endian::little,
              "ember: token files are little-endian and read as they lie: a little-endian host");

/// Writes `tokens` (each in [0, 65536)) as a token file at `path`, atomically: into a temporary
/// file beside it, then renamed over it, so a reader never sees half a file.
inline void write_token_file(const std::filesystem::path& path,
                             std::span<const std::int32_t> tokens) {
  std::vector<std::uint16_t> body(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    EMBER_CHECK(tokens[i] >= 0 && tokens[i] < 65536, "ember: write_token_file: token ", tokens[i],
                " at ", i, " does not fit llm.c's uint16 tokens");
    body[i] = static_cast<std::uint16_t>(tokens[i]);
  }
  EMBER_CHECK(tokens.size() <= static_cast<std::size_t>(INT32_MAX),
              "ember: write_token_file: ", tokens.size(),
              " tokens exceed the header's int32 count");
  std::int32_t header[kTokenFileHeaderInts] = {kTokenFileMagic, kTokenFileVersion,
                                               static_cast<std::int32_t>(tokens.size())};
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    EMBER_CHECK(out, "ember: write_token_file: cannot write '", tmp.string(), "'");
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write(reinterpret_cast<const char*>(body.data()),
              static_cast<std::streamsize>(body.size() * sizeof(std::uint16_t)));
    out.flush();
    EMBER_CHECK(out, "ember: write_token_file: writing '", tmp.string(), "' failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  EMBER_CHECK(!ec, "ember: write_token_file: cannot rename '", tmp.string(), "' to '",
              path.string(), "': ", ec.message());
}

/// The tokens of a token file; a file that is not one (magic, version, a size that does not
/// match the header's count) is an ember::Error naming it.
inline std::vector<std::uint16_t> read_token_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in, "ember: read_token_file: cannot open '", path.string(), "'");
  std::int32_t header[kTokenFileHeaderInts] = {};
  in.read(reinterpret_cast<char*>(header), sizeof header);
  EMBER_CHECK(in.gcount() == static_cast<std::streamsize>(sizeof header),
              "ember: read_token_file: '", path.string(),
              "' is shorter than the 1,024-byte header of a token file");
  EMBER_CHECK(header[0] == kTokenFileMagic, "ember: read_token_file: '", path.string(),
              "' is not a token file (magic ", header[0], ", expected ", kTokenFileMagic, ")");
  EMBER_CHECK(header[1] == kTokenFileVersion, "ember: read_token_file: '", path.string(),
              "' has version ", header[1], " (ember reads version ", kTokenFileVersion, ")");
  EMBER_CHECK(header[2] >= 0, "ember: read_token_file: '", path.string(), "' counts ", header[2],
              " tokens");
  const auto count = static_cast<std::size_t>(header[2]);
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  EMBER_CHECK(!ec && size == sizeof header + count * sizeof(std::uint16_t),
              "ember: read_token_file: '", path.string(), "' holds ", size - sizeof header,
              " bytes of tokens where its header counts ", count, " (", count * 2, " bytes)");
  std::vector<std::uint16_t> tokens(count);
  in.read(reinterpret_cast<char*>(tokens.data()),
          static_cast<std::streamsize>(count * sizeof(std::uint16_t)));
  EMBER_CHECK(in, "ember: read_token_file: reading '", path.string(), "' failed");
  return tokens;
}

/// llm.c's batches: B rows of T consecutive tokens, the targets the same windows one token later,
/// the rows of a batch one after another in the file; the next batch starts where this one ended
/// (B * T on). Data-parallel: rank r of n reads the r-th batch of each group of n, so the ranks
/// see disjoint tokens. A group that would run past the end starts over at the beginning, on
/// every rank at once: the position (where the next group starts) is the same on every rank, so
/// one checkpoint's position resumes them all.
class TokenBatches {
 public:
  TokenBatches(std::vector<std::uint16_t> tokens, std::int64_t B, std::int64_t T, int rank = 0,
               int ranks = 1)
      : tokens_(std::move(tokens)), B_(B), T_(T), rank_(rank), ranks_(ranks) {
    EMBER_CHECK(B > 0 && T > 0, "ember: TokenBatches: B and T must be positive, got ", B, " and ",
                T);
    EMBER_CHECK(ranks > 0 && rank >= 0 && rank < ranks, "ember: TokenBatches: rank ", rank, " of ",
                ranks);
    EMBER_CHECK(static_cast<std::int64_t>(tokens_.size()) >= ranks * B * T + 1,
                "ember: TokenBatches: ", tokens_.size(), " tokens are too few for batches of ", B,
                " x ", T, " on ", ranks, " rank(s) (", ranks * B * T + 1, " needed)");
    reset();
  }

  /// Back to the first batch.
  void reset() { position_ = 0; }
  /// Where the next group of batches starts, the same on every rank (a checkpoint keeps it:
  /// seek() resumes exactly there).
  std::int64_t position() const { return position_; }
  void seek(std::int64_t position) {
    EMBER_CHECK(position >= 0 && position < static_cast<std::int64_t>(tokens_.size()),
                "ember: TokenBatches: position ", position, " outside the ", tokens_.size(),
                " tokens");
    position_ = position;
  }
  /// Batches in one pass over the tokens (each rank's).
  std::int64_t batches_per_pass() const {
    return (static_cast<std::int64_t>(tokens_.size()) - 1) / (ranks_ * B_ * T_);
  }

  /// The next batch: inputs and targets, int64 [B, T] on `device`.
  std::pair<Tensor<std::int64_t>, Tensor<std::int64_t>> next(Device device = Device::cpu()) {
    const std::int64_t n = B_ * T_;
    if (position_ + ranks_ * n + 1 > static_cast<std::int64_t>(tokens_.size())) reset();
    const std::int64_t start = position_ + rank_ * n;
    std::vector<std::int64_t> inputs(static_cast<std::size_t>(n)), targets(inputs.size());
    for (std::int64_t i = 0; i < n; ++i) {
      inputs[static_cast<std::size_t>(i)] = tokens_[static_cast<std::size_t>(start + i)];
      targets[static_cast<std::size_t>(i)] = tokens_[static_cast<std::size_t>(start + i + 1)];
    }
    position_ += ranks_ * n;
    return {from_vector<std::int64_t>(inputs, Shape{B_, T_}, device),
            from_vector<std::int64_t>(targets, Shape{B_, T_}, device)};
  }

 private:
  std::vector<std::uint16_t> tokens_;
  std::int64_t B_, T_;
  int rank_, ranks_;
  std::int64_t position_ = 0;
};

}  // namespace ember::data
