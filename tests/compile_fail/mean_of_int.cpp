// EXPECT: defined for floating-point expressions only
#include <ember/ember.hpp>
int main() {
  auto a = ember::zeros<std::int64_t>({3});
  auto m = ember::mean(a);
}
