// GPT-2 pretraining built by nvcc: the same program as train.cpp, able to train on the GPU.
#include "train_main.hpp"

int main(int argc, char** argv) { return gpt2::main(argc, argv); }
