// podsim collective --system S --op OP --bytes N [--axes x,y] [--algorithm A] [--src C --dst C]
//                   [--sweep-bytes] [--json]
// Simulates one collective (or a sweep of sizes) and prints its time, algorithm bandwidth and bus
// bandwidth (nccl-tests definitions).

#ifndef PODSIM_CLI_COLLECTIVE_COMMAND_H_
#define PODSIM_CLI_COLLECTIVE_COMMAND_H_

#include "cli/command.h"

namespace podsim::cli {

Command AddCollectiveCommand(CLI::App& app);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_COLLECTIVE_COMMAND_H_
