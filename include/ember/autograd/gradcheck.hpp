// gradcheck: the analytic gradient of f (from backward) against float64 central differences.
//
//   auto r = ember::gradcheck([](const std::vector<ember::Var<double>>& x) {
//     return ember::Var<double>(ember::tanh(x[0] * x[1]));
//   }, {a, b});
//   REQUIRE(r);   // on failure Catch prints r: the worst element and both gradients
//
// f maps Vars to a Var of any shape. The check backpropagates a fixed pseudo-random seed r
// (so every output element matters) and compares with (S(x + eps) - S(x - eps)) / 2eps where
// S(x) = sum(r * f(x)), one input element at a time.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "var.hpp"

namespace ember {

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;
  double max_rel_error = 0;
  // The worst element (largest error relative to its tolerance).
  int input = -1;
  std::int64_t element = -1;
  double analytic = 0, numeric = 0;
  std::int64_t checked = 0;
  double atol = 0, rtol = 0;
  std::string note;

  explicit operator bool() const { return ok; }
  std::string report() const {
    std::ostringstream os;
    os << (ok ? "gradcheck passed" : "gradcheck FAILED") << ": " << checked
       << " elements, max abs error " << max_abs_error << ", max rel error " << max_rel_error
       << " (atol " << atol << ", rtol " << rtol << ")";
    if (input >= 0) {
      os << "; worst: input " << input << " element " << element << " analytic " << analytic
         << " numeric " << numeric;
    }
    if (!note.empty()) os << "; " << note;
    return os.str();
  }
  friend std::ostream& operator<<(std::ostream& os, const GradcheckResult& r) {
    return os << r.report();
  }
};

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

namespace detail {
/// The fixed pseudo-random seed of a gradcheck: m values in [0.5, 1.5) with alternating signs.
inline std::vector<double> gradcheck_seed(std::int64_t m) {
  std::vector<double> r(static_cast<std::size_t>(m));
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (std::int64_t i = 0; i < m; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 11) * 0x1.0p-53;
    r[static_cast<std::size_t>(i)] = (i % 2 ? -1.0 : 1.0) * (0.5 + u);
  }
  return r;
}

/// Folds one element's analytic and numeric gradients into the result, keeping the worst
/// element (the largest error relative to its tolerance).
class GradcheckTally {
 public:
  explicit GradcheckTally(GradcheckResult& res) : res_(res) {}
  void add(int input, std::int64_t element, double analytic, double numeric) {
    const double err = std::fabs(analytic - numeric);
    const double tol = res_.atol + res_.rtol * std::fabs(numeric);
    res_.max_abs_error = std::max(res_.max_abs_error, err);
    res_.max_rel_error = std::max(res_.max_rel_error, err / std::max(std::fabs(numeric), 1e-300));
    if (!(err <= tol)) res_.ok = false;
    const double ratio = std::isnan(err) ? 1e300 : err / tol;
    if (ratio > worst_ratio_) {
      worst_ratio_ = ratio;
      res_.input = input;
      res_.element = element;
      res_.analytic = analytic;
      res_.numeric = numeric;
    }
    ++res_.checked;
  }

 private:
  GradcheckResult& res_;
  double worst_ratio_ = -1;
};
}  // namespace detail

template <class F>
GradcheckResult gradcheck(F&& f, const std::vector<Tensor<double>>& inputs,
                          const GradcheckOptions& opt = {}) {
  GradcheckResult res;
  res.atol = opt.atol;
  res.rtol = opt.rtol;
  std::vector<Var<double>> xs;
  for (const auto& t : inputs) xs.push_back(param(t.to(Device::cpu()).clone()));

  Var<double> y = f(xs);
  const std::vector<double> r = detail::gradcheck_seed(y.value().numel());
  if (!y.requires_grad()) {
    res.note = "the output does not require grad; every analytic gradient is zero";
  } else {
    y.backward(from_vector<double>(r, y.shape()));
  }
  auto objective = [&] {
    no_grad guard;
    Var<double> z = f(xs);
    const std::vector<double> v = z.value().to_vector();
    double s = 0;
    for (std::size_t i = 0; i < v.size(); ++i) s += r[i] * v[i];
    return s;
  };

  detail::GradcheckTally tally(res);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Tensor<double>& x = xs[i].value();
    const std::vector<double> g =
        xs[i].grad().defined() ? xs[i].grad().to_vector()
                               : std::vector<double>(static_cast<std::size_t>(x.numel()), 0.0);
    double* p = x.data();
    for (std::int64_t j = 0; j < x.numel(); ++j) {
      const double old = p[j];
      p[j] = old + opt.eps;
      const double up = objective();
      p[j] = old - opt.eps;
      const double down = objective();
      p[j] = old;
      tally.add(static_cast<int>(i), j, g[static_cast<std::size_t>(j)],
                (up - down) / (2 * opt.eps));
    }
  }
  return res;
}

}  // namespace ember
