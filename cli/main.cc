#include <iostream>

#include "cli/main_command.h"
#include "sim/atomic_file.h"
#include "sim/freed_memory.h"

int main(int argc, char** argv) {
  podsim::sim::KeepFreedMemory();
  podsim::sim::InstallInterruptCleanup();
  return podsim::cli::RunMain(argc, argv, std::cout, std::cerr);
}
