// A function of ember's that forgets the rule for the two kinds of translation unit
// (core/config.hpp): it evaluates an expression but sits outside the kind's namespace, so a
// host-compiled and an nvcc-compiled copy would share one symbol. Never linked into a program;
// the test check_unit_kinds_catches shows that scripts/check_unit_kinds.py reports it.
#include <ember/ember.hpp>

namespace ember::forgotten {

template <FloatingElement T>
Tensor<T> doubled_outside_the_kind(const Tensor<T>& x) {
  return Tensor<T>(x * 2.0);
}
template Tensor<float> doubled_outside_the_kind<float>(const Tensor<float>&);

}  // namespace ember::forgotten
