// The ResNet trainer built by nvcc: the same program as train.cpp, able to train on the GPU.
#include "train_main.hpp"

int main(int argc, char** argv) { return resnet::main(argc, argv); }
