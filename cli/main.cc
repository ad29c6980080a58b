#include <iostream>

#include "cli/main_command.h"

int main(int argc, char** argv) { return podsim::cli::RunMain(argc, argv, std::cout, std::cerr); }
