// BERT's pretraining data, the cache file, its keys and cached_instances: the definitions of
// instance_cache.hpp, which says what each function does. Compiled once into bert_pretraining_data
// (pretraining.cmake).
#include "instance_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <system_error>

#include <ember/core/error.hpp>
#include <ember/io/temp_file.hpp>

namespace bert {

namespace detail::pt {

namespace {

static_assert(std::endian::native == std::endian::little,
              "bert: the pretraining cache format is little-endian; this host is not");

std::string errno_text(int err) { return std::system_category().message(err); }

/// The int32 count of one record.
std::size_t record_words(std::int64_t seq_len, std::int64_t max_predictions) {
  return static_cast<std::size_t>(3 + 2 * seq_len + 2 * max_predictions);
}

/// Checks one instance against the format's rules; `what` names it in the message.
template <class Where>
void check_instance(const std::int32_t* len_k_r, const std::int32_t* ids, const std::int32_t* types,
                    const std::int32_t* pos, const std::int32_t* mids, std::int64_t S,
                    std::int64_t P, bool padded, const Where& where) {
  const std::int64_t L = len_k_r[0], K = len_k_r[1], R = len_k_r[2];
  EMBER_CHECK(L >= 3 && L <= S, where(), ": length ", L, " is not in [3, seq_len = ", S, "]");
  EMBER_CHECK(K >= 0 && K <= P, where(), ": ", K,
              " masked positions, not in [0, max_predictions = ", P, "]");
  EMBER_CHECK(R == 0 || R == 1, where(), ": random_next is ", R, ", not 0 or 1");
  // Types: 0 ... 0 1 ... 1, starting with 0 and ending with 1.
  EMBER_CHECK(types[0] == 0 && types[L - 1] == 1, where(),
              ": token_type_ids must start with 0 and end with 1");
  for (std::int64_t i = 0; i < L; ++i) {
    EMBER_CHECK(ids[i] >= 0, where(), ": input id ", ids[i], " at ", i, " is negative");
    EMBER_CHECK((types[i] == 0 || types[i] == 1) && (i == 0 || types[i] >= types[i - 1]), where(),
                ": token_type_ids are not 0...0 1...1");
  }
  for (std::int64_t k = 0; k < K; ++k) {
    EMBER_CHECK(pos[k] > 0 && pos[k] < L - 1 && (k == 0 || pos[k] > pos[k - 1]), where(),
                ": masked positions are not ascending inside the sequence");
    EMBER_CHECK(mids[k] >= 0, where(), ": masked id ", mids[k], " is negative");
  }
  if (padded) {
    for (std::int64_t i = L; i < S; ++i) {
      EMBER_CHECK(ids[i] == 0 && types[i] == 0, where(), ": padding after length ", L,
                  " is not zero");
    }
    for (std::int64_t k = K; k < P; ++k) {
      EMBER_CHECK(pos[k] == 0 && mids[k] == 0, where(), ": padding after ", K,
                  " masked positions is not zero");
    }
  }
}

void put_u32(unsigned char* p, std::uint32_t v) { std::memcpy(p, &v, 4); }

void put_u64(unsigned char* p, std::uint64_t v) { std::memcpy(p, &v, 8); }

std::uint32_t get_u32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::uint64_t get_u64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

}  // namespace detail::pt

void save_instances(const std::filesystem::path& path, const std::vector<Instance>& instances,
                    const PretrainingOptions& options, std::uint64_t key) {
  const std::int64_t S = options.seq_len, P = options.max_predictions;
  EMBER_CHECK(S >= 3 && P >= 0 && P <= S, "bert: save_instances: '", path.string(), "': seq_len ",
              S, " and max_predictions ", P, " are invalid");
  const std::size_t words = detail::pt::record_words(S, P);
  ember::io::TempFile tmp(path, "bert: save_instances");
  std::vector<std::int32_t> buf;
  constexpr std::size_t kFlushWords = 1 << 20;
  buf.reserve(kFlushWords + words);
  off_t offset = kCacheHeaderBytes;
  std::uint32_t crc = static_cast<std::uint32_t>(::crc32(0L, Z_NULL, 0));
  auto flush = [&] {
    const std::size_t bytes = buf.size() * 4;
    const auto* p = reinterpret_cast<const unsigned char*>(buf.data());
    for (std::size_t done = 0; done < bytes;) {
      const auto chunk = static_cast<uInt>(std::min<std::size_t>(bytes - done, 1u << 30));
      crc = static_cast<std::uint32_t>(::crc32(crc, p + done, chunk));
      done += chunk;
    }
    tmp.write_at(buf.data(), bytes, offset);
    offset += static_cast<off_t>(bytes);
    buf.clear();
  };
  for (std::size_t n = 0; n < instances.size(); ++n) {
    const Instance& in = instances[n];
    auto where = [&] {
      return ember::detail::concat("bert: save_instances: '", path.string(), "': instance ", n);
    };
    const std::int64_t L = static_cast<std::int64_t>(in.input_ids.size());
    const std::int64_t K = static_cast<std::int64_t>(in.masked_positions.size());
    EMBER_CHECK(L >= 3 && L <= S && in.token_type_ids.size() == in.input_ids.size(), where(), ": ",
                L, " input ids and ", in.token_type_ids.size(),
                " token types (need equal counts in [3, seq_len = ", S, "])");
    EMBER_CHECK(K <= P && in.masked_ids.size() == in.masked_positions.size(), where(), ": ", K,
                " masked positions and ", in.masked_ids.size(),
                " masked ids (need equal counts, at most max_predictions = ", P, ")");
    const std::size_t at = buf.size();
    buf.resize(at + words, 0);
    std::int32_t* r = buf.data() + at;
    r[0] = static_cast<std::int32_t>(L);
    r[1] = static_cast<std::int32_t>(K);
    r[2] = in.random_next ? 1 : 0;
    std::copy(in.input_ids.begin(), in.input_ids.end(), r + 3);
    std::copy(in.token_type_ids.begin(), in.token_type_ids.end(), r + 3 + S);
    std::copy(in.masked_positions.begin(), in.masked_positions.end(), r + 3 + 2 * S);
    std::copy(in.masked_ids.begin(), in.masked_ids.end(), r + 3 + 2 * S + P);
    detail::pt::check_instance(r, r + 3, r + 3 + S, r + 3 + 2 * S, r + 3 + 2 * S + P, S, P, false,
                               where);
    if (buf.size() >= kFlushWords) flush();
  }
  flush();
  unsigned char header[kCacheHeaderBytes] = {};
  std::memcpy(header, kCacheMagic, 8);
  detail::pt::put_u32(header + 8, kCacheVersion);
  detail::pt::put_u32(header + 12, kCacheHeaderBytes);
  detail::pt::put_u64(header + 16, static_cast<std::uint64_t>(S));
  detail::pt::put_u64(header + 24, static_cast<std::uint64_t>(P));
  detail::pt::put_u64(header + 32, instances.size());
  detail::pt::put_u64(header + 40, key);
  detail::pt::put_u32(header + 48, crc);
  tmp.write_at(header, sizeof header, 0);
  tmp.commit(path);
}

std::vector<Instance> load_instances(const std::filesystem::path& path, CacheHeader* header) {
  const std::string where = ember::detail::concat("bert: load_instances: '", path.string(), "'");
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) ember::fail(where, ": cannot open the file: ", detail::pt::errno_text(errno));
  std::vector<unsigned char> data;
  {
    struct stat st {};
    const int rc = ::fstat(fd, &st);
    if (rc == 0) data.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (rc == 0 && got < data.size()) {
      const ssize_t r =
          ::read(fd, data.data() + got, std::min<std::size_t>(data.size() - got, 1u << 30));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    const int err = errno;
    ::close(fd);
    EMBER_CHECK(rc == 0 && got == data.size(), where,
                ": cannot read the file: ", detail::pt::errno_text(err));
  }
  EMBER_CHECK(data.size() >= 8 && std::memcmp(data.data(), kCacheMagic, 8) == 0, where,
              ": not a BERT pretraining cache (the file does not start with \"EMBERBPT\")");
  EMBER_CHECK(data.size() >= kCacheHeaderBytes, where, ": truncated: ", data.size(),
              " bytes, less than the ", kCacheHeaderBytes, "-byte header");
  const unsigned char* h = data.data();
  const std::uint32_t version = detail::pt::get_u32(h + 8);
  EMBER_CHECK(version == kCacheVersion, where, ": format version ", version,
              ", this reader knows version ", kCacheVersion, " (rebuild the cache)");
  EMBER_CHECK(detail::pt::get_u32(h + 12) == kCacheHeaderBytes, where, ": header size ",
              detail::pt::get_u32(h + 12), ", expected ", kCacheHeaderBytes);
  CacheHeader hd;
  hd.seq_len = static_cast<std::int64_t>(detail::pt::get_u64(h + 16));
  hd.max_predictions = static_cast<std::int64_t>(detail::pt::get_u64(h + 24));
  hd.count = static_cast<std::int64_t>(detail::pt::get_u64(h + 32));
  hd.key = detail::pt::get_u64(h + 40);
  const std::int64_t S = hd.seq_len, P = hd.max_predictions;
  EMBER_CHECK(S >= 3 && S <= (1 << 20) && P >= 0 && P <= S, where, ": seq_len ", S,
              " and max_predictions ", P, " are invalid");
  const std::size_t record_bytes = detail::pt::record_words(S, P) * 4;
  EMBER_CHECK(hd.count >= 0 && static_cast<std::uint64_t>(hd.count) <=
                                   (data.size() - kCacheHeaderBytes) / record_bytes,
              where, ": truncated: the header announces ", hd.count, " instances of ", record_bytes,
              " bytes, the file holds ", data.size() - kCacheHeaderBytes,
              " bytes after the header");
  const std::size_t payload = static_cast<std::size_t>(hd.count) * record_bytes;
  EMBER_CHECK(data.size() - kCacheHeaderBytes == payload, where, ": ",
              data.size() - kCacheHeaderBytes - payload,
              " bytes of trailing data after the last instance");
  std::uint32_t crc = static_cast<std::uint32_t>(::crc32(0L, Z_NULL, 0));
  for (std::size_t done = 0; done < payload;) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(payload - done, 1u << 30));
    crc = static_cast<std::uint32_t>(::crc32(crc, data.data() + kCacheHeaderBytes + done, chunk));
    done += chunk;
  }
  EMBER_CHECK(crc == detail::pt::get_u32(h + 48), where,
              ": the CRC-32 of the instances does not match the header's (the file is corrupt)");

  std::vector<Instance> out(static_cast<std::size_t>(hd.count));
  std::vector<std::int32_t> rec(detail::pt::record_words(S, P));
  for (std::size_t n = 0; n < out.size(); ++n) {
    std::memcpy(rec.data(), data.data() + kCacheHeaderBytes + n * record_bytes, record_bytes);
    const std::int32_t* r = rec.data();
    detail::pt::check_instance(r, r + 3, r + 3 + S, r + 3 + 2 * S, r + 3 + 2 * S + P, S, P, true,
                               [&] { return ember::detail::concat(where, ": instance ", n); });
    Instance& in = out[n];
    const std::size_t L = static_cast<std::size_t>(r[0]), K = static_cast<std::size_t>(r[1]);
    in.random_next = r[2] != 0;
    in.input_ids.assign(r + 3, r + 3 + L);
    in.token_type_ids.assign(r + 3 + S, r + 3 + S + L);
    in.masked_positions.assign(r + 3 + 2 * S, r + 3 + 2 * S + K);
    in.masked_ids.assign(r + 3 + 2 * S + P, r + 3 + 2 * S + P + K);
  }
  if (header) *header = hd;
  return out;
}

namespace detail::pt {

namespace {

struct Fnv {
  std::uint64_t h = 0xcbf29ce484222325ull;
  void bytes(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 0x100000001b3ull;
  }
  void str(std::string_view s) {
    num(s.size());
    bytes(s.data(), s.size());
  }
  template <class T>
  void num(T v) {
    bytes(&v, sizeof v);
  }
};

}  // namespace

}  // namespace detail::pt

std::string corpus_identity(std::span<const std::filesystem::path> files, std::string_view extra) {
  std::string id(extra);
  for (const std::filesystem::path& f : files) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(f, ec);
    const auto size = std::filesystem::file_size(f, ec);
    EMBER_CHECK(!ec, "bert: corpus_identity: '", f.string(), "': ", ec.message());
    const auto mtime = std::filesystem::last_write_time(f, ec).time_since_epoch().count();
    EMBER_CHECK(!ec, "bert: corpus_identity: '", f.string(), "': ", ec.message());
    id += ember::detail::concat("\n", abs.string(), "\t", size, "\t", mtime);
  }
  return id;
}

std::uint64_t cache_key(std::string_view corpus, const ember::data::WordPieceTokenizer& tok,
                        const PretrainingOptions& o) {
  detail::pt::Fnv f;
  f.str(kDataVersion);
  f.str(corpus);
  f.num(tok.vocab_size());
  for (std::int64_t i = 0; i < tok.vocab_size(); ++i) f.str(tok.token(i));
  f.num(tok.options().lower_case);
  f.num(tok.options().max_input_chars_per_word);
  f.str(tok.options().unk);
  f.num(o.seq_len);
  f.num(o.max_predictions);
  f.num(o.masked_lm_prob);
  f.num(o.short_seq_prob);
  f.num(o.random_next_prob);
  f.num(o.dupe_factor);
  f.num(o.seed);
  return f.h;
}

std::vector<Instance> cached_instances(const std::filesystem::path& cache_dir,
                                       std::string_view corpus,
                                       const ember::data::WordPieceTokenizer& tok,
                                       const PretrainingOptions& options,
                                       const std::function<std::vector<Document>()>& read_corpus,
                                       CacheInfo* info) {
  const std::uint64_t key = cache_key(corpus, tok, options);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "bert_pretraining_0000000000000000.bpt";
  for (int i = 0; i < 16; ++i) name[17 + i] = kHex[(key >> (60 - 4 * i)) & 15];
  const std::filesystem::path file = cache_dir / name;
  CacheInfo local;
  CacheInfo& inf = info ? *info : local;
  inf = {};
  inf.file = file;
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) {
    try {
      CacheHeader h;
      std::vector<Instance> out = load_instances(file, &h);
      EMBER_CHECK(h.key == key && h.seq_len == options.seq_len &&
                      h.max_predictions == options.max_predictions,
                  "bert: cached_instances: '", file.string(),
                  "' was written for other data or options");
      inf.loaded = true;
      return out;
    } catch (const ember::Error& e) {
      inf.rebuilt_because = e.what();
    }
  }
  std::filesystem::create_directories(cache_dir, ec);
  EMBER_CHECK(!ec, "bert: cached_instances: cannot create '", cache_dir.string(),
              "': ", ec.message());
  std::vector<Instance> out = create_instances(read_corpus(), tok, options);
  save_instances(file, out, options, key);
  return out;
}

}  // namespace bert
