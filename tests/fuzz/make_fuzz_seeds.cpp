// make_fuzz_seeds DIR: writes the seed corpus of every fuzz target, DIR/<target>/<name>: small
// valid files made by ember's own writers (safetensors, training checkpoints, BERT's cache),
// zlib and TurboJPEG, plus a slice of Debian's dict-gcide when it is installed. The committed
// tests/fuzz/corpus/ was written by it (scripts/fuzz.sh --seeds rewrites it); the fuzzers start
// from these files, and fuzz_replay runs them in every test build.
#include <turbojpeg.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <ember/ember.hpp>
#include <ember/io/checkpoint.hpp>
#include <ember/io/safetensors.hpp>

#include "bert/pretraining_data.hpp"
#include "fuzz_checkpoint_model.hpp"

namespace fs = std::filesystem;
using namespace ember;

namespace {

fs::path g_root;

void write(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(g_root / target);
  std::ofstream(g_root / target / name, std::ios::binary) << bytes;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// `bytes` as a gzip file's bytes.
std::string gzip(const std::string& bytes) {
  const fs::path tmp = g_root / "tmp.gz";
  gzFile f = gzopen(tmp.c_str(), "wb9");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  std::string out = read(tmp);
  fs::remove(tmp);
  return out;
}

void safetensors_seeds() {
  const fs::path tmp = g_root / "tmp.safetensors";
  NamedTensors t;
  t.emplace_back("float", AnyTensor(from_vector<float>({1.5f, -2.0f, 0.25f}).reshape(Shape{3, 1})));
  t.emplace_back("bf16", AnyTensor(Tensor<bf16>(cast<bf16>(from_vector<float>({1.0f, 2.0f})))));
  t.emplace_back("half", AnyTensor(Tensor<half>(cast<half>(from_vector<float>({0.5f})))));
  t.emplace_back("int64", AnyTensor(from_vector<std::int64_t>({7, -8})));
  t.emplace_back("bool", AnyTensor(from_vector<bool>({true, false})));
  t.emplace_back("scalar", AnyTensor(full<double>(Shape{}, 3.0)));
  t.emplace_back("empty", AnyTensor(zeros<float>(Shape{0, 4})));
  io::save_safetensors(t, tmp, {{"format", "pt"}, {"note", "a seed"}});
  write("safetensors", "dtypes.safetensors", read(tmp));
  io::save_safetensors({{"w", AnyTensor(from_vector<std::uint8_t>({1, 2, 3, 4}))}}, tmp);
  write("safetensors", "u8.safetensors", read(tmp));
  fs::remove(tmp);
}

void checkpoint_seeds() {
  const fs::path tmp = g_root / "tmp.safetensors";
  fuzz::CheckpointModel model;
  optim::AdamW opt(model, optim::AdamWOptions{.lr = 1e-3});
  const Var<float> x(randn<float>(Shape{2, 4}, 1));
  Var<float> loss = sum(model.fc2(Var<float>(relu(model.fc1(x)))));
  loss.backward();
  opt.step();
  io::save_training_checkpoint(tmp, model, opt, {.step = 1, .epoch = 0});
  write("checkpoint", "after_one_step.safetensors", read(tmp));
  fs::remove(tmp);
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

void idx_seeds() {
  // magic: 0, 0, element type, rank; then the extents big-endian, then the elements.
  const std::string u8 = std::string("\0\0\x08\x02", 4) + be32(2) + be32(3) + "abcdef";
  write("idx", "u8.idx", u8);
  write("idx", "u8.idx.gz", gzip(u8));
  write("idx", "i32.idx", std::string("\0\0\x0c\x01", 4) + be32(2) + be32(1) + be32(0xffffffff));
  write("idx", "f32.idx", std::string("\0\0\x0d\x01", 4) + be32(1) + be32(0x3fc00000));
  write("idx", "f64.idx", std::string("\0\0\x0e\x00", 4) + std::string("\x3f\xf0\0\0\0\0\0\0", 8));
}

void cifar10_seeds() {
  std::string record(1 + 3 * 32 * 32, '\0');
  record[0] = 3;
  for (std::size_t i = 1; i < record.size(); ++i) record[i] = static_cast<char>(i * 7);
  write("cifar10", "one_record.bin", record);
}

std::string jpeg(int width, int height, int pixel_format, int subsampling) {
  const int channels = tjPixelSize[pixel_format];
  std::vector<unsigned char> pixels(static_cast<std::size_t>(width * height * channels));
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<unsigned char>(i * 13);
  tjhandle h = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  tjCompress2(h, pixels.data(), width, 0, height, pixel_format, &buf, &size, subsampling, 90, 0);
  std::string out(reinterpret_cast<const char*>(buf), size);
  tjFree(buf);
  tjDestroy(h);
  return out;
}

void jpeg_seeds() {
  write("jpeg", "rgb_420.jpg", jpeg(12, 8, TJPF_RGB, TJSAMP_420));
  write("jpeg", "rgb_444.jpg", jpeg(5, 9, TJPF_RGB, TJSAMP_444));
  write("jpeg", "gray.jpg", jpeg(8, 8, TJPF_GRAY, TJSAMP_GRAY));
  write("jpeg", "cmyk.jpg", jpeg(8, 8, TJPF_CMYK, TJSAMP_444));
}

void wordpiece_seeds() {
  const std::string text =
      "Hello, world! Un-affable na\xc3\xafve caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd.\n"
      "Second line\twith TABS and 1,234.5 numbers\n";
  write("wordpiece", "uncased.txt", "\x01" + text);
  write("wordpiece", "cased.txt", "\x00" + text);
  const std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n##lo\nworld\n,\n!\n";
  write("wordpiece", "own_vocab.txt",
        "\x03" + vocab + std::string(1, '\0') + "hello, hellolo world!");
}

void bert_cache_seeds() {
  const fs::path tmp = g_root / "tmp.cache";
  bert::PretrainingOptions o;
  o.seq_len = 8;
  o.max_predictions = 2;
  bert::Instance a{
      {101, 7, 8, 102, 9, 10, 102}, {0, 0, 0, 0, 1, 1, 1}, {1, 4}, {2000, 2001}, false};
  bert::Instance b{{101, 7, 102, 9, 102}, {0, 0, 0, 1, 1}, {3}, {2002}, true};
  bert::save_instances(tmp, {a, b}, o, 42);
  write("bert_cache", "two_instances.cache", read(tmp));
  fs::remove(tmp);
}

char dictd_digit(std::uint64_t d) {
  static const char* const digits =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  return digits[d];
}

std::string dictd_base64(std::uint64_t v) {
  std::string s;
  do {
    s.insert(s.begin(), dictd_digit(v % 64));
    v /= 64;
  } while (v != 0);
  return s;
}

void text_corpus_seeds() {
  const std::string text =
      "The first document. Dr. Smith went home at 5 p.m. and slept!\n"
      "Its second line (with \"quotes\") ends here?\n\n"
      "A second document, one line.\n";
  write("text_corpus", "plain.txt", std::string(1, '\0') + text);
  write("text_corpus", "gzip.txt", std::string(1, '\0') + gzip(text));
  // A few real gcide entries, their offsets rebased to a dict of just their bytes.
  const fs::path index = "/usr/share/dictd/gcide.index", dict = "/usr/share/dictd/gcide.dict.dz";
  if (!fs::exists(index) || !fs::exists(dict)) {
    std::fprintf(stderr, "make_fuzz_seeds: dict-gcide not installed: no gcide seed\n");
    return;
  }
  std::ifstream in(index);
  std::string line, new_index, new_dict, all;
  gzFile dz = gzopen(dict.c_str(), "rb");
  std::vector<char> buf(1 << 16);
  for (int n; (n = gzread(dz, buf.data(), static_cast<unsigned>(buf.size()))) > 0;) {
    all.append(buf.data(), static_cast<std::size_t>(n));
    if (all.size() > (1u << 22)) break;  // the entries taken lie near the start
  }
  gzclose(dz);
  for (int i = 0; std::getline(in, line) && i < 3000; ++i) {
    if (i < 2990) continue;
    const std::size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    const std::uint64_t off = bert::decode_dictd_base64(line.substr(t1 + 1, t2 - t1 - 1));
    const std::uint64_t len = bert::decode_dictd_base64(line.substr(t2 + 1));
    if (off + len > all.size()) continue;
    new_index +=
        line.substr(0, t1) + "\t" + dictd_base64(new_dict.size()) + "\t" + dictd_base64(len) + "\n";
    new_dict += all.substr(off, len);
  }
  write("text_corpus", "gcide.txt", "\x01" + new_index + std::string(1, '\0') + new_dict);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  fs::create_directories(g_root);
  safetensors_seeds();
  checkpoint_seeds();
  idx_seeds();
  cifar10_seeds();
  jpeg_seeds();
  wordpiece_seeds();
  bert_cache_seeds();
  text_corpus_seeds();
  std::printf("make_fuzz_seeds: seeds written under %s\n", g_root.c_str());
  return 0;
}
