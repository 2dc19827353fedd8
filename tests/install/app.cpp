#include "app_main.hpp"

int main() { return consumer_main("consumer_app"); }
