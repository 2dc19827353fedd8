// The ResNet trainer built by the host compiler (CPU only): see train_main.hpp.
#include "train_main.hpp"

int main(int argc, char** argv) { return resnet::main(argc, argv); }
