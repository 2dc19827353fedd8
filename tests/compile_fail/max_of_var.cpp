// EXPECT: max over Vars has no backward rule yet
#include <ember/ember.hpp>
int main() {
  auto x = ember::param(ember::zeros<float>({3}));
  auto m = ember::max(x * 2);
}
