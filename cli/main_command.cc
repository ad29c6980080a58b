#include "cli/main_command.h"

#include <google/protobuf/stubs/logging.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/argument_check.h"
#include "cli/collective_command.h"
#include "cli/command.h"
#include "cli/infer_command.h"
#include "cli/run_command.h"
#include "cli/sweep_command.h"
#include "cli/task_runner.h"
#include "cli/topology_command.h"
#include "cli/train_command.h"
#include "collectives/collective_runner.h"
#include "topology/names.h"

namespace podsim::cli {

int RunMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  // Errors reach the user as a Status, in one line; protobuf's own log lines would add others.
  google::protobuf::SetLogHandler(nullptr);
  if (sim::Status arguments = CheckArguments(argc, argv); !arguments.ok()) {
    if (!IsSecondaryRank()) err << "podsim: error: " << arguments.message() << "\n";
    return 1;
  }
  CLI::App app{"podsim: discrete-event simulator of accelerator pods"};
  app.set_version_flag("--version", "podsim 0.1.0");
  app.require_subcommand(0, 1);
  // Options of every command, given after the command's name (CLI11 fallthrough).
  app.fallthrough();
  // A flag given twice is an error, never silently the last one (subcommands inherit this).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  std::string max_transfers_text;
  app.add_option("--max-transfers", max_transfers_text,
                 "work bound of one simulation, in point-to-point transfers (default 5e6: "
                 "seconds and a few GB); raise it for larger exact runs, like 1e9");
  std::vector<Command> commands;
  // Commands register here, one line each.
  commands.push_back(AddTopologyCommand(app));
  commands.push_back(AddCollectiveCommand(app));
  commands.push_back(AddTrainCommand(app));
  commands.push_back(AddReplayCommand(app));
  commands.push_back(AddInferCommand(app));
  commands.push_back(AddSweepCommand(app));
  commands.push_back(AddRunCommand(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Under mpirun every rank parses the same line; rank 0 alone answers.
    std::ostringstream silent;
    const bool shown = !IsSecondaryRank();
    return app.exit(e, shown ? out : silent, shown ? err : silent) == 0 ? 0 : 2;
  }
  uint64_t max_transfers = collectives::kDefaultMaxTransfers;
  if (!max_transfers_text.empty()) {
    const std::optional<double> limit = topology::ParseNumber(max_transfers_text);
    if (!limit || !(*limit >= 1 && *limit <= 1e15)) {
      err << "podsim: error: --max-transfers: expected a number of transfers from 1 to 1e15, "
             "like 1e8 (got '"
          << max_transfers_text << "')\n";
      return 1;
    }
    max_transfers = static_cast<uint64_t>(*limit);
  }
  CommandIo io{out, err, max_transfers};
  auto parsed = std::find_if(commands.begin(), commands.end(),
                             [](const Command& c) { return c.subcommand->parsed(); });
  // Only sweeps (and scenario files, which may hold one) share their work over MPI ranks; any
  // other command would run, and print, once per rank.
  if (LaunchedRanks() > 1 &&
      (parsed == commands.end() ||
       (parsed->subcommand->get_name() != "sweep" && parsed->subcommand->get_name() != "run"))) {
    if (!IsSecondaryRank()) {
      err << "podsim: error: started by mpirun with " << LaunchedRanks()
          << " ranks: only sweep spreads over MPI ranks; run this command without mpirun\n";
    }
    return 1;
  }
  sim::Status status = parsed == commands.end() ? RunDefaultScenario(io) : parsed->run(io);
  if (status.ok()) return 0;
  // The MPI ranks of a sweep fail alike; rank 0 says why.
  if (!IsSecondaryRank()) err << "podsim: error: " << status.message() << "\n";
  return 1;
}

}  // namespace podsim::cli
