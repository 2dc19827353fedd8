// The quickstart built by the host compiler (CPU-only builds). Same program as quickstart.cu.
#include "quickstart_main.hpp"

int main(int argc, char** argv) { return quickstart::run(argc, argv); }
