#ifndef PODSIM_CLI_LIST_COMMAND_H_
#define PODSIM_CLI_LIST_COMMAND_H_

#include "cli/command.h"

namespace podsim::cli {

// Registers `podsim list [models|chips|systems|algorithms] [--json]`: the presets and forms the
// other commands accept, each with its figures and the source they come from (all four when no
// kind is named). --json prints one object keyed by kind.
Command AddListCommand(CLI::App& app);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_LIST_COMMAND_H_
