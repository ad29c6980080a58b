// `podsim train`: one training step of a model on a system under a layout (design.md), and
// `podsim replay`: one step of a schedule file (workloads/schedule.proto).

#ifndef PODSIM_CLI_TRAIN_COMMAND_H_
#define PODSIM_CLI_TRAIN_COMMAND_H_

#include "cli/command.h"

namespace podsim::cli {

Command AddTrainCommand(CLI::App& app);
Command AddReplayCommand(CLI::App& app);

// The default scenario of a bare `podsim`: a training step of llama3-8b on a 256-chip v5e pod
// (FSDP over all chips, full recomputation so that it fits).
sim::Status RunDefaultScenario(CommandIo& io);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_TRAIN_COMMAND_H_
