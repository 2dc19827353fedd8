// Pack: a minimal host+device tuple for a node's child plans (std::tuple is host-only code).
#pragma once

#include <cstddef>
#include <utility>

#include "../core/config.hpp"

namespace ember::expr {

template <std::size_t I, class T>
struct PackElem {
  T value;
  PackElem() = default;
  EMBER_HD explicit PackElem(const T& v) : value(v) {}
};

template <class Seq, class... Ts>
struct PackImpl;

template <std::size_t... I, class... Ts>
struct PackImpl<std::index_sequence<I...>, Ts...> : PackElem<I, Ts>... {
  PackImpl() = default;
  EMBER_HD explicit PackImpl(const Ts&... v) : PackElem<I, Ts>(v)... {}
};

template <class... Ts>
struct Pack : PackImpl<std::index_sequence_for<Ts...>, Ts...> {
  Pack() = default;
  EMBER_HD explicit Pack(const Ts&... v) : PackImpl<std::index_sequence_for<Ts...>, Ts...>(v...) {}
};

template <std::size_t I, class T>
EMBER_HD EMBER_FORCEINLINE const T& get(const PackElem<I, T>& p) {
  return p.value;
}
template <std::size_t I, class T>
EMBER_HD EMBER_FORCEINLINE T& get(PackElem<I, T>& p) {
  return p.value;
}

}  // namespace ember::expr
