// A rank that stops taking part in the collectives, for ctest (tests/CMakeLists.txt runs it on
// 2 ranks and matches the output):
//   dist_fault hang   rank 1 waits for a message nobody sends: rank 0's barrier throws after the
//                     2 s timeout, rank 0 exits with status 3 and mpirun stops rank 1
//   dist_fault die    rank 1 exits at once without finalising: mpirun stops the job (or rank 0
//                     times out first)
// Either way the job ends, with a message naming what happened, instead of hanging.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <mpi.h>

#include <ember/dist/collectives.hpp>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  ember::dist::World world = ember::dist::init(argc, argv, ember::dist::Options{.timeout = 2s});
  const std::string mode = argc > 1 ? argv[1] : "";
  if (world.size() < 2 || (mode != "hang" && mode != "die")) {
    std::fprintf(stderr, "usage: mpirun -np 2 dist_fault hang|die\n");
    return 2;
  }
  if (world.rank() == 1) {
    if (mode == "die") std::_Exit(1);
    int never = 0;
    MPI_Recv(&never, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return 0;
  }
  try {
    ember::dist::barrier();
  } catch (const ember::Error& e) {
    std::printf("%s\n", e.what());
    std::fflush(stdout);
    return 3;
  }
  std::printf("rank 0: the barrier returned although rank 1 never joined it\n");
  return 1;
}
