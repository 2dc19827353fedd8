// BERT pretraining built by the host compiler: the CPU-only program (see pretrain_main.hpp).
#include "pretrain_main.hpp"

int main(int argc, char** argv) { return bert::main(argc, argv); }
