// safetensors files (io/safetensors.hpp): the header alone (read_safetensors_metadata) and the
// whole file (load_safetensors: every dtype, shape and offset checked, the data read).
#include <cstddef>
#include <cstdint>

#include <ember/io/safetensors.hpp>

#include "fuzz_target.hpp"

EMBER_FUZZ_TARGET(safetensors)(const std::uint8_t* data, std::size_t size) {
  const auto path = ember::fuzz::scratch_file("input.safetensors", data, size);
  ember::fuzz::expect_file_errors([&] { (void)ember::io::read_safetensors_metadata(path); });
  ember::fuzz::expect_file_errors([&] { (void)ember::io::load_safetensors(path); });
  return 0;
}
