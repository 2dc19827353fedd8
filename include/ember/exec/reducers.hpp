// Reducers: the algebra of each reduction. A reducer has a state, an identity (init), a step
// that folds in one value with its index within the reduced range, an associative combine of
// two partial states, and a finish that turns the state into the result. The CPU and CUDA
// reduction executors drive the same reducers. Every combine used across threads is also
// commutative (argmax breaks ties by the lower index), so any fixed tree gives one answer.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../core/config.hpp"
#include "../expr/math.hpp"

namespace ember::reduce {

template <class A>
struct Sum {
  static constexpr const char* name = "sum";
  using state = A;
  EMBER_HD static state init() { return A(0); }
  EMBER_HD static state step(state s, A v, std::int64_t) { return s + v; }
  EMBER_HD static state combine(state a, state b) { return a + b; }
  EMBER_HD static A finish(state s, std::int64_t) { return s; }
};

template <class A>
struct Mean {
  static constexpr const char* name = "mean";
  using state = A;
  EMBER_HD static state init() { return A(0); }
  EMBER_HD static state step(state s, A v, std::int64_t) { return s + v; }
  EMBER_HD static state combine(state a, state b) { return a + b; }
  EMBER_HD static A finish(state s, std::int64_t n) { return s / A(n); }
};

template <class A>
struct Prod {
  static constexpr const char* name = "prod";
  using state = A;
  EMBER_HD static state init() { return A(1); }
  EMBER_HD static state step(state s, A v, std::int64_t) { return s * v; }
  EMBER_HD static state combine(state a, state b) { return a * b; }
  EMBER_HD static A finish(state s, std::int64_t) { return s; }
};

// NaN wins, as in PyTorch.
template <class A>
struct Max {
  static constexpr const char* name = "max";
  using state = A;
  EMBER_HD static state init() { return math::lowest<A>(); }
  EMBER_HD static state step(state s, A v, std::int64_t) { return combine(s, v); }
  EMBER_HD static state combine(state a, state b) {
    // Bitwise, not short-circuit, logic: a single select the compiler can vectorise.
    const bool a_is_number = !math::isnan(a);
    const bool take_b = a_is_number & ((b > a) | math::isnan(b));
    return take_b ? b : a;
  }
  EMBER_HD static A finish(state s, std::int64_t) { return s; }
};

template <class A>
struct Min {
  static constexpr const char* name = "min";
  using state = A;
  EMBER_HD static state init() { return math::infinity<A>(); }
  EMBER_HD static state step(state s, A v, std::int64_t) { return combine(s, v); }
  EMBER_HD static state combine(state a, state b) {
    const bool a_is_number = !math::isnan(a);
    const bool take_b = a_is_number & ((b < a) | math::isnan(b));
    return take_b ? b : a;
  }
  EMBER_HD static A finish(state s, std::int64_t) { return s; }
};

template <class A>
struct ValueIndex {
  A value;
  std::int64_t index;
};

// Index of the largest value (first one on ties; a NaN counts as largest), as torch.argmax.
template <class A, bool Largest>
struct ArgBest {
  static constexpr const char* name = Largest ? "argmax" : "argmin";
  using state = ValueIndex<A>;
  EMBER_HD static state init() {
    return {Largest ? math::lowest<A>() : math::infinity<A>(), INT64_MAX};
  }
  EMBER_HD static state step(state s, A v, std::int64_t i) { return combine(s, state{v, i}); }
  EMBER_HD static state combine(state a, state b) {
    const bool an = math::isnan(a.value), bn = math::isnan(b.value);
    if (an || bn) {
      if (an && bn) return a.index <= b.index ? a : b;
      return an ? a : b;
    }
    const bool b_better = Largest ? b.value > a.value : b.value < a.value;
    if (b_better) return b;
    if (b.value == a.value && b.index < a.index) return b;
    return a;
  }
  EMBER_HD static std::int64_t finish(state s, std::int64_t) { return s.index; }
};

template <class A>
struct Welford {
  A count;
  A mean;
  A m2;
};

// Variance by Welford's update and Chan's combination: one pass, no catastrophic cancellation.
template <class A>
struct Var {
  static constexpr const char* name = "var";
  using state = Welford<A>;
  A correction = 1;  // 1: unbiased (PyTorch's default), 0: population variance
  EMBER_HD static state init() { return {A(0), A(0), A(0)}; }
  EMBER_HD static state step(state s, A v, std::int64_t) {
    s.count += A(1);
    const A d = v - s.mean;
    s.mean += d / s.count;
    s.m2 += d * (v - s.mean);
    return s;
  }
  EMBER_HD static state combine(state a, state b) {
    if (a.count == A(0)) return b;
    if (b.count == A(0)) return a;
    const A n = a.count + b.count;
    const A d = b.mean - a.mean;
    state r;
    r.count = n;
    r.mean = a.mean + d * (b.count / n);
    r.m2 = a.m2 + b.m2 + d * d * (a.count * b.count / n);
    return r;
  }
  EMBER_HD A finish_with(state s) const {
    const A dof = s.count - correction;
    return dof > A(0) ? s.m2 / dof : A(NAN);  // too few elements for the correction
  }
};

/// p-norm: (sum |x|^p)^(1/p); p = 2 and p = 1 take the short roads, p = inf is max |x|.
template <class A>
struct Norm {
  static constexpr const char* name = "norm";
  using state = A;
  A p = 2;
  EMBER_HD static state init() { return A(0); }
  EMBER_HD state step_with(state s, A v) const {
    const A a = math::fabs(v);
    if (p == A(2)) return s + a * a;
    if (p == A(1)) return s + a;
    if (p == math::infinity<A>()) return Max<A>::combine(s, a);
    return s + math::pow(a, p);
  }
  EMBER_HD state combine_with(state a, state b) const {
    return p == math::infinity<A>() ? Max<A>::combine(a, b) : a + b;
  }
  EMBER_HD A finish_with(state s) const {
    if (p == A(2)) return math::sqrt(s);
    if (p == A(1) || p == math::infinity<A>()) return s;
    return math::pow(s, A(1) / p);
  }
};

template <class A>
struct MaxSum {
  A max;
  A sum;  // sum of exp(x - max)
};

// log(sum(exp(x))) in one pass, rescaling the running sum when the maximum grows.
template <class A>
struct LogSumExp {
  static constexpr const char* name = "logsumexp";
  using state = MaxSum<A>;
  EMBER_HD static state init() { return {math::lowest<A>(), A(0)}; }
  EMBER_HD static state step(state s, A v, std::int64_t) { return combine(s, state{v, A(1)}); }
  EMBER_HD static state combine(state a, state b) {
    if (math::isnan(a.max) || math::isnan(b.max)) return {A(NAN), A(NAN)};
    if (b.max == math::lowest<A>()) return a;  // nothing, or only -inf, on one side
    if (a.max == math::lowest<A>()) return b;
    if (a.max == math::infinity<A>() || b.max == math::infinity<A>()) {
      return {math::infinity<A>(), A(1)};
    }
    if (a.max >= b.max) return {a.max, a.sum + b.sum * math::exp(b.max - a.max)};
    return {b.max, b.sum + a.sum * math::exp(a.max - b.max)};
  }
  EMBER_HD static A finish(state s, std::int64_t) {
    if (s.sum == A(0)) return math::lowest<A>();
    return s.max + math::log(s.sum);
  }
};

// Stateful reducers (var, norm) carry parameters; wrap the static ones so the executors can
// always call through an instance.
template <class R>
struct Bound {
  R r;
  using state = typename R::state;
  EMBER_HD state init() const { return R::init(); }
  EMBER_HD state step(state s, auto v, std::int64_t i) const {
    if constexpr (requires { r.step_with(s, v); }) {
      return r.step_with(s, v);
    } else {
      return R::step(s, v, i);
    }
  }
  EMBER_HD state combine(state a, state b) const {
    if constexpr (requires { r.combine_with(a, b); }) {
      return r.combine_with(a, b);
    } else {
      return R::combine(a, b);
    }
  }
  EMBER_HD auto finish(state s, std::int64_t n) const {
    if constexpr (requires { r.finish_with(s); }) {
      return r.finish_with(s);
    } else {
      return R::finish(s, n);
    }
  }
};

}  // namespace ember::reduce
