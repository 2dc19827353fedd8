// CIFAR-10's binary batches (data/cifar10.hpp): the bytes as test_batch.bin of a folder.
#include <cstddef>
#include <cstdint>

#include <ember/data/cifar10.hpp>

#include "fuzz_target.hpp"

EMBER_FUZZ_TARGET(cifar10)(const std::uint8_t* data, std::size_t size) {
  const auto path = ember::fuzz::scratch_file("test_batch.bin", data, size);
  ember::fuzz::expect_file_errors(
      [&] { (void)ember::data::Cifar10(path.parent_path(), ember::data::Split::test); });
  return 0;
}
