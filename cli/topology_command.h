// podsim topology SYSTEM [--json] [--dot]: describes a system's chips and fabric.

#ifndef PODSIM_CLI_TOPOLOGY_COMMAND_H_
#define PODSIM_CLI_TOPOLOGY_COMMAND_H_

#include "cli/command.h"

namespace podsim::cli {

// Registers the `topology` subcommand. Its report lists chips, switches, NICs, hosts and links
// (by kind), per-axis wraparound (tori), node structure (GPUs), diameter, bisection bandwidth and
// per-chip injection bandwidth; --json prints them as one JSON object, --dot writes the fabric as
// a Graphviz graph instead.
Command AddTopologyCommand(CLI::App& app);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_TOPOLOGY_COMMAND_H_
