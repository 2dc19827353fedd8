// GPT-2 pretraining built by the host compiler: the CPU-only program (see train_main.hpp).
#include "train_main.hpp"

int main(int argc, char** argv) { return gpt2::main(argc, argv); }
