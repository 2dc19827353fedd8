// Device: where a tensor's memory lives (the host, or CUDA device i).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace ember {

class Device {
 public:
  enum class Kind : std::uint8_t { cpu, cuda };

  constexpr Device() = default;
  static constexpr Device cpu() { return Device(Kind::cpu, 0); }
  static constexpr Device cuda(int index = 0) { return Device(Kind::cuda, index); }

  constexpr Kind kind() const { return kind_; }
  constexpr int index() const { return index_; }
  constexpr bool is_cpu() const { return kind_ == Kind::cpu; }
  constexpr bool is_cuda() const { return kind_ == Kind::cuda; }

  friend constexpr bool operator==(Device a, Device b) {
    return a.kind_ == b.kind_ && a.index_ == b.index_;
  }

  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index_); }
  friend std::ostream& operator<<(std::ostream& os, Device d) { return os << d.str(); }

 private:
  constexpr Device(Kind k, int i) : kind_(k), index_(i) {}
  Kind kind_ = Kind::cpu;
  int index_ = 0;
};

}  // namespace ember
