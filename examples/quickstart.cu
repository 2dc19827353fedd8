// The quickstart built by nvcc (CUDA builds): evaluates on the GPU when one is present.
// Same program as quickstart.cpp; the body is quickstart_main.hpp.
#include "quickstart_main.hpp"

int main(int argc, char** argv) { return quickstart::run(argc, argv); }
