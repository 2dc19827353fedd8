// PyTorch as the oracle: reads the cases tests/reference/make_torch_cases.py wrote
// (tests/reference/data/<group>.safetensors), runs each on ember, and compares every output and
// every input's gradient with PyTorch's, within the case's tolerance (from the dtype).
//
// A test file gives the operators: `Outputs run(Call<T>&)` for a group, which builds ember's call
// from the case's inputs and options. Call<T> hands out the inputs (as PyTorch's leaves: the
// stored tensor, viewed as the case says, a parameter when it takes a gradient) and the options.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <ember/ember.hpp>
#include <ember/io/safetensors.hpp>
#include <nlohmann/json.hpp>

namespace ember::testing::torch_oracle {

using json = nlohmann::json;

/// One group's file: its tensors by name and its list of cases.
struct Group {
  std::map<std::string, AnyTensor> tensors;
  json cases;

  const AnyTensor& tensor(const std::string& name) const {
    const auto it = tensors.find(name);
    if (it == tensors.end()) fail("torch_oracle: no tensor named '", name, "' in the fixture");
    return it->second;
  }
};

inline const Group& load_group(const std::string& group) {
  static std::map<std::string, Group> loaded;
  const auto it = loaded.find(group);
  if (it != loaded.end()) return it->second;
  const std::filesystem::path file =
      std::filesystem::path(__FILE__).parent_path() / "data" / (group + ".safetensors");
  Group g;
  for (auto& [name, t] : io::load_safetensors(file)) g.tensors.emplace(name, std::move(t));
  g.cases = json::parse(io::read_safetensors_metadata(file).at("cases"));
  return loaded.emplace(group, std::move(g)).first->second;
}

/// A tensor's elements as doubles, in logical (row-major) order.
struct Values {
  Shape shape;
  std::vector<double> v;
};
template <class T>
Values values_of(const Tensor<T>& t) {
  Values r{t.shape(), {}};
  for (const T x : t.contiguous().to_vector()) r.v.push_back(static_cast<double>(x));
  return r;
}
inline Values values_of(const AnyTensor& t) {
  return t.visit([](const auto& x) { return values_of(x); });
}

/// Machine epsilon (the spacing at 1) of a case's dtype.
inline double eps_of(const std::string& dtype) {
  if (dtype == "f64") return std::numeric_limits<double>::epsilon();
  if (dtype == "f32") return std::numeric_limits<float>::epsilon();
  return 1.0 / 128;  // bf16: 8 significant bits
}
/// The spacing of the dtype's values at |x| (at least the spacing at the smallest normal).
inline double ulp_of(double x, const std::string& dtype) {
  const double tiny = dtype == "f64"   ? std::numeric_limits<double>::min()
                      : dtype == "f32" ? std::numeric_limits<float>::min()
                                       : std::numeric_limits<float>::min();
  const double a = std::max(std::fabs(x), tiny);
  return std::ldexp(eps_of(dtype), std::ilogb(a));
}

/// The largest finite magnitude among `v`'s elements.
inline double largest(const Values& v) {
  double m = 0;
  for (const double x : v.v) {
    if (std::isfinite(x)) m = std::max(m, std::fabs(x));
  }
  return m;
}

/// Empty when `got` matches `want` within `tol` (["exact"], ["ulp", k], ["norm", c]: c eps times
/// the largest of want's magnitudes and `floor`); else why not.
inline std::string compare(const Values& got, const Values& want, const json& tol,
                           const std::string& dtype, double floor = 0) {
  std::ostringstream why;
  if (got.shape != want.shape) {
    why << "shape " << got.shape.str() << ", PyTorch's " << want.shape.str();
    return why.str();
  }
  const std::string kind = tol.at(0);
  const double scale = std::max(largest(want), floor);
  std::size_t worst = 0, bad = 0;
  double worst_excess = 0;
  for (std::size_t i = 0; i < want.v.size(); ++i) {
    const double g = got.v[i], w = want.v[i];
    bool ok;
    double allowed = 0;
    if (std::isnan(w) || std::isnan(g)) {
      ok = std::isnan(w) && std::isnan(g);
    } else if (std::isinf(w) || std::isinf(g)) {
      ok = g == w;
    } else {
      if (kind == "exact") allowed = 0;
      if (kind == "ulp") allowed = tol.at(1).get<double>() * ulp_of(w, dtype);
      if (kind == "norm") allowed = tol.at(1).get<double>() * eps_of(dtype) * scale;
      ok = std::fabs(g - w) <= allowed;
    }
    if (!ok) {
      const double excess = std::isfinite(g - w) ? std::fabs(g - w) - allowed
                                                 : std::numeric_limits<double>::infinity();
      if (bad == 0 || excess > worst_excess) worst = i, worst_excess = excess;
      ++bad;
    }
  }
  if (bad == 0) return {};
  why.precision(17);
  why << bad << " of " << want.v.size() << " elements differ beyond " << tol.dump()
      << "; worst at flat index " << worst << ": ember " << got.v[worst] << ", PyTorch "
      << want.v[worst];
  return why.str();
}

/// The case being run, for a group's `run` function: its inputs and options.
template <class T>
class Call {
 public:
  Call(const Group& group, const json& c) : group_(group), case_(c) {
    leaves_.resize(c.at("inputs").size());
  }

  const std::string& op() const { return case_.at("op").template get_ref<const std::string&>(); }
  const json& args() const { return case_.at("args"); }
  template <class V>
  V arg(const char* name) const {
    return args().at(name).template get<V>();
  }
  /// A number that may be "inf" (JSON has no infinity).
  double number(const char* name) const {
    const json& v = args().at(name);
    if (v.is_string()) {
      if (v == "inf") return std::numeric_limits<double>::infinity();
      fail("torch_oracle: '", name, "' is ", v.dump());
    }
    return v.template get<double>();
  }
  template <class V>
  V arg(const char* name, V otherwise) const {
    return args().contains(name) ? args().at(name).template get<V>() : otherwise;
  }
  bool has(const char* name) const { return args().contains(name); }
  std::size_t inputs() const { return case_.at("inputs").size(); }

  /// Input i as PyTorch's leaf: the stored tensor seen through the case's view, a parameter when
  /// it takes a gradient (the same Var on every call).
  Var<T> var(std::size_t i) {
    if (leaves_[i].defined()) return leaves_[i];
    // A copy of a dense input: an operator that writes its input in place (embedding's
    // max_norm) must not change the fixture.
    const json& v = case_.at("inputs")[i].at("view");
    const Tensor<T> t = v.is_null() ? tensor<T>(i).clone() : tensor<T>(i);
    leaves_[i] = case_.at("inputs")[i].at("grad").template get<bool>() ? param(t) : Var<T>(t);
    return leaves_[i];
  }
  /// Input i (any element type) with its view, not recorded.
  template <class U>
  Tensor<U> tensor(std::size_t i) const {
    const std::string name =
        case_.at("name").template get<std::string>() + "/in" + std::to_string(i);
    return view(group_.tensor(name).template as<U>(name), case_.at("inputs")[i].at("view"));
  }
  Tensor<std::int64_t> ids(std::size_t i) const { return tensor<std::int64_t>(i); }
  Tensor<bool> mask(std::size_t i) const { return tensor<bool>(i); }

  /// The leaves made so far (undefined where an input was not taken as a Var).
  const std::vector<Var<T>>& leaves() const { return leaves_; }

 private:
  template <class U>
  static Tensor<U> view(const Tensor<U>& t, const json& v) {
    if (v.is_null()) return t;
    if (v.contains("permute"))
      return t.permute(Dims(v.at("permute").template get<std::vector<std::int64_t>>()));
    if (v.contains("slice")) {
      const auto s = v.at("slice").template get<std::vector<std::int64_t>>();
      return t.slice(static_cast<int>(s[0]), s[1], s[2], s[3]);
    }
    if (v.value("channels_last", false)) return t.contiguous(MemoryFormat::channels_last);
    fail("torch_oracle: unknown view ", v.dump());
  }

  const Group& group_;
  const json& case_;
  std::vector<Var<T>> leaves_;
};

/// What an operator returned: each output as a tensor of any type, and the recorded Var of each
/// floating output (undefined for outputs without a gradient).
template <class T>
struct Outputs {
  std::vector<AnyTensor> values;
  std::vector<Var<T>> vars;

  Outputs() = default;
  Outputs(Var<T> v) { add(std::move(v)); }  // NOLINT(google-explicit-constructor)
  template <class U>
  Outputs(Tensor<U> t) {  // NOLINT(google-explicit-constructor)
    add(std::move(t));
  }
  void add(Var<T> v) {
    values.emplace_back(v.value());
    vars.push_back(std::move(v));
  }
  template <class U>
  void add(Tensor<U> t) {
    values.emplace_back(std::move(t));
    vars.emplace_back();
  }
};

/// A difference from PyTorch that ember keeps on purpose: the cases whose names match `pattern`
/// (a regular expression) must still differ (so this list cannot go stale), for the reason given
/// (also in docs/operators.md).
struct KeptDifference {
  std::string pattern, reason;
};

/// The fixtures' name of T.
template <class T>
std::string dtype_code() {
  if constexpr (std::is_same_v<T, double>) return "f64";
  if constexpr (std::is_same_v<T, float>) return "f32";
  if constexpr (std::is_same_v<T, bf16>) return "bf16";
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, float> || std::is_same_v<T, bf16>,
                "torch_oracle: the fixtures hold float64, float32 and bf16 cases");
}

/// Runs every case of `group` in T's dtype through `run` and checks outputs and gradients.
template <class T, class Run>
void check_group(const std::string& group, Run run, const std::vector<KeptDifference>& kept = {}) {
  const std::string dtype = dtype_code<T>();
  const Group& g = load_group(group);
  int ran = 0;
  for (const json& c : g.cases) {
    if (c.at("dtype") != dtype) continue;
    const std::string name = c.at("name");
    const KeptDifference* keep = nullptr;
    for (const KeptDifference& k : kept) {
      if (std::regex_match(name, std::regex(k.pattern))) keep = &k;
    }
    std::vector<std::string> failures;
    try {
      Call<T> call(g, c);
      Outputs<T> out = run(call);
      const std::size_t n = c.at("outputs");
      if (out.values.size() != n) {
        failures.push_back("ember gave " + std::to_string(out.values.size()) +
                           " outputs, PyTorch " + std::to_string(n));
      } else {
        for (std::size_t k = 0; k < n; ++k) {
          const std::string why = compare(values_of(out.values[k]),
                                          values_of(g.tensor(name + "/out" + std::to_string(k))),
                                          c.at("tol").at("out"), dtype);
          if (!why.empty()) failures.push_back("output " + std::to_string(k) + ": " + why);
        }
        const std::vector<std::size_t> seeds = c.at("seeds");
        double seed_scale = 0;
        for (const std::size_t k : seeds) {
          const Tensor<T> seed =
              g.tensor(name + "/seed" + std::to_string(k)).template as<T>(name + " seed");
          seed_scale = std::max(seed_scale, largest(values_of(seed)));
          if (!out.vars[k].defined()) {
            failures.push_back("output " + std::to_string(k) + " is not recorded (no gradient)");
            continue;
          }
          out.vars[k].backward(seed, /*retain_graph=*/true);
        }
        const std::vector<std::size_t> grads = c.at("grads");
        for (const std::size_t i : grads) {
          const Values want = values_of(g.tensor(name + "/grad" + std::to_string(i)));
          const Var<T>& leaf = call.leaves()[i];
          Values got;
          if (leaf.defined() && leaf.grad().defined()) {
            got = values_of(leaf.grad());
          } else {
            got = {want.shape, std::vector<double>(want.v.size(), 0.0)};
          }
          const std::string why = compare(got, want, c.at("tol").at("grad"), dtype, seed_scale);
          if (!why.empty())
            failures.push_back("gradient of input " + std::to_string(i) + ": " + why);
        }
      }
    } catch (const std::exception& e) {
      failures.push_back(std::string("threw: ") + e.what());
    }
    ++ran;
    if (keep != nullptr) {
      if (failures.empty()) {
        FAIL_CHECK(name << ": listed as a kept difference (" << keep->reason
                        << ") but now agrees with PyTorch: take it off the list");
      }
      continue;
    }
    for (const std::string& f : failures) FAIL_CHECK(name << ": " << f);
  }
  INFO(group << " " << dtype);
  CHECK(ran > 0);
}

}  // namespace ember::testing::torch_oracle
