// Reading the ONNX backend test data that Debian's libonnx-testdata ships
// (/usr/include/onnx/backend/test/data/node/<test>/): model.onnx (one node, whose attributes we
// read) and test_data_set_0/{input,output}_N.pb (TensorProto). A minimal protobuf wire-format
// reader, enough for these files: no dependency on protobuf itself.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ember/ember.hpp>

namespace ember::testing::onnx {

inline const std::filesystem::path kNodeTests = "/usr/include/onnx/backend/test/data/node";

/// One field of a protobuf message: its number, wire type, and value (varint, fixed, or bytes).
struct Field {
  int number = 0;
  int wire = 0;
  std::uint64_t varint = 0;  // wire 0, and the bits of wire 1 and 5
  std::string_view bytes;    // wire 2
};

/// The varint at msg[p], advancing p.
inline std::uint64_t read_varint(std::string_view msg, std::size_t& p) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= msg.size()) throw std::runtime_error("onnx: truncated varint");
    const auto b = static_cast<std::uint8_t>(msg[p++]);
    v |= std::uint64_t{b & 0x7Fu} << shift;
    if (!(b & 0x80u)) return v;
  }
  throw std::runtime_error("onnx: varint too long");
}

/// The fields of one message, in order.
inline std::vector<Field> fields(std::string_view msg) {
  std::vector<Field> out;
  std::size_t p = 0;
  auto read_varint = [&] { return onnx::read_varint(msg, p); };
  while (p < msg.size()) {
    const std::uint64_t key = read_varint();
    Field f;
    f.number = static_cast<int>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) {
      f.varint = read_varint();
    } else if (f.wire == 1 || f.wire == 5) {
      const std::size_t n = f.wire == 1 ? 8 : 4;
      if (p + n > msg.size()) throw std::runtime_error("onnx: truncated fixed field");
      std::memcpy(&f.varint, msg.data() + p, n);
      p += n;
    } else if (f.wire == 2) {
      const std::uint64_t n = read_varint();
      if (p + n > msg.size()) throw std::runtime_error("onnx: truncated bytes field");
      f.bytes = msg.substr(p, n);
      p += n;
    } else {
      throw std::runtime_error("onnx: unsupported wire type");
    }
    out.push_back(f);
  }
  return out;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("onnx: cannot open " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// A TensorProto of floats, doubles or int64s, as doubles.
struct TensorData {
  std::vector<std::int64_t> dims;
  std::vector<double> values;
};

/// The data as an ember tensor of element type T (values converted from the stored doubles).
template <class T>
Tensor<T> to_tensor(const TensorData& d) {
  Shape s;
  for (auto e : d.dims) s.push_back(e);
  std::vector<T> v;
  v.reserve(d.values.size());
  for (double x : d.values) v.push_back(static_cast<T>(x));
  return from_vector<T>(v, s);
}

inline TensorData read_tensor(const std::filesystem::path& path) {
  const std::string buf = read_file(path);
  TensorData t;
  int type = 0;
  std::string_view raw;
  std::vector<double> listed;
  for (const Field& f : fields(buf)) {
    if (f.number == 1) {  // dims: packed or not
      if (f.wire == 0) {
        t.dims.push_back(static_cast<std::int64_t>(f.varint));
      } else {
        std::size_t p = 0;
        while (p < f.bytes.size())
          t.dims.push_back(static_cast<std::int64_t>(read_varint(f.bytes, p)));
      }
    } else if (f.number == 2) {
      type = static_cast<int>(f.varint);
    } else if (f.number == 9) {
      raw = f.bytes;
    } else if (f.number == 4 && f.wire == 2) {  // packed float_data
      for (std::size_t i = 0; i + 4 <= f.bytes.size(); i += 4) {
        float v;
        std::memcpy(&v, f.bytes.data() + i, 4);
        listed.push_back(v);
      }
    } else if (f.number == 5 && f.wire == 2) {  // packed int32_data (varints)
      std::size_t p = 0;
      while (p < f.bytes.size()) {
        listed.push_back(static_cast<double>(static_cast<std::int32_t>(read_varint(f.bytes, p))));
      }
    } else if (f.number == 7 && f.wire == 2) {  // packed int64_data
      std::size_t p = 0;
      while (p < f.bytes.size()) {
        listed.push_back(static_cast<double>(static_cast<std::int64_t>(read_varint(f.bytes, p))));
      }
    } else if (f.number == 10 && f.wire == 2) {  // packed double_data
      for (std::size_t i = 0; i + 8 <= f.bytes.size(); i += 8) {
        double v;
        std::memcpy(&v, f.bytes.data() + i, 8);
        listed.push_back(v);
      }
    }
  }
  if (!raw.empty()) {
    if (type == 1) {  // FLOAT
      for (std::size_t i = 0; i + 4 <= raw.size(); i += 4) {
        float v;
        std::memcpy(&v, raw.data() + i, 4);
        t.values.push_back(v);
      }
    } else if (type == 6) {  // INT32
      for (std::size_t i = 0; i + 4 <= raw.size(); i += 4) {
        std::int32_t v;
        std::memcpy(&v, raw.data() + i, 4);
        t.values.push_back(static_cast<double>(v));
      }
    } else if (type == 7) {  // INT64
      for (std::size_t i = 0; i + 8 <= raw.size(); i += 8) {
        std::int64_t v;
        std::memcpy(&v, raw.data() + i, 8);
        t.values.push_back(static_cast<double>(v));
      }
    } else if (type == 11) {  // DOUBLE
      for (std::size_t i = 0; i + 8 <= raw.size(); i += 8) {
        double v;
        std::memcpy(&v, raw.data() + i, 8);
        t.values.push_back(v);
      }
    } else {
      throw std::runtime_error("onnx: unsupported tensor data type " + std::to_string(type));
    }
  } else {
    t.values = listed;
  }
  return t;
}

/// The float, int, int-list and string attributes of the single node of model.onnx
/// (ModelProto.graph.node).
struct Attributes {
  std::map<std::string, double> f;
  std::map<std::string, std::int64_t> i;
  std::map<std::string, std::vector<std::int64_t>> ints;
  std::map<std::string, std::string> s;
  std::string get_string(const std::string& name, const std::string& fallback) const {
    auto it = s.find(name);
    return it == s.end() ? fallback : it->second;
  }
  double get(const std::string& name, double fallback) const {
    if (auto it = f.find(name); it != f.end()) return it->second;
    if (auto it = i.find(name); it != i.end()) return static_cast<double>(it->second);
    return fallback;
  }
  std::vector<std::int64_t> get_ints(const std::string& name,
                                     const std::vector<std::int64_t>& fallback) const {
    auto it = ints.find(name);
    return it == ints.end() ? fallback : it->second;
  }
};

inline Attributes read_attributes(const std::filesystem::path& model) {
  const std::string buf = read_file(model);
  Attributes a;
  for (const Field& g : fields(buf)) {
    if (g.number != 7 || g.wire != 2) continue;  // ModelProto.graph
    for (const Field& n : fields(g.bytes)) {
      if (n.number != 1 || n.wire != 2) continue;  // GraphProto.node
      for (const Field& at : fields(n.bytes)) {
        if (at.number != 5 || at.wire != 2) continue;  // NodeProto.attribute
        std::string name;
        bool has_f = false, has_i = false, has_ints = false;
        float fv = 0;
        std::int64_t iv = 0;
        std::vector<std::int64_t> list;
        for (const Field& x : fields(at.bytes)) {
          if (x.number == 1) name = std::string(x.bytes);
          if (x.number == 2 && x.wire == 5) {
            std::uint32_t bits = static_cast<std::uint32_t>(x.varint);
            std::memcpy(&fv, &bits, 4);
            has_f = true;
          }
          if (x.number == 3 && x.wire == 0) {
            iv = static_cast<std::int64_t>(x.varint);
            has_i = true;
          }
          if (x.number == 4 && x.wire == 2) a.s[name] = std::string(x.bytes);
          if (x.number == 8 && x.wire == 0) {  // AttributeProto.ints, one value per field
            list.push_back(static_cast<std::int64_t>(x.varint));
            has_ints = true;
          }
          if (x.number == 8 && x.wire == 2) {  // AttributeProto.ints, packed
            std::size_t p = 0;
            while (p < x.bytes.size()) {
              list.push_back(static_cast<std::int64_t>(read_varint(x.bytes, p)));
            }
            has_ints = true;
          }
        }
        if (has_f) a.f[name] = fv;
        if (has_i) a.i[name] = iv;
        if (has_ints) a.ints[name] = list;
      }
    }
  }
  return a;
}

/// The inputs and expected outputs of one node test (test_data_set_0).
struct NodeTest {
  Attributes attributes;
  std::vector<TensorData> inputs, outputs;
};

inline bool available(const std::string& test) {
  return std::filesystem::exists(kNodeTests / test / "model.onnx");
}

inline NodeTest read_node_test(const std::string& test) {
  const auto dir = kNodeTests / test;
  NodeTest t;
  t.attributes = read_attributes(dir / "model.onnx");
  for (int k = 0;; ++k) {
    const auto p = dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb");
    if (!std::filesystem::exists(p)) break;
    t.inputs.push_back(read_tensor(p));
  }
  for (int k = 0;; ++k) {
    const auto p = dir / "test_data_set_0" / ("output_" + std::to_string(k) + ".pb");
    if (!std::filesystem::exists(p)) break;
    t.outputs.push_back(read_tensor(p));
  }
  return t;
}

}  // namespace ember::testing::onnx
