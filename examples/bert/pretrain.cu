// BERT pretraining built by nvcc: the same program as pretrain.cpp, able to train on the GPU.
#include "pretrain_main.hpp"

int main(int argc, char** argv) { return bert::main(argc, argv); }
