// CUB's device-wide sorts on the emulated device, the two ember calls: the segmented stable sort
// of key-value pairs and the radix sort of pairs over a range of key bits. CUB's protocol is kept
// (a first call with no scratch asks its size, the second sorts on the stream); the sort itself
// is std::stable_sort on the CPU when the stream gets there: a substitute, like the emulated
// cuBLASLt (cublas_lt.hpp), for kernels ember does not own.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "runtime_api.hpp"

namespace ember::emulated {

/// Sorts items [begin, end) of keys_in/values_in stably by key(k) into keys_out/values_out.
template <class K, class V, class Key>
void stable_sort_pairs(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                       std::int64_t begin, std::int64_t end, Key key) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(end - begin));
  std::iota(order.begin(), order.end(), begin);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
    return key(keys_in[x]) < key(keys_in[y]);
  });
  std::vector<K> k(order.size());
  std::vector<V> v(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    k[i] = keys_in[order[i]];
    v[i] = values_in[order[i]];
  }
  std::copy(k.begin(), k.end(), keys_out + begin);
  std::copy(v.begin(), v.end(), values_out + begin);
}

}  // namespace ember::emulated

namespace cub {

struct DeviceSegmentedSort {
  template <class K, class V, class Offsets>
  static cudaError_t StableSortPairs(void* scratch, std::size_t& scratch_bytes, const K* keys_in,
                                     K* keys_out, const V* values_in, V* values_out,
                                     std::int64_t items, std::int64_t segments, Offsets begins,
                                     Offsets ends, cudaStream_t stream = nullptr) {
    if (!scratch) {
      scratch_bytes = 1;
      return cudaSuccess;
    }
    (void)items;
    ember::emulated::enqueue(stream, [=] {
      for (std::int64_t s = 0; s < segments; ++s) {
        ember::emulated::stable_sort_pairs(
            keys_in, keys_out, values_in, values_out, static_cast<std::int64_t>(begins[s]),
            static_cast<std::int64_t>(ends[s]), [](const K& k) { return k; });
      }
    });
    return cudaSuccess;
  }
};

struct DeviceRadixSort {
  /// Orders by the key bits [begin_bit, end_bit) (an unsigned key's; ember's keys are
  /// non-negative), stably, as the radix sort does.
  template <class K, class V>
  static cudaError_t SortPairs(void* scratch, std::size_t& scratch_bytes, const K* keys_in,
                               K* keys_out, const V* values_in, V* values_out, int items,
                               int begin_bit = 0, int end_bit = sizeof(K) * 8,
                               cudaStream_t stream = nullptr) {
    static_assert(std::is_integral_v<K>, "the emulated radix sort takes integer keys");
    if (!scratch) {
      scratch_bytes = 1;
      return cudaSuccess;
    }
    using U = std::make_unsigned_t<K>;
    const U mask = end_bit - begin_bit >= static_cast<int>(sizeof(K) * 8)
                       ? static_cast<U>(~U{0})
                       : static_cast<U>((U{1} << (end_bit - begin_bit)) - 1);
    ember::emulated::enqueue(stream, [=] {
      ember::emulated::stable_sort_pairs(
          keys_in, keys_out, values_in, values_out, 0, items,
          [=](const K& k) { return static_cast<U>(static_cast<U>(k) >> begin_bit) & mask; });
    });
    return cudaSuccess;
  }
};

}  // namespace cub
