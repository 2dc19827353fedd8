// EXPECT: a floating-point expression cannot be stored in an integer or bool tensor
#include <ember/ember.hpp>
int main() {
  auto a = ember::zeros<float>({3});
  ember::Tensor<std::int32_t> y = a * 2;
}
