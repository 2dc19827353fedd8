// Checkpoints in the safetensors format: round trips of every dtype and layout, the exact bytes
// of the format, a file written by the reference implementation, refusal of malformed files,
// and the atomic write (a failed or killed save leaves the previous file loadable).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ember/ember.hpp>
#include <ember/io/safetensors.hpp>
#include <ember/io/temp_file.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/files.hpp"

using namespace ember;
namespace fs = std::filesystem;

using ember::testing::read_bytes;
using ember::testing::run_in_child;
using ember::testing::TempDir;
using ember::testing::write_bytes;

namespace {
namespace test_io_safetensors {

// Overwrites the byte at `pos` in place (cheaper than rewriting the file: truncation is slow on
// some file systems).
void patch_byte(const fs::path& p, std::size_t pos, char c) {
  std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
  REQUIRE(f);
  f.seekp(static_cast<std::streamoff>(pos));
  f.put(c);
  REQUIRE(f);
}

// The 8-byte little-endian length prefix.
std::string le64(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

// A safetensors file from a header text (padded with spaces to a multiple of 8) and data bytes.
std::string make_file(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return le64(header.size()) + header + data;
}

// The row-major bytes of a tensor, read on the host.
template <Storable T>
std::string bytes_of(const Tensor<T>& t) {
  const Tensor<T> host = t.to(Device::cpu()).contiguous();
  return std::string(reinterpret_cast<const char*>(host.data()),
                     static_cast<std::size_t>(host.numel()) * sizeof(T));
}

template <class T>
std::string bytes_of_values(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

const io::AnyTensor& find(const io::NamedTensors& ts, const std::string& name) {
  for (const auto& [n, t] : ts) {
    if (n == name) return t;
  }
  FAIL("no tensor named " << name);
  throw;  // unreachable
}

template <Storable T>
void check_same(const io::AnyTensor& loaded, const Tensor<T>& want) {
  REQUIRE(loaded.holds<T>());
  const Tensor<T> got = loaded.as<T>();
  CHECK(got.shape() == want.shape());
  CHECK(got.is_contiguous());
  CHECK(got.device() == Device::cpu());
  CHECK(bytes_of(got) == bytes_of(want));
}

// Loads `path` expecting ember::Error; returns its message. Any other exception fails the test.
std::string load_error(const fs::path& path) {
  try {
    (void)io::load_safetensors(path);
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("loading " << path << " did not throw");
  return {};
}

bool is_temp_name(const std::string& name) { return name.find(".tmp.") != std::string::npos; }

fs::path fixture(const std::string& name) {
  return fs::path(__FILE__).parent_path() / "data" / name;
}

TEST_CASE("safetensors: every dtype round trips, rank 0 and size 0 included", "[io]") {
  TempDir dir;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();

  const auto f64 = from_vector<double>({-1.5, 0.0, -0.0, 1e-300, 1e300, 3.0}, {2, 3});
  const auto f32 = from_vector<float>({1.0f, -2.5f, nan, inf, -inf, -0.0f, 7.0f, 8.0f}, {2, 2, 2});
  const auto f16 =
      from_vector<ember::half>({ember::half(1.0f), ember::half(-2.0f), ember::half(65504.0f),
                                ember::half(inf), ember::half(nan)},
                               {5});
  const auto b16 = from_vector<bf16>({bf16(1.0f), bf16(-3.0f), bf16(3.14f), bf16(nan)}, {2, 1, 2});
  const auto i64 = from_vector<std::int64_t>(
      {std::numeric_limits<std::int64_t>::min(), -1, 0, std::numeric_limits<std::int64_t>::max()},
      {4, 1});
  const auto i32 = from_vector<std::int32_t>({std::numeric_limits<std::int32_t>::min(), 5}, {2});
  const auto u8 = from_vector<std::uint8_t>({0, 1, 128, 255}, {1, 4});
  const auto mask = from_vector<bool>({true, false, false, true, true}, {5});
  const auto scalar = from_vector<float>({42.5f}, Shape{});
  const auto scalar_i = from_vector<std::int64_t>({-9}, Shape{});
  const auto empty0 = empty<float>({0});
  const auto empty3 = empty<bf16>({2, 0, 3});
  const auto empty_b = empty<bool>({0, 1});

  const io::NamedTensors tensors = {
      {"f64", f64},         {"f32", f32},           {"f16", f16},       {"bf16", b16},
      {"i64", i64},         {"i32", i32},           {"u8", u8},         {"mask", mask},
      {"scalar", scalar},   {"scalar_i", scalar_i}, {"empty0", empty0}, {"empty3", empty3},
      {"empty_b", empty_b},
  };
  const fs::path path = dir / "all.safetensors";
  io::save_safetensors(tensors, path);
  const io::NamedTensors back = io::load_safetensors(path);
  REQUIRE(back.size() == tensors.size());

  check_same(find(back, "f64"), f64);
  check_same(find(back, "f32"), f32);
  check_same(find(back, "f16"), f16);
  check_same(find(back, "bf16"), b16);
  check_same(find(back, "i64"), i64);
  check_same(find(back, "i32"), i32);
  check_same(find(back, "u8"), u8);
  check_same(find(back, "mask"), mask);
  check_same(find(back, "scalar"), scalar);
  check_same(find(back, "scalar_i"), scalar_i);
  check_same(find(back, "empty0"), empty0);
  check_same(find(back, "empty3"), empty3);
  check_same(find(back, "empty_b"), empty_b);
  CHECK(find(back, "scalar").rank() == 0);
  CHECK(find(back, "scalar").as<float>().item() == 42.5f);
  CHECK(find(back, "mask").as<bool>().to_vector() ==
        std::vector<bool>{true, false, false, true, true});
  CHECK(find(back, "empty3").shape() == Shape{2, 0, 3});

  // Without metadata the header has no __metadata__ entry and the metadata reads back empty.
  CHECK(io::read_safetensors_metadata(path).empty());
  CHECK(read_bytes(path).find("__metadata__") == std::string::npos);

  // The data of each tensor is aligned to its element size (larger element types first).
  std::uint64_t prev_order = 100;
  for (const auto& [name, t] : back) {
    const auto order = static_cast<std::uint64_t>(io::detail::st_order(t.dtype()));
    CHECK(order <= prev_order);
    prev_order = order;
  }

  // An empty list is a valid file too: the header is "{}" and six spaces.
  io::save_safetensors({}, dir / "none.safetensors");
  CHECK(io::load_safetensors(dir / "none.safetensors").empty());
  CHECK(read_bytes(dir / "none.safetensors") == le64(8) + "{}      ");
}

TEST_CASE("safetensors: strided, expanded and channels-last tensors are stored row-major", "[io]") {
  TempDir dir;
  std::vector<float> v(2 * 3 * 4 * 5);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f - 7.0f;
  const auto base = from_vector<float>(v, {2, 3, 4, 5});

  const Tensor<float> transposed = base.transpose(1, 3);             // [2, 5, 4, 3]
  const Tensor<float> sliced = base.slice(3, 0, 5, 2).select(1, 2);  // [2, 4, 3], strided
  const Tensor<float> expanded = from_vector<float>({1, 2, 3}, {3, 1}).expand({3, 4});
  const Tensor<float> nhwc = base.contiguous(MemoryFormat::channels_last);
  REQUIRE(nhwc.memory_format() == MemoryFormat::channels_last);
  const Tensor<std::int32_t> ints =
      from_vector<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}).t();  // [3, 2]
  const Tensor<bool> bools = from_vector<bool>({true, false, true, true}, {2, 2}).t();

  const fs::path path = dir / "strided.safetensors";
  io::save_safetensors({{"transposed", transposed},
                        {"sliced", sliced},
                        {"expanded", expanded},
                        {"nhwc", nhwc},
                        {"ints", ints},
                        {"bools", bools}},
                       path);
  const auto back = io::load_safetensors(path);
  const auto same = [&](const char* name, const auto& want) {
    using T = typename std::decay_t<decltype(want)>::value_type;
    INFO(name);
    const Tensor<T> got = find(back, name).as<T>(name);
    CHECK(got.shape() == want.shape());
    CHECK(got.is_contiguous());
    CHECK(got.to_vector() == want.to_vector());
  };
  same("transposed", transposed);
  same("sliced", sliced);
  same("expanded", expanded);
  same("nhwc", nhwc);
  same("ints", ints);
  same("bools", bools);
  CHECK(find(back, "expanded").as<float>().to_vector() ==
        std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  CHECK(find(back, "ints").as<std::int32_t>().to_vector() ==
        std::vector<std::int32_t>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("safetensors: metadata and names round trip, escapes and UTF-8 included", "[io]") {
  TempDir dir;
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"},
      {"step", "12000"},
      {"quote \" backslash \\ slash /", "tab\tnewline\ncontrol\x01 end"},
      {"unicode", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5"},
      {"", "empty key"},
      {"empty value", ""},
  };
  const io::NamedTensors tensors = {
      {"model.layers.0.attn/q_proj.weight", from_vector<float>({1, 2}, {2})},
      {"na\"me\\with\nescapes", from_vector<std::int32_t>({3}, {1})},
      {"\xce\xb8", from_vector<bf16>({bf16(0.5f)}, {1})},
  };
  const fs::path path = dir / "meta.safetensors";
  io::save_safetensors(tensors, path, metadata);
  CHECK(io::read_safetensors_metadata(path) == metadata);
  const auto back = io::load_safetensors(path);
  REQUIRE(back.size() == 3);
  CHECK(io::get_tensor<float>(back, "model.layers.0.attn/q_proj.weight").to_vector() ==
        std::vector<float>{1, 2});
  CHECK(io::get_tensor<std::int32_t>(back, "na\"me\\with\nescapes").item() == 3);
  CHECK(io::get_tensor<bf16>(back, "\xce\xb8").item() == bf16(0.5f));

  // The header is valid JSON that an independent parser reads the same way.
  const std::string bytes = read_bytes(path);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  CHECK(n % 8 == 0);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  CHECK(header.at("__metadata__").get<std::map<std::string, std::string>>() == metadata);
  CHECK(header.at("\xce\xb8").at("dtype") == "BF16");
}

TEST_CASE("safetensors: the bytes of a small file are exactly those of the format", "[io]") {
  TempDir dir;
  // By hand, per the format: F32 [2] holding 1.0 and -2.0, and U8 [3] holding 1, 2, 3. The F32
  // tensor comes first (larger element type), then the U8 one; the header is padded with spaces
  // to a multiple of 8.
  const std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";
  REQUIRE(header.size() == 132);
  const std::string padded = header + "    ";  // 136 = 17 * 8 = 0x88
  const std::string data = std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8) + "\x01\x02\x03";
  const std::string want = std::string("\x88\x00\x00\x00\x00\x00\x00\x00", 8) + padded + data;

  const fs::path path = dir / "tiny.safetensors";
  io::save_safetensors({{"b", from_vector<std::uint8_t>({1, 2, 3}, {3})},
                        {"a", from_vector<float>({1.0f, -2.0f}, {2})}},
                       path, {{"k", "v"}});
  CHECK(read_bytes(path) == want);

  // And the hand-written file loads.
  write_bytes(dir / "by_hand.safetensors", want);
  const auto back = io::load_safetensors(dir / "by_hand.safetensors");
  REQUIRE(back.size() == 2);
  CHECK(back[0].first == "a");
  CHECK(back[1].first == "b");
  CHECK(io::get_tensor<float>(back, "a").to_vector() == std::vector<float>{1.0f, -2.0f});
  CHECK(io::get_tensor<std::uint8_t>(back, "b").to_vector() == std::vector<std::uint8_t>{1, 2, 3});
  CHECK(io::read_safetensors_metadata(dir / "by_hand.safetensors") ==
        std::map<std::string, std::string>{{"k", "v"}});

  // The reference implementation's own test vectors: no tensors, without and with metadata.
  io::save_safetensors({}, dir / "e1.safetensors", {{"framework", "pt"}});
  CHECK(read_bytes(dir / "e1.safetensors") ==
        le64(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
}

TEST_CASE("safetensors: a file written by the reference implementation", "[io]") {
  // tests/io/data/reference.safetensors: written by tests/io/make_fixtures.py with Python's
  // safetensors package.
  const fs::path path = fixture("reference.safetensors");
  REQUIRE(fs::exists(path));
  const auto back = io::load_safetensors(path);
  REQUIRE(back.size() == 9);
  CHECK(io::read_safetensors_metadata(path) ==
        std::map<std::string, std::string>{{"format", "np"}});

  CHECK(io::get_tensor<double>(back, "f64").shape() == Shape{2, 3});
  CHECK(io::get_tensor<double>(back, "f64").to_vector() ==
        std::vector<double>{-1.0, -0.5, 0.0, 0.5, 1.0, 1e300});
  CHECK(io::get_tensor<float>(back, "f32").shape() == Shape{3, 1, 2});
  CHECK(io::get_tensor<float>(back, "f32").to_vector() ==
        std::vector<float>{-1.0f, -0.75f, -0.5f, -0.25f, 0.0f, 0.25f});
  const auto f16 = io::get_tensor<ember::half>(back, "f16").to_vector();
  REQUIRE(f16.size() == 4);
  CHECK(static_cast<float>(f16[0]) == 1.0f);
  CHECK(static_cast<float>(f16[1]) == -2.0f);
  CHECK(static_cast<float>(f16[2]) == 0.5f);
  CHECK(std::isinf(static_cast<float>(f16[3])));
  const auto b16 = io::get_tensor<bf16>(back, "bf16");
  CHECK(b16.shape() == Shape{2, 2});
  const auto b16v = b16.to_vector();
  CHECK(static_cast<float>(b16v[0]) == 1.0f);
  CHECK(static_cast<float>(b16v[1]) == -3.0f);
  CHECK(static_cast<float>(b16v[2]) == 3.140625f);
  CHECK(static_cast<float>(b16v[3]) == 0.0f);
  CHECK(io::get_tensor<std::int64_t>(back, "i64").rank() == 0);
  CHECK(io::get_tensor<std::int64_t>(back, "i64").item() == -1234567890123);
  CHECK(io::get_tensor<std::int32_t>(back, "i32_empty").shape() == Shape{0, 3});
  CHECK(io::get_tensor<std::int32_t>(back, "i32").to_vector() ==
        std::vector<std::int32_t>{-1, 0, 2147483647});
  CHECK(io::get_tensor<std::uint8_t>(back, "u8").to_vector() ==
        std::vector<std::uint8_t>{0, 1, 127, 128, 255});
  CHECK(io::get_tensor<bool>(back, "mask").to_vector() ==
        std::vector<bool>{true, false, false, true});

  // Tensors come back in the order of the file's data buffer.
  std::vector<std::string> order;
  for (const auto& [name, t] : back) order.push_back(name);
  CHECK(order == std::vector<std::string>{"i64", "f64", "f32", "i32", "i32_empty", "bf16", "f16",
                                          "u8", "mask"});

  // ember writes the same tensors and metadata to the very same bytes.
  TempDir dir;
  io::save_safetensors(back, dir / "again.safetensors", {{"format", "np"}});
  CHECK(read_bytes(dir / "again.safetensors") == read_bytes(path));
}

TEST_CASE("safetensors: AnyTensor and get_tensor name what went wrong", "[io]") {
  const io::AnyTensor a = from_vector<bf16>({bf16(1.0f)}, {1});
  CHECK(a.defined());
  CHECK(a.dtype() == DType::bf16);
  CHECK(a.dtype_name() == "bfloat16");
  CHECK(a.holds<bf16>());
  CHECK_FALSE(a.holds<float>());
  CHECK(a.shape() == Shape{1});
  CHECK(a.numel() == 1);
  CHECK(a.device() == Device::cpu());
  CHECK_THROWS_WITH(a.as<float>(), Catch::Contains("holds bfloat16, not float32"));
  CHECK_THROWS_WITH(a.as<float>("decoder.w"),
                    Catch::Contains("tensor 'decoder.w' holds bfloat16, not float32"));
  // as<T>() hands back the same tensor, not a copy.
  CHECK(a.as<bf16>().storage() == std::get<Tensor<bf16>>(a.variant()).storage());
  CHECK(a.visit([](const auto& t) { return t.numel(); }) == 1);
  CHECK_FALSE(io::AnyTensor().defined());

  const io::NamedTensors ts = {{"w", from_vector<float>({1}, {1})}};
  CHECK_THROWS_WITH(io::get_tensor<float>(ts, "v"), Catch::Contains("no tensor named 'v'"));
  CHECK_THROWS_WITH(io::get_tensor<double>(ts, "w"),
                    Catch::Contains("tensor 'w' holds float32, not float64"));
}

TEST_CASE("safetensors: bad input to save is refused and leaves the old file alone", "[io]") {
  TempDir dir;
  const fs::path path = dir / "model.safetensors";
  io::save_safetensors({{"w", from_vector<float>({1, 2, 3}, {3})}}, path);
  const std::string before = read_bytes(path);

  const auto w = from_vector<float>({4, 5}, {2});
  CHECK_THROWS_WITH(io::save_safetensors({{"", w}}, path), Catch::Contains("empty name"));
  CHECK_THROWS_WITH(io::save_safetensors({{"a", w}, {"a", w}}, path),
                    Catch::Contains("two tensors are named 'a'"));
  CHECK_THROWS_WITH(io::save_safetensors({{"__metadata__", w}}, path), Catch::Contains("reserved"));
  CHECK_THROWS_WITH(io::save_safetensors({{"u", io::AnyTensor(Tensor<float>())}}, path),
                    Catch::Contains("tensor 'u' is undefined"));
  // Invalid UTF-8 is found while the header is built, after the other tensors were checked.
  CHECK_THROWS_WITH(io::save_safetensors({{"ok", w}, {"bad\xff", w}}, path),
                    Catch::Contains("not valid UTF-8"));
  CHECK_THROWS_WITH(io::save_safetensors({{"ok", w}}, path, {{"k", "\xc3"}}),
                    Catch::Contains("not valid UTF-8"));
  CHECK_THROWS_WITH(io::save_safetensors({{"ok", w}}, dir / "no" / "such" / "dir.safetensors"),
                    Catch::Contains("No such file or directory"));
  CHECK_THROWS_AS(io::save_safetensors({{"ok", w}}, dir.path), Error);  // a directory

  CHECK(read_bytes(path) == before);
  CHECK(io::get_tensor<float>(io::load_safetensors(path), "w").to_vector() ==
        std::vector<float>{1, 2, 3});
  CHECK(dir.files() == std::vector<std::string>{"model.safetensors"});

  // A successful save replaces the file, and leaves no temporary behind.
  io::save_safetensors({{"w", w}}, path);
  CHECK(io::get_tensor<float>(io::load_safetensors(path), "w").to_vector() ==
        std::vector<float>{4, 5});
  CHECK(dir.files() == std::vector<std::string>{"model.safetensors"});

  // A relative path (no directory part) works too.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path);
  io::save_safetensors({{"w", w}}, "relative.safetensors");
  fs::current_path(cwd);
  CHECK(io::load_safetensors(dir / "relative.safetensors").size() == 1);
}

TEST_CASE("safetensors: every truncation of a file is refused", "[io]") {
  TempDir dir;
  const fs::path good = dir / "good.safetensors";
  io::save_safetensors({{"a", from_vector<float>({1, 2, 3}, {3})},
                        {"b", from_vector<std::int64_t>({4}, Shape{})},
                        {"c", from_vector<bool>({true, false}, {2})}},
                       good, {{"format", "pt"}});
  const std::string bytes = read_bytes(good);
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    INFO("prefix of " << len << " of " << bytes.size() << " bytes");
    // A new file each time: truncating one in place is slow on some file systems.
    const fs::path prefix = dir / ("cut_" + std::to_string(len) + ".safetensors");
    write_bytes(prefix, bytes.substr(0, len));
    const std::string msg = load_error(prefix);
    CHECK_THAT(msg, Catch::Contains(prefix.filename().string()));
    CHECK_THROWS_AS(io::read_safetensors_metadata(prefix), Error);
    if (len + 1 == bytes.size())
      CHECK_THAT(msg, Catch::Contains("past the end of the data buffer"));
    fs::remove(prefix);
  }
  const fs::path cut = dir / "cut.safetensors";
  write_bytes(cut, bytes.substr(0, 4));
  CHECK_THAT(load_error(cut), Catch::Contains("too short for the 8-byte header length"));
  write_bytes(cut, bytes.substr(0, 20));
  CHECK_THAT(load_error(cut), Catch::Contains("runs past the end of the file"));
  // And one byte more is trailing garbage.
  write_bytes(cut, bytes + "x");
  CHECK_THAT(load_error(cut), Catch::Contains("1 bytes of trailing data"));
}

TEST_CASE("safetensors: corrupted header bytes are refused or harmless, never a crash", "[io]") {
  TempDir dir;
  const fs::path good = dir / "good.safetensors";
  io::save_safetensors(
      {{"weight", from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
       {"bias", from_vector<ember::half>({ember::half(1.0f), ember::half(2.0f)}, {2})}},
      good, {{"format", "pt"}});
  const std::string bytes = read_bytes(good);
  REQUIRE(bytes.substr(1, 7) == std::string(7, '\0'));
  const std::size_t header_end = 8 + static_cast<unsigned char>(bytes[0]);
  const fs::path bad = dir / "bad.safetensors";
  write_bytes(bad, bytes);
  int refused = 0, accepted = 0;
  for (std::size_t pos = 0; pos < header_end; ++pos) {
    for (const unsigned char c :
         {0x00, 0x01, 0x20, 0x22, 0x2C, 0x30, 0x39, 0x5B, 0x5D, 0x7B, 0x7D, 0x80, 0xFF}) {
      if (static_cast<unsigned char>(bytes[pos]) == c) continue;
      INFO("byte " << pos << " set to " << static_cast<int>(c));
      patch_byte(bad, pos, static_cast<char>(c));
      try {
        const auto ts = io::load_safetensors(bad);
        ++accepted;  // e.g. a changed digit in a name: still a valid file
        for (const auto& [name, t] : ts) CHECK(t.defined());
      } catch (const Error&) {
        ++refused;
      }
      patch_byte(bad, pos, bytes[pos]);
    }
  }
  CHECK(read_bytes(bad) == bytes);
  CHECK(refused > 0);
  CHECK(accepted >= 0);
}

TEST_CASE("safetensors: malformed headers are refused with a reason", "[io]") {
  TempDir dir;
  const fs::path path = dir / "bad.safetensors";
  const std::string f32x2 = std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);
  const auto refuse = [&](const std::string& file, const std::string& why) {
    INFO(why);
    write_bytes(path, file);
    const std::string msg = load_error(path);
    CHECK_THAT(msg, Catch::Contains(why));
    CHECK_THAT(msg, Catch::Contains("bad.safetensors"));
  };
  const auto one = [&](const std::string& entry, const std::string& data, const std::string& why) {
    refuse(make_file(R"({"t":)" + entry + "}", data), why);
  };

  // Sanity: the well-formed version loads.
  write_bytes(path, make_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f32x2));
  CHECK(io::load_safetensors(path).size() == 1);

  CHECK_THAT(
      load_error(dir / "missing.safetensors"),
      Catch::Contains("No such file or directory") && Catch::Contains("missing.safetensors"));
  CHECK_THAT(load_error(dir.path), Catch::Contains("not a regular file"));
  refuse("", "too short");
  refuse(le64(100'000'001) + std::string(16, ' '), "larger than the limit");
  refuse(le64(~std::uint64_t{0}) + "{}", "larger than the limit");
  refuse(le64(64) + "{}      ", "runs past the end of the file");
  refuse(le64(0), "does not start with '{'");
  refuse(make_file(R"( {})", ""), "does not start with '{'");
  refuse(make_file(R"({"t":)", ""), "not valid JSON");
  refuse(make_file(R"({} {})", ""), "not valid JSON");
  refuse(make_file("{\"t\xff\":1}", ""), "not valid JSON");
  refuse(le64(8) + std::string("{}\0\0\0\0\0\0", 8), "not valid JSON");
  refuse(make_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                   R"("a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})",
                   ""),
         "repeats the key 'a'");
  refuse(make_file(R"({"__metadata__":[]})", ""), "__metadata__ is not a JSON object");
  refuse(make_file(R"({"__metadata__":{"k":1}})", ""), "value of 'k' is not a string");

  one("[]", "", "tensor 't': its entry is not a JSON object");
  one(R"({"shape":[2],"data_offsets":[0,8]})", f32x2, "missing or non-string \"dtype\"");
  one(R"({"dtype":"F32","data_offsets":[0,8]})", f32x2, "missing or non-array \"shape\"");
  one(R"({"dtype":"F32","shape":[2]})", f32x2, "missing or non-array \"data_offsets\"");
  one(R"({"dtype":"X9","shape":[2],"data_offsets":[0,8]})", f32x2, "unknown dtype X9");
  one(R"({"dtype":"I8","shape":[8],"data_offsets":[0,8]})", f32x2, "unsupported dtype I8");
  one(R"({"dtype":"U16","shape":[4],"data_offsets":[0,8]})", f32x2, "unsupported dtype U16");
  one(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})", f32x2, "non-negative integer");
  one(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})", f32x2, "non-negative integer");
  one(R"({"dtype":"F32","shape":[1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]})", f32x2,
      "exceeds ember's maximum rank");
  one(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})", f32x2,
      "too many elements");
  one(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})", f32x2,
      "hold 8 bytes, but shape [3] of F32 needs 12");
  one(R"({"dtype":"F64","shape":[2],"data_offsets":[0,8]})", f32x2, "needs 16");
  one(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})", f32x2, "end before they begin");
  one(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})", f32x2,
      "is not a pair of non-negative integers");
  one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,-8]})", f32x2,
      "is not a pair of non-negative integers");
  one(R"({"dtype":"F32","shape":[2],"data_offsets":[8,16]})", f32x2,
      "run past the end of the data buffer");
  one(R"({"dtype":"F32","shape":[2],"data_offsets":[18446744073709551608,0]})", f32x2,
      "end before they begin");
  one(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})", f32x2, "leave a gap of 4 bytes");
  one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})", f32x2, "4 bytes of trailing data");
  refuse(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                   f32x2),
         "overlap those of tensor 'a'");

  // Deeply nested JSON is refused without recursing through it.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  one(R"({"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,8]})", f32x2,
      "non-negative integer");
  one(R"({"dtype":"F32","shape":[2],"data_offsets":)" + deep + "}", f32x2,
      "is not a pair of non-negative integers");
  refuse(make_file(R"({"__metadata__":{"k":)" + deep + "}}", ""), "value of 'k' is not a string");

  // The reader takes any order of entries, and keys it does not know inside an entry.
  write_bytes(path, make_file(R"({"z":{"dtype":"U8","shape":[0],"data_offsets":[8,8]},)"
                              R"("y":{"data_offsets":[0,8],"shape":[2],"dtype":"F32","x":1}})",
                              f32x2));
  const auto ok = io::load_safetensors(path);
  REQUIRE(ok.size() == 2);
  CHECK(ok[0].first == "y");
  CHECK(ok[1].first == "z");

  // BOOL bytes other than 0 and 1 read as true.
  write_bytes(path, make_file(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                              std::string("\x00\x02\xff", 3)));
  CHECK(io::get_tensor<bool>(io::load_safetensors(path), "m").to_vector() ==
        std::vector<bool>{false, true, true});
}

TEST_CASE("safetensors: loading onto a CUDA device copies there, or says why it cannot", "[io]") {
  TempDir dir;
  const auto w = from_vector<float>({1, 2, 3}, {3});
  io::save_safetensors({{"w", w}}, dir / "w.safetensors");
  io::NamedTensors back;
  try {
    back = io::load_safetensors(dir / "w.safetensors", Device::cuda(0));
  } catch (const Error& e) {
    SUCCEED("no CUDA device: " << e.what());
    return;
  }
  REQUIRE(back.size() == 1);
  CHECK(back[0].second.device() == Device::cuda(0));
  CHECK(back[0].second.as<float>().to_vector() == std::vector<float>{1, 2, 3});

  // Saving from CUDA memory, through a transposed view, stores the row-major values.
  const Tensor<float> m = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}).to(Device::cuda(0)).t();
  io::save_safetensors({{"m", m}}, dir / "m.safetensors");
  const Tensor<float> loaded =
      io::get_tensor<float>(io::load_safetensors(dir / "m.safetensors"), "m");
  CHECK(loaded.shape() == Shape{3, 2});
  CHECK(loaded.to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});
}

namespace {
Tensor<float> filled(std::int64_t n, float value) {
  return from_vector<float>(std::vector<float>(static_cast<std::size_t>(n), value), {n});
}

bool all_equal(const Tensor<float>& t, float value) {
  const auto v = t.to_vector();
  return std::all_of(v.begin(), v.end(), [&](float x) { return x == value; });
}
}  // namespace

TEST_CASE("safetensors: a save that fails midway leaves the old file and no temporary", "[io]") {
  TempDir dir;
  const fs::path path = dir / "model.safetensors";
  io::save_safetensors({{"w", filled(1000, 1.0f)}}, path);
  const std::string before = read_bytes(path);
  const Tensor<float> big = filled(1 << 20, 2.0f);  // 4 MiB

  // The child may write files of at most 64 KiB: the write of the data fails with EFBIG after
  // the temporary file was created and partly written.
  const int rc = run_in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{1 << 16, 1 << 16};
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) return 10;
    try {
      io::save_safetensors({{"w", big}}, path);
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (msg.find("File too large") == std::string::npos) return 11;
      if (msg.find(".tmp.") == std::string::npos) return 12;
      return 0;
    }
    return 13;  // did not fail
  });
  CHECK(rc == 0);
  CHECK(read_bytes(path) == before);
  CHECK(all_equal(io::get_tensor<float>(io::load_safetensors(path), "w"), 1.0f));
  CHECK(dir.files() == std::vector<std::string>{"model.safetensors"});
}

TEST_CASE("safetensors: a save killed mid-write leaves the previous file loadable", "[io]") {
  TempDir dir;
  const fs::path path = dir / "model.safetensors";
  io::save_safetensors({{"w", filled(1000, 1.0f)}}, path);
  const std::string before = read_bytes(path);
  const Tensor<float> big = filled(1 << 22, 2.0f);  // 16 MiB

  SECTION("killed while it waits between the header and the data (test hook)") {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::setenv("EMBER_TEST_SAVE_DELAY_MS", "60000", 1);
      try {
        io::save_safetensors({{"w", big}}, path);
      } catch (...) {
      }
      ::_exit(0);
    }
    // Wait for the temporary file to appear (it holds the header by the time the child sleeps).
    bool seen = false;
    for (int i = 0; i < 2000 && !seen; ++i) {
      for (const auto& name : dir.files()) seen = seen || is_temp_name(name);
      if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(seen);
    CHECK(WIFSIGNALED(status));

    CHECK(read_bytes(path) == before);
    CHECK(all_equal(io::get_tensor<float>(io::load_safetensors(path), "w"), 1.0f));
    // The dead writer's temporary file stays behind (it is named after the target and the pid)
    // and disturbs nothing: the next save goes through.
    const auto files = dir.files();
    CHECK(files.size() == 2);
    CHECK(std::count_if(files.begin(), files.end(), is_temp_name) == 1);
    io::save_safetensors({{"w", big}}, path);
    CHECK(all_equal(io::get_tensor<float>(io::load_safetensors(path), "w"), 2.0f));
  }

  SECTION("killed at arbitrary moments: the file is always the old one or the new one") {
    int old_seen = 0, new_seen = 0;
    for (int delay_ms : {0, 1, 3, 6, 10, 20, 40, 80}) {
      io::save_safetensors({{"w", filled(1000, 1.0f)}}, path);
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        try {
          io::save_safetensors({{"w", big}}, path);
        } catch (...) {
        }
        ::_exit(0);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      ::kill(pid, SIGKILL);
      int status = 0;
      REQUIRE(::waitpid(pid, &status, 0) == pid);
      INFO("killed after " << delay_ms << " ms");
      const Tensor<float> w = io::get_tensor<float>(io::load_safetensors(path), "w");
      if (w.numel() == 1000) {
        CHECK(all_equal(w, 1.0f));
        ++old_seen;
      } else {
        CHECK(w.numel() == (1 << 22));
        CHECK(all_equal(w, 2.0f));
        ++new_seen;
      }
      for (const auto& name : dir.files()) {
        if (is_temp_name(name)) fs::remove(dir / name);
      }
    }
    CHECK(old_seen + new_seen == 8);
  }
}

TEST_CASE("io::remove_stale_temp_files removes what killed saves left, not live ones' files",
          "[io]") {
  TempDir dir;
  const fs::path target = dir.path / "ckpt.safetensors";
  // A process that has ended: its pid names no running process once it is reaped.
  const pid_t gone = ::fork();
  REQUIRE(gone >= 0);
  if (gone == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(gone, &status, 0) == gone);
  const auto touch = [&](const std::string& name) { std::ofstream(dir.path / name) << "x"; };
  const std::string dead = "ckpt.safetensors.tmp." + std::to_string(gone) + ".0";
  const std::string live = "ckpt.safetensors.tmp." + std::to_string(::getpid()) + ".3";
  touch(dead);
  touch(live);
  touch("ckpt.safetensors.tmp.notapid.0");     // not TempFile's name: kept
  touch("other.safetensors.tmp.999999999.0");  // another target's: kept
  REQUIRE(ember::io::remove_stale_temp_files(target) == 1);
  REQUIRE(!fs::exists(dir.path / dead));
  REQUIRE(fs::exists(dir.path / live));
  REQUIRE(fs::exists(dir.path / "ckpt.safetensors.tmp.notapid.0"));
  REQUIRE(fs::exists(dir.path / "other.safetensors.tmp.999999999.0"));
  REQUIRE(ember::io::remove_stale_temp_files(dir.path / "missing" / "x") == 0);  // no folder
}

}  // namespace test_io_safetensors
}  // namespace
