// How a podsim subcommand plugs into the command line.
//
// Each command file (topology_command.cc, collective_command.cc, ...) exposes one Add*Command
// function that registers its CLI11 subcommand with its flags and returns the Command: the
// subcommand plus the function that runs it once the flags are parsed. main_command.cc is the only
// place that lists the commands.

#ifndef PODSIM_CLI_COMMAND_H_
#define PODSIM_CLI_COMMAND_H_

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

namespace CLI {
class App;
}

namespace podsim::cli {

struct CommandIo {
  std::ostream& out;  // Results: the text report or the one JSON object of --json.
  std::ostream& err;  // Errors and warnings.
  // --max-transfers: the work bound of each simulation (collectives::kDefaultMaxTransfers).
  uint64_t max_transfers;
  // The command as typed, "podsim train --system ...", each argument quoted for a POSIX shell
  // where it needs it (reports show it).
  std::string command_line;
  // Warnings ("does not fit", ...), printed as "podsim: warning: ..." once the command has
  // succeeded: a command that fails after one (an output it cannot write) prints its error alone.
  std::vector<std::string> warnings;
};

struct Command {
  CLI::App* subcommand;
  // Runs the command; a non-OK Status becomes one line on stderr and exit code 1.
  std::function<sim::Status(CommandIo&)> run;
};

}  // namespace podsim::cli

#endif  // PODSIM_CLI_COMMAND_H_
