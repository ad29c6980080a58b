// -v and --log-level: what a simulation decided, logged on stderr through spdlog.
//
// The libraries log at two levels: info for what shapes a whole run (the compute calibration and
// its source, how a step was simulated, a sweep's pruning), debug for each decision inside it
// (every distinct collective's algorithm, the reason and the symmetry found). Off by default
// (level warn, which nothing logs at), so the output is what it was; logs go to stderr only,
// never into --json, --csv or a file.

#ifndef PODSIM_CLI_LOGGING_H_
#define PODSIM_CLI_LOGGING_H_

#include <string>

#include "sim/status.h"
#include "topology/chip_spec.h"

namespace CLI {
class App;
}

namespace podsim::cli {

struct LogFlags {
  int verbose = 0;    // -v: info, -vv: debug.
  std::string level;  // --log-level: trace, debug, info, warn, error or off.
};

// Registers -v/--verbose and --log-level on `app` (global: before or after the command).
void AddLogFlags(CLI::App& app, LogFlags* flags);

// Sets the level of podsim's stderr logger; InvalidArgument for an unknown --log-level or for
// both flags at once.
sim::Status ConfigureLogging(const LogFlags& flags);

// Logs, at info, the compute calibration family the chip's steps use and where it comes from.
void LogCalibration(const topology::ChipSpec& chip);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_LOGGING_H_
