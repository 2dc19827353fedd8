// EXPECT: defined for floating-point operands only
#include <ember/ember.hpp>
int main() {
  auto a = ember::zeros<std::int32_t>({3});
  ember::Tensor<std::int32_t> y = ember::exp(a);
}
