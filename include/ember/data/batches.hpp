// Mini-batches: the order of the samples in each epoch (shuffled with Philox, a pure function of
// the seed and the epoch), a cursor through it whose state is two integers (epoch, position) for
// checkpoints, and gather_rows, which builds a batch from rows of a dataset tensor. See
// docs/data.md.
//
//   data::Batches batches(train.size(), 128, {.seed = 42, .drop_last = true});
//   batches.restore(ckpt_epoch, ckpt_position);            // when resuming; else start at (0, 0)
//   for (; batches.epoch() < epochs; batches.next_epoch()) {
//     while (batches.has_next()) {
//       const std::vector<std::int64_t> idx = batches.next();
//       Tensor<float> x = data::gather_rows(train.images(), idx);
//       Tensor<std::int64_t> y = data::gather_rows(train.labels(), idx);
//       ...  // a checkpoint here saves batches.epoch() and batches.position()
//     }
//   }
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <vector>

#include "../core/error.hpp"
#include "../core/philox.hpp"
#include "../core/shape.hpp"
#include "../exec/assign.hpp"
#include "../tensor/factories.hpp"
#include "../tensor/tensor.hpp"

namespace ember::data {

namespace detail {

// The high 64 bits of the 128-bit product a * b.
constexpr std::uint64_t mulhi64(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32;
  const std::uint64_t b_lo = b & 0xFFFFFFFFu, b_hi = b >> 32;
  const std::uint64_t p0 = a_lo * b_lo, p1 = a_lo * b_hi, p2 = a_hi * b_lo, p3 = a_hi * b_hi;
  const std::uint64_t mid = (p0 >> 32) + (p1 & 0xFFFFFFFFu) + (p2 & 0xFFFFFFFFu);
  return p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
}

// Shuffles draw from Philox counters whose high word has the top bit set: no (seed, offset) draw
// of ember's (those use counter_hi = 0) shares their blocks.
inline constexpr std::uint64_t kShuffleCounterTag = std::uint64_t{1} << 63;

}  // namespace detail

/// The permutation of [0, n) for `epoch` of a shuffle keyed by `seed`: Fisher-Yates, where step
/// i (from n-1 down to 1) swaps element i with element j = floor(r * (i + 1) / 2^64), r being the
/// 64-bit word pair (i % 2) of Philox4x32-10 keyed by `seed` at counter (lo = i / 2,
/// hi = 2^63 + epoch). A pure function of (n, seed, epoch): the same on every machine.
inline std::vector<std::int64_t> shuffled_order(std::int64_t n, std::uint64_t seed,
                                                std::int64_t epoch) {
  EMBER_CHECK(n >= 0, "ember: shuffled_order: negative sample count ", n);
  EMBER_CHECK(epoch >= 0, "ember: shuffled_order: negative epoch ", epoch);
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  const std::uint64_t hi = detail::kShuffleCounterTag | static_cast<std::uint64_t>(epoch);
  PhiloxBlock block{};
  std::uint64_t block_at = ~std::uint64_t{0};
  for (std::int64_t i = n - 1; i >= 1; --i) {
    const auto ui = static_cast<std::uint64_t>(i);
    if (ui / 2 != block_at) {
      block_at = ui / 2;
      block = philox4x32(seed, block_at, hi);
    }
    const unsigned w = static_cast<unsigned>(ui % 2) * 2;
    const std::uint64_t r = (std::uint64_t{block.v[w + 1]} << 32) | block.v[w];
    const auto j = static_cast<std::size_t>(detail::mulhi64(r, ui + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[j]);
  }
  return order;
}

/// How Batches orders and splits each epoch (PyTorch's DataLoader takes the same keywords).
struct BatchesOptions {
  bool shuffle = true;     // each epoch in the order shuffled_order(n, seed, epoch), else 0..n-1
  std::uint64_t seed = 0;  // the shuffle's seed
  bool drop_last = false;  // skip an epoch's last n % batch_size samples instead of a short batch
};

/// Splits `n` samples into batches of `batch_size`, epoch after epoch, in the order of
/// shuffled_order(n, seed, epoch) (or 0, 1, ..., n-1 without shuffling). Without drop_last the
/// last batch of an epoch holds the n % batch_size samples left over; with it they are skipped.
/// The cursor's whole state is (epoch(), position()): the epoch and the number of batches of it
/// already served; restore(epoch, position) returns to it.
class Batches {
 public:
  Batches(std::int64_t n, std::int64_t batch_size, const BatchesOptions& options = {})
      : n_(n),
        batch_size_(batch_size),
        shuffle_(options.shuffle),
        seed_(options.seed),
        drop_last_(options.drop_last) {
    EMBER_CHECK(n >= 0, "ember: Batches: negative sample count ", n);
    EMBER_CHECK(batch_size > 0, "ember: Batches: batch size must be positive, got ", batch_size);
  }

  /// The number of samples, n.
  std::int64_t size() const { return n_; }
  std::int64_t batch_size() const { return batch_size_; }
  bool shuffle() const { return shuffle_; }
  std::uint64_t seed() const { return seed_; }
  bool drop_last() const { return drop_last_; }
  /// Batches in each epoch: n / batch_size with drop_last, else rounded up.
  std::int64_t batches_per_epoch() const {
    return drop_last_ ? n_ / batch_size_ : (n_ + batch_size_ - 1) / batch_size_;
  }

  /// The order of the samples in `epoch`: a permutation of [0, n).
  std::vector<std::int64_t> permutation(std::int64_t epoch) const {
    EMBER_CHECK(epoch >= 0, "ember: Batches: negative epoch ", epoch);
    if (shuffle_) return shuffled_order(n_, seed_, epoch);
    std::vector<std::int64_t> order(static_cast<std::size_t>(n_));
    std::iota(order.begin(), order.end(), std::int64_t{0});
    return order;
  }

  /// The sample indices of batch `index` of `epoch` (no change to the cursor).
  std::vector<std::int64_t> batch(std::int64_t epoch, std::int64_t index) const {
    EMBER_CHECK(index >= 0 && index < batches_per_epoch(), "ember: Batches: batch ", index,
                " is outside [0, ", batches_per_epoch(), ")");
    const std::vector<std::int64_t>& order = order_for(epoch);
    std::int64_t begin = index * batch_size_;
    std::int64_t end = std::min(n_, (index + 1) * batch_size_);
    if (shards_ > 1) {  // this rank's part of the batch
      const std::int64_t m = end - begin;
      end = begin + (shard_ + 1) * m / shards_;
      begin += shard_ * m / shards_;
    }
    return {order.begin() + static_cast<std::ptrdiff_t>(begin),
            order.begin() + static_cast<std::ptrdiff_t>(end)};
  }

  // ---- data parallelism ----
  /// From now on batch() and next() give only rank `rank`'s part of each batch, for
  /// data-parallel training on `ranks` processes: every rank draws the same seeded order, each
  /// batch of batch_size() (the global batch) is split into `ranks` contiguous parts of
  /// batch_size() / ranks, and rank r takes part r. So the ranks' parts are disjoint, cover the
  /// epoch, and together are exactly the batch one process would draw (PyTorch's
  /// DistributedSampler gives the same guarantees). A last partial batch (without drop_last) is
  /// split as evenly as it goes, some parts one sample shorter, possibly empty.
  void shard(int rank, int ranks) {
    EMBER_CHECK(ranks >= 1 && rank >= 0 && rank < ranks, "ember: Batches: shard ", rank, " of ",
                ranks, " is not a rank of the world");
    EMBER_CHECK(batch_size_ % ranks == 0, "ember: Batches: the global batch of ", batch_size_,
                " does not split into ", ranks, " equal parts; choose a batch size divisible by ",
                ranks);
    shard_ = rank;
    shards_ = ranks;
  }
  /// This object's rank and the number of ranks (0 and 1 unless shard() was called).
  int shard_rank() const { return shard_; }
  int shard_count() const { return shards_; }
  /// The samples of this rank's part of a full batch: batch_size() / shard_count().
  std::int64_t local_batch_size() const { return batch_size_ / shards_; }

  // ---- the cursor ----

  /// The current epoch (from 0).
  std::int64_t epoch() const { return epoch_; }
  /// Batches of the current epoch already served by next().
  std::int64_t position() const { return position_; }
  /// True while the current epoch has batches left.
  bool has_next() const { return position_ < batches_per_epoch(); }
  /// The sample indices of the next batch of the current epoch; advances position(). Throws
  /// when the epoch is done (call next_epoch()).
  std::vector<std::int64_t> next() {
    EMBER_CHECK(has_next(), "ember: Batches: epoch ", epoch_, " has no batches left (",
                batches_per_epoch(), " served); call next_epoch()");
    std::vector<std::int64_t> out = batch(epoch_, position_);
    ++position_;
    return out;
  }
  /// Moves to the start of the next epoch.
  void next_epoch() {
    ++epoch_;
    position_ = 0;
  }
  /// Returns to a saved state: `position` batches of `epoch` served.
  void restore(std::int64_t epoch, std::int64_t position) {
    EMBER_CHECK(epoch >= 0, "ember: Batches: restore: negative epoch ", epoch);
    EMBER_CHECK(position >= 0 && position <= batches_per_epoch(),
                "ember: Batches: restore: position ", position, " is outside [0, ",
                batches_per_epoch(), "] (", n_, " samples in batches of ", batch_size_,
                drop_last_ ? ", drop_last" : "", ")");
    epoch_ = epoch;
    position_ = position;
  }

 private:
  // The order of `epoch`, cached for the latest epoch asked for.
  const std::vector<std::int64_t>& order_for(std::int64_t epoch) const {
    if (cached_epoch_ != epoch) {
      cached_ = permutation(epoch);
      cached_epoch_ = epoch;
    }
    return cached_;
  }

  std::int64_t n_;
  std::int64_t batch_size_;
  bool shuffle_;
  std::uint64_t seed_;
  bool drop_last_;
  std::int64_t epoch_ = 0;
  std::int64_t position_ = 0;
  int shard_ = 0;   // this rank's part of each batch
  int shards_ = 1;  // in how many parts
  mutable std::vector<std::int64_t> cached_;
  mutable std::int64_t cached_epoch_ = -1;
};

}  // namespace ember::data

namespace ember::data::inline EMBER_UNIT_KIND {
/// A new dense CPU tensor whose row k is row rows[k] of `t` (rows along the first dimension):
/// shape [rows.size(), t.shape()[1:]...]. `t` must be a CPU tensor of rank >= 1, in any layout
/// (rows that are dense in row-major order are copied with memcpy). Throws ember::Error for an
/// index outside [0, t.size(0)). With `pinned` the batch is in page-locked memory, for a
/// non-blocking copy to a GPU (Tensor::to); that needs a CUDA device.
template <Storable T>
Tensor<T> gather_rows(const Tensor<T>& t, std::span<const std::int64_t> rows, bool pinned = false) {
  EMBER_CHECK(t.defined(), "ember: gather_rows: the tensor is undefined");
  EMBER_CHECK(t.device().is_cpu(), "ember: gather_rows needs a CPU tensor, got one on ",
              t.device().str(), "; gather on the host, then move the batch with .to(device)");
  EMBER_CHECK(t.rank() >= 1, "ember: gather_rows needs a tensor of rank >= 1, got shape ",
              t.shape().str());
  const std::int64_t n = t.size(0);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    EMBER_CHECK(rows[k] >= 0 && rows[k] < n, "ember: gather_rows: index ", rows[k], " (entry ", k,
                ") is outside [0, ", n, ") for shape ", t.shape().str());
  }
  Shape shape = t.shape();
  shape[0] = static_cast<std::int64_t>(rows.size());
  Tensor<T> out = pinned ? empty_pinned<T>(shape) : empty<T>(shape);
  if (out.numel() == 0) return out;

  // Is each row dense in row-major order?
  bool dense_rows = true;
  std::int64_t expect = 1;
  for (int d = t.rank() - 1; d >= 1; --d) {
    if (t.size(d) != 1 && t.stride(d) != expect) dense_rows = false;
    expect *= t.size(d);
  }
  const std::int64_t row_elems = expect;
  if (dense_rows) {
    const T* src = t.data();
    T* dst = out.data();
    const std::size_t row_bytes = static_cast<std::size_t>(row_elems) * sizeof(T);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      std::memcpy(dst + static_cast<std::ptrdiff_t>(k) * row_elems, src + rows[k] * t.stride(0),
                  row_bytes);
    }
  } else {
    for (std::size_t k = 0; k < rows.size(); ++k) {
      out.select(0, static_cast<std::int64_t>(k)).copy_(t.select(0, rows[k]));
    }
  }
  return out;
}

/// gather_rows with the indices in a rank-1 int64 CPU tensor.
template <Storable T>
Tensor<T> gather_rows(const Tensor<T>& t, const Tensor<std::int64_t>& rows) {
  EMBER_CHECK(rows.defined() && rows.rank() == 1,
              "ember: gather_rows: the indices must be a rank-1 tensor, got shape ",
              rows.defined() ? rows.shape().str() : "undefined");
  const std::vector<std::int64_t> idx = rows.to_vector();
  return gather_rows(t, std::span<const std::int64_t>(idx));
}

}  // namespace ember::data::inline EMBER_UNIT_KIND
