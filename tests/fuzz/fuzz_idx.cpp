// IDX files (data/idx.hpp), plain and gzip-compressed: read_idx of every element type.
#include <cstddef>
#include <cstdint>

#include <ember/data/idx.hpp>

#include "fuzz_target.hpp"

EMBER_FUZZ_TARGET(idx)(const std::uint8_t* data, std::size_t size) {
  const auto path = ember::fuzz::scratch_file("input.idx", data, size);
  ember::fuzz::expect_file_errors([&] { (void)ember::data::read_idx(path); });
  return 0;
}
