// The Catch2 main of the dist tests: the World first, then every test on every rank. ctest runs
// each test executable plainly (a world of one without MPI) and under mpirun on 2 and 3 ranks.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include <ember/dist/world.hpp>

int main(int argc, char* argv[]) {
  ember::dist::World world = ember::dist::init(argc, argv);
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  std::printf("ember dist tests: rank %d of %d (%s)\n", world.rank(), world.size(),
              world.uses_mpi() ? "MPI" : "no MPI");
  std::fflush(stdout);
  return session.run();
}
