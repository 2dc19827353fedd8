// Mini-batches: every epoch's order is a permutation fixed by (seed, epoch), batches tile it
// (with and without drop_last), the cursor's two-integer state resumes exactly, and gather_rows
// builds batches from rows of any layout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <ember/data/batches.hpp>
#include <ember/ember.hpp>
#include <map>
#include <numeric>
#include <vector>

using namespace ember;
using Catch::Matchers::Contains;

namespace {
namespace test_data_batches {

std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), std::int64_t{0});
  return v;
}

bool is_permutation_of_iota(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  return v == iota(static_cast<std::int64_t>(v.size()));
}

TEST_CASE("mulhi64 is the high half of the 128-bit product", "[data]") {
  const std::vector<std::uint64_t> values{0,
                                          1,
                                          2,
                                          0xFFFFFFFFu,
                                          0x100000000u,
                                          0x123456789ABCDEF0u,
                                          0xFFFFFFFFFFFFFFFFu,
                                          0x8000000000000001u};
  for (std::uint64_t a : values) {
    for (std::uint64_t b : values) {
      __extension__ using u128 = unsigned __int128;
      const auto want = static_cast<std::uint64_t>((static_cast<u128>(a) * b) >> 64);
      CHECK(data::detail::mulhi64(a, b) == want);
    }
  }
}

TEST_CASE("each epoch's order is a permutation, fixed by the seed and the epoch", "[data]") {
  for (std::int64_t n : {0, 1, 2, 3, 7, 100, 1000, 60000}) {
    const data::Batches b(n, 32, {.seed = 42});
    for (std::int64_t e : {0, 1, 5}) CHECK(is_permutation_of_iota(b.permutation(e)));
  }
  const data::Batches a(1000, 10, {.seed = 42}), same(1000, 10, {.seed = 42}),
      other(1000, 10, {.seed = 43});
  CHECK(a.permutation(0) == same.permutation(0));
  CHECK(a.permutation(7) == same.permutation(7));
  CHECK(a.permutation(0) != a.permutation(1));
  CHECK(a.permutation(0) != other.permutation(0));
  CHECK(a.permutation(0) != iota(1000));
  CHECK(a.permutation(3) == data::shuffled_order(1000, 42, 3));
  // Without shuffling, every epoch is in order.
  const data::Batches plain(10, 3, {.shuffle = false, .seed = 42});
  CHECK(plain.permutation(0) == iota(10));
  CHECK(plain.permutation(9) == iota(10));
}

TEST_CASE("shuffled_order matches an independent implementation", "[data]") {
  // From a Python implementation of Philox4x32-10 (checked against Random123's known answer
  // for key 0, counter 0) and the Fisher-Yates loop documented in data/batches.hpp.
  CHECK(data::shuffled_order(10, 42, 0) == std::vector<std::int64_t>{8, 2, 3, 7, 4, 6, 0, 9, 1, 5});
  CHECK(data::shuffled_order(10, 42, 3) == std::vector<std::int64_t>{9, 1, 2, 3, 0, 8, 5, 6, 4, 7});
  CHECK(data::shuffled_order(20, 7, 0) == std::vector<std::int64_t>{19, 0,  14, 11, 3, 2,  8,
                                                                    5,  12, 18, 13, 6, 10, 16,
                                                                    9,  7,  4,  17, 1, 15});
}

TEST_CASE("shuffles are uniform: each of the 6 orders of 3 items comes up equally often",
          "[data]") {
  std::map<std::vector<std::int64_t>, int> counts;
  const int epochs = 6000;
  for (int e = 0; e < epochs; ++e) ++counts[data::shuffled_order(3, 99, e)];
  REQUIRE(counts.size() == 6);
  double chi2 = 0;
  for (const auto& [order, c] : counts) chi2 += (c - 1000.0) * (c - 1000.0) / 1000.0;
  CHECK(chi2 < 20.5);  // chi-square with 5 degrees of freedom: p < 0.001 above 20.5
}

TEST_CASE("batches tile the epoch's order, with and without drop_last", "[data]") {
  SECTION("keep the last, smaller batch") {
    data::Batches b(10, 3, {.seed = 1});
    CHECK(b.batches_per_epoch() == 4);
    std::vector<std::int64_t> all;
    std::vector<std::size_t> sizes;
    while (b.has_next()) {
      const auto idx = b.next();
      sizes.push_back(idx.size());
      all.insert(all.end(), idx.begin(), idx.end());
    }
    CHECK(sizes == std::vector<std::size_t>{3, 3, 3, 1});
    CHECK(all == b.permutation(0));
    CHECK(b.position() == 4);
    CHECK_THROWS_WITH(b.next(),
                      Contains("epoch 0 has no batches left") && Contains("call next_epoch()"));
    b.next_epoch();
    CHECK(b.epoch() == 1);
    CHECK(b.position() == 0);
    const auto perm1 = b.permutation(1);
    CHECK(b.next() == std::vector<std::int64_t>(perm1.begin(), perm1.begin() + 3));
  }
  SECTION("drop the last, smaller batch") {
    data::Batches b(10, 3, {.seed = 1, .drop_last = true});
    CHECK(b.batches_per_epoch() == 3);
    std::vector<std::int64_t> all;
    while (b.has_next()) {
      const auto idx = b.next();
      CHECK(idx.size() == 3);
      all.insert(all.end(), idx.begin(), idx.end());
    }
    const auto perm = b.permutation(0);
    CHECK(all == std::vector<std::int64_t>(perm.begin(), perm.begin() + 9));
    CHECK(data::Batches(9, 3, {.seed = 1, .drop_last = true}).batches_per_epoch() == 3);
    CHECK(data::Batches(2, 3, {.seed = 1, .drop_last = true}).batches_per_epoch() == 0);
    CHECK(data::Batches(2, 3, {.seed = 1}).batches_per_epoch() == 1);
    CHECK(data::Batches(0, 3).batches_per_epoch() == 0);
  }
  SECTION("bad arguments") {
    CHECK_THROWS_WITH(data::Batches(10, 0), Contains("batch size must be positive"));
    CHECK_THROWS_WITH(data::Batches(-1, 2), Contains("negative sample count"));
    CHECK_THROWS_WITH(data::Batches(10, 3).batch(0, 4), Contains("batch 4 is outside [0, 4)"));
  }
}

TEST_CASE("the cursor's state, two integers, resumes the same batches", "[data]") {
  // The whole run: 3 epochs of 25 samples in batches of 4.
  data::Batches full(25, 4, {.seed = 2024});
  std::vector<std::vector<std::int64_t>> run;
  std::vector<std::pair<std::int64_t, std::int64_t>> states;
  for (; full.epoch() < 3; full.next_epoch()) {
    while (full.has_next()) {
      states.emplace_back(full.epoch(), full.position());
      run.push_back(full.next());
    }
  }
  REQUIRE(run.size() == 21);
  // Resume from every saved state in a fresh object: the rest of the run is the same.
  for (std::size_t k = 0; k < states.size(); ++k) {
    data::Batches resumed(25, 4, {.seed = 2024});
    resumed.restore(states[k].first, states[k].second);
    std::size_t at = k;
    for (; resumed.epoch() < 3; resumed.next_epoch()) {
      while (resumed.has_next()) {
        REQUIRE(at < run.size());
        CHECK(resumed.next() == run[at++]);
      }
    }
    CHECK(at == run.size());
  }
  // A state at the end of an epoch (all batches served) is valid too.
  data::Batches end(25, 4, {.seed = 2024});
  end.restore(1, 7);
  CHECK_FALSE(end.has_next());
  end.next_epoch();
  CHECK(end.next() == run[14]);
  CHECK_THROWS_WITH(end.restore(0, 8), Contains("position 8 is outside [0, 7]"));
  CHECK_THROWS_WITH(end.restore(-1, 0), Contains("negative epoch"));
}

TEST_CASE("gather_rows builds a batch from rows of a CPU tensor", "[data]") {
  std::vector<float> values(5 * 2 * 3);
  std::iota(values.begin(), values.end(), 0.0f);
  const Tensor<float> x = from_vector(values, Shape{5, 2, 3});
  const std::vector<std::int64_t> rows{4, 0, 4, 2};
  const Tensor<float> batch = data::gather_rows(x, rows);
  REQUIRE(batch.shape() == Shape{4, 2, 3});
  const std::vector<float> got = batch.to_vector();
  for (std::size_t k = 0; k < rows.size(); ++k) {
    for (std::size_t j = 0; j < 6; ++j) {
      CHECK(got[k * 6 + j] == values[static_cast<std::size_t>(rows[k]) * 6 + j]);
    }
  }

  // Into page-locked memory (for a non-blocking copy to a GPU): the same rows; without a CUDA
  // device, an error that says so.
  if (ember::memory::pinned_memory_available()) {
    const Tensor<float> pinned = data::gather_rows(x, rows, /*pinned=*/true);
    CHECK(pinned.is_pinned());
    CHECK(pinned.to_vector() == got);
  } else {
    CHECK_THROWS_WITH(data::gather_rows(x, rows, /*pinned=*/true),
                      Catch::Contains("pinned host memory needs a CUDA device"));
  }
  CHECK_FALSE(batch.is_pinned());

  // Rows of a transposed (not row-dense) tensor: [5, 3] viewed from a [3, 5] tensor.
  const Tensor<float> base =
      from_vector(std::vector<float>(values.begin(), values.begin() + 15), Shape{3, 5});
  const Tensor<float> xt = base.t();
  REQUIRE_FALSE(xt.is_contiguous());
  const Tensor<float> bt = data::gather_rows(xt, std::vector<std::int64_t>{1, 3});
  CHECK(bt.to_vector() == std::vector<float>{1, 6, 11, 3, 8, 13});
  // Rows of a slice (dense rows, a stride other than the row length).
  const Tensor<float> xs = x.slice(0, 1, 5, 2);  // rows 1 and 3
  CHECK(data::gather_rows(xs, std::vector<std::int64_t>{1}).to_vector() ==
        std::vector<float>(values.begin() + 18, values.begin() + 24));

  // Labels, indices given as a tensor, and no indices.
  const Tensor<std::int64_t> labels = from_vector(std::vector<std::int64_t>{10, 11, 12, 13, 14});
  const Tensor<std::int64_t> idx = from_vector(std::vector<std::int64_t>{3, 1});
  CHECK(data::gather_rows(labels, idx).to_vector() == std::vector<std::int64_t>{13, 11});
  CHECK(data::gather_rows(x, std::vector<std::int64_t>{}).shape() == Shape{0, 2, 3});

  CHECK_THROWS_WITH(data::gather_rows(x, std::vector<std::int64_t>{0, 5}),
                    Contains("index 5 (entry 1) is outside [0, 5)"));
  CHECK_THROWS_WITH(data::gather_rows(labels, std::vector<std::int64_t>{-1}), Contains("index -1"));
  const Tensor<float> scalar = from_vector(std::vector<float>{1}, Shape{});
  CHECK_THROWS_WITH(data::gather_rows(scalar, std::vector<std::int64_t>{0}), Contains("rank >= 1"));
}

TEST_CASE("a training loop over Batches and gather_rows sees every sample once per epoch",
          "[data]") {
  const std::int64_t n = 103;
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), std::int64_t{1000});
  const Tensor<std::int64_t> labels = from_vector(ids);
  data::Batches batches(n, 16, {.seed = 5});
  for (; batches.epoch() < 2; batches.next_epoch()) {
    std::vector<std::int64_t> seen;
    while (batches.has_next()) {
      const Tensor<std::int64_t> y = data::gather_rows(labels, batches.next());
      const auto v = y.to_vector();
      seen.insert(seen.end(), v.begin(), v.end());
    }
    std::sort(seen.begin(), seen.end());
    CHECK(seen == ids);
  }
}

TEST_CASE("Batches::shard: the ranks' parts of each batch are disjoint, in order, and whole",
          "[data]") {
  for (const bool drop_last : {false, true}) {
    for (const int ranks : {1, 2, 3, 4}) {
      const data::Batches whole(50, 12, {.seed = 3, .drop_last = drop_last});
      std::vector<data::Batches> parts(static_cast<std::size_t>(ranks), whole);
      for (int r = 0; r < ranks; ++r) {
        parts[static_cast<std::size_t>(r)].shard(r, ranks);
        CHECK(parts[static_cast<std::size_t>(r)].local_batch_size() == 12 / ranks);
        CHECK(parts[static_cast<std::size_t>(r)].batches_per_epoch() == whole.batches_per_epoch());
      }
      for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
        for (std::int64_t b = 0; b < whole.batches_per_epoch(); ++b) {
          std::vector<std::int64_t> joined;
          for (const auto& p : parts) {
            const auto mine = p.batch(epoch, b);
            // Full batches split evenly; the last partial one (50 = 4 * 12 + 2) as evenly as it
            // goes.
            if (b < 4) CHECK(static_cast<int>(mine.size()) == 12 / ranks);
            joined.insert(joined.end(), mine.begin(), mine.end());
          }
          CHECK(joined == whole.batch(epoch, b));
        }
      }
    }
  }
  data::Batches b(48, 12);
  CHECK_THROWS_WITH(b.shard(0, 5), Contains("does not split into 5 equal parts"));
  CHECK_THROWS_WITH(b.shard(2, 2), Contains("shard 2 of 2 is not a rank"));
}

}  // namespace test_data_batches
}  // namespace
