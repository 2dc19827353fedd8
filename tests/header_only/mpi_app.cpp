// A data-parallel program built header-only by MPI's own compiler (mpicxx mpi_app.cpp), with no
// CMake and no macro: ember sees <mpi.h> and uses MPI. Run on two ranks it prints each rank's
// sum of (rank + 1) over the ranks.
#include <cstdio>

#include <ember/dist/dist.hpp>
#include <ember/ember.hpp>

int main(int argc, char** argv) {
  ember::dist::World world = ember::dist::init(argc, argv);
  ember::Tensor<float> t = ember::full<float>(ember::Shape{4}, world.rank() + 1.0);
  ember::dist::all_reduce(t);
  std::printf("rank %d of %d: %g\n", world.rank(), world.size(), t.to_vector()[0]);
}
