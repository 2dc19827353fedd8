// EXPECT: reductions of Vars need floating-point operands
#include <ember/ember.hpp>
int main() {
  ember::Var<int> x(ember::zeros<int>({3}));
  auto s = ember::sum(x * 2);
}
