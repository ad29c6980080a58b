// `podsim sweep`: the valid layouts of a model on a system, ranked by simulated step time
// (design.md "Command line"; workloads/layout_search.h says which layouts).

#ifndef PODSIM_CLI_SWEEP_COMMAND_H_
#define PODSIM_CLI_SWEEP_COMMAND_H_

#include "cli/command.h"

namespace podsim::cli {

Command AddSweepCommand(CLI::App& app);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_SWEEP_COMMAND_H_
