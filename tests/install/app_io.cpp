// The consumer's ember::io and ember::data, linked by their targets alone: a safetensors file
// written and read back, and a gzip-compressed IDX file (written here with zlib, which
// ember::data brings along) read with data::read_idx_u8.
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <ember/data/idx.hpp>
#include <ember/ember.hpp>
#include <ember/io/safetensors.hpp>

int main() {
  using namespace ember;
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("ember-consumer-io-" + std::to_string(getpid()));
  fs::create_directories(dir);
  int bad = 0;

  const Tensor<float> w = from_vector<float>({1.5f, -2.0f, 0.25f, 8.0f}, {2, 2});
  io::save_safetensors({{"w", AnyTensor(w)}}, dir / "w.safetensors");
  const Tensor<float> back = get_tensor<float>(io::load_safetensors(dir / "w.safetensors"), "w");
  if (back.to_vector() != w.to_vector()) {
    std::printf("consumer_io: the safetensors round trip changed the values\n");
    ++bad;
  }

  // IDX: magic 0x00000801 (unsigned bytes, one dimension), its size, then the bytes.
  const unsigned char idx[] = {0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9};
  gzFile gz = gzopen((dir / "v.idx.gz").c_str(), "wb");
  gzwrite(gz, idx, sizeof idx);
  gzclose(gz);
  const std::vector<std::uint8_t> v = data::read_idx_u8(dir / "v.idx.gz").to_vector();
  if (v != std::vector<std::uint8_t>{7, 8, 9}) {
    std::printf("consumer_io: the IDX file read back wrong\n");
    ++bad;
  }
  fs::remove_all(dir);
  std::printf("consumer_io: %s\n", bad ? "FAILED" : "safetensors and IDX read back");
  return bad ? 1 : 0;
}
