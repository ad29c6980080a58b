// `podsim run SCENARIO.textproto [--json] [--trace FILE] [--dump-scenario]`: runs the command a
// scenario file holds (scenario/scenario.proto, docs/scenario.md).
//
// One path for flags and files. Each command turns its flags into a Scenario (the flags' errors
// name the flag) and runs it with RunScenario, as `podsim run` does with a loaded file; so a file
// and its equivalent flags print the same bytes. `--dump-scenario` on any command prints that
// Scenario instead of running it, and `podsim run` of what it prints gives the same result.

#ifndef PODSIM_CLI_RUN_COMMAND_H_
#define PODSIM_CLI_RUN_COMMAND_H_

#include <string_view>

#include "cli/command.h"
#include "scenario.pb.h"
#include "scenario/source_map.h"
#include "sim/status.h"
#include "topology/system.h"

namespace podsim::cli {

Command AddRunCommand(CLI::App& app);

// Runs `scenario`, which ValidateScenario accepts, on `system`, the one its checks built
// (scenario::CheckScenario). `source` says where each field was set: the file's positions for
// `podsim run`, the flags' names for a command (SourceMap::AddFlag), so that an error found while
// running names the position or the flag.
sim::Status RunScenario(const scenario::Scenario& scenario, const scenario::SourceMap& source,
                        topology::System system, CommandIo& io);

// What a command does once its flags are a Scenario: with `dump`, checks it as `podsim run` would
// (errors name the flags in `flags`) and prints DumpScenario; otherwise RunScenario. An error in
// `scenario` (a flag that did not parse) is returned as it is.
sim::Status DumpOrRun(const sim::StatusOr<scenario::Scenario>& scenario,
                      const scenario::SourceMap& flags, bool dump, CommandIo& io);

// The runner of each command, in its file (topology_command.cc, ...): RunScenario calls the one
// of the scenario's command. REQUIRES: the scenario holds that command.
sim::Status RunTopologyScenario(const scenario::Scenario& scenario,
                                const scenario::SourceMap& source, topology::System system,
                                CommandIo& io);
sim::Status RunCollectiveScenario(const scenario::Scenario& scenario,
                                  const scenario::SourceMap& source, topology::System system,
                                  CommandIo& io);
sim::Status RunTrainScenario(const scenario::Scenario& scenario, const scenario::SourceMap& source,
                             topology::System system, CommandIo& io);
sim::Status RunInferScenario(const scenario::Scenario& scenario, const scenario::SourceMap& source,
                             topology::System system, CommandIo& io);
sim::Status RunSweepScenario(const scenario::Scenario& scenario, const scenario::SourceMap& source,
                             topology::System system, CommandIo& io);

// An error the libraries word for the command line ("--algorithm: unknown algorithm 'x'"), about
// the scenario field at `path`. For a scenario from a file, the leading "<flag>: " gives way to the
// field's position and path ("run.textproto:6:3: collective.algorithm: unknown algorithm 'x'");
// for one from flags it stays as it is. OK stays OK.
sim::Status FieldError(const sim::Status& status, const scenario::SourceMap& source,
                       std::string_view flag, std::string_view path);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_RUN_COMMAND_H_
