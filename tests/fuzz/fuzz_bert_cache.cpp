// BERT's pretraining cache (examples/bert/pretraining_data.hpp): load_instances checks the
// magic, version, sizes, CRC and every record.
#include <cstddef>
#include <cstdint>

#include "bert/pretraining_data.hpp"
#include "fuzz_target.hpp"

EMBER_FUZZ_TARGET(bert_cache)(const std::uint8_t* data, std::size_t size) {
  const auto path = ember::fuzz::scratch_file("input.cache", data, size);
  ember::fuzz::expect_file_errors([&] { (void)bert::load_instances(path); });
  return 0;
}
