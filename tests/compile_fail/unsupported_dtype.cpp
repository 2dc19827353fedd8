// EXPECT: constraints not satisfied|Storable
#include <ember/ember.hpp>
int main() { auto a = ember::zeros<long double>({3}); }
