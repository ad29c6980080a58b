#include "cli/main_command.h"

#include <google/protobuf/stubs/logging.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/argument_check.h"
#include "cli/collective_command.h"
#include "cli/command.h"
#include "cli/flag_spelling.h"
#include "cli/infer_command.h"
#include "cli/list_command.h"
#include "cli/logging.h"
#include "cli/run_command.h"
#include "cli/sweep_command.h"
#include "cli/task_runner.h"
#include "cli/topology_command.h"
#include "cli/train_command.h"
#include "collectives/collective_runner.h"
#include "topology/names.h"

namespace podsim::cli {

namespace {

// `podsim help [COMMAND]`: the help of one command, or of podsim.
Command AddHelpCommand(CLI::App& app) {
  auto topic = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("help", "Print the flags of a command: podsim help train");
  sub->add_option("COMMAND", *topic, "the command to describe (default: podsim itself)");
  return Command{
      sub, [&app, topic](CommandIo& io) -> sim::Status {
        if (topic->empty()) {
          // App::help() would describe the selected subcommand, `help` itself.
          io.out << app.get_formatter()->make_help(&app, "podsim", CLI::AppFormatMode::Normal);
          return sim::Status::Ok();
        }
        std::vector<std::string> names;
        for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; })) {
          if (c->get_name() == *topic) {
            io.out << c->help("podsim");
            return sim::Status::Ok();
          }
          names.push_back(c->get_name());
        }
        const std::vector<std::string_view> views(names.begin(), names.end());
        return sim::Status::Usage("help: unknown command '" + *topic + "'" +
                                  topology::DidYouMean(*topic, views));
      }};
}

// argv as a POSIX shell line: an argument with anything but [A-Za-z0-9_./:=,+@%^-] is
// single-quoted.
std::string CommandLine(int argc, const char* const* argv) {
  std::string line = "podsim";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                           "0123456789_./:=,+@%^-") == std::string_view::npos;
    line += ' ';
    if (plain) {
      line += arg;
      continue;
    }
    line += '\'';
    for (char c : arg) {
      if (c == '\'') {
        line += "'\\''";
      } else {
        line += c;
      }
    }
    line += '\'';
  }
  return line;
}

// Writes "podsim: error: MESSAGE" and its newline in one write: under mpirun the ranks' and the
// launcher's stderr share a terminal, and a line written piece by piece (std::cerr is
// unbuffered) can be cut by another process's lines.
void PrintError(std::ostream& err, const std::string& message) {
  err << ("podsim: error: " + message + "\n") << std::flush;
}

}  // namespace

int RunMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  // Errors reach the user as a Status, in one line; protobuf's own log lines would add others.
  google::protobuf::SetLogHandler(nullptr);
  if (sim::Status arguments = CheckArguments(argc, argv); !arguments.ok()) {
    if (!IsSecondaryRank()) PrintError(err, std::string(arguments.message()));
    return 1;
  }
  CLI::App app{"podsim: discrete-event simulator of accelerator pods", "podsim"};
  app.set_version_flag("--version", "podsim 0.1.0");
  app.require_subcommand(0, 1);
  // Options of every command, given after the command's name (CLI11 fallthrough).
  app.fallthrough();
  // A flag given twice is an error, never silently the last one (subcommands inherit this).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  std::string max_transfers_text;
  app.add_option("--max-transfers", max_transfers_text,
                 "work bound of one simulation, in point-to-point transfers (default 5e6: "
                 "seconds and a few GB; a replayed collective counts one, and in a traced step "
                 "each change of link usage it echoes to the trace one more); raise it for "
                 "larger exact runs, like 1e9");
  LogFlags log_flags;
  AddLogFlags(app, &log_flags);
  std::vector<Command> commands;
  // Commands register here, one line each.
  commands.push_back(AddTopologyCommand(app));
  commands.push_back(AddCollectiveCommand(app));
  commands.push_back(AddTrainCommand(app));
  commands.push_back(AddReplayCommand(app));
  commands.push_back(AddInferCommand(app));
  commands.push_back(AddSweepCommand(app));
  commands.push_back(AddRunCommand(app));
  commands.push_back(AddListCommand(app));
  commands.push_back(AddHelpCommand(app));
  app.footer(
      "podsim help COMMAND prints the flags of one command; podsim list shows the model presets,\n"
      "chips, system forms and collective algorithms with their sources.\n"
      "Sizes: K, M, G, T are powers of 1000 and Ki, Mi, Gi, Ti powers of 1024, for tokens and\n"
      "bytes alike: 4M is 4,000,000 tokens, 4Mi is 4,194,304; bytes may end in B (64MiB, "
      "1.5GB).\n");

  // A misspelled flag or command is a usage error (exit 2), as CLI11's own are.
  if (sim::Status spelling = CheckSpelling(app, argc, argv); !spelling.ok()) {
    if (!IsSecondaryRank()) PrintError(err, std::string(spelling.message()));
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Under mpirun every rank parses the same line; rank 0 alone answers.
    std::ostringstream silent;
    const bool shown = !IsSecondaryRank();
    // --help and --version print what they print; usage errors are one podsim error line.
    if (e.get_exit_code() == 0) return app.exit(e, shown ? out : silent, shown ? err : silent);
    std::string help = "podsim --help";
    for (const Command& c : commands) {
      if (c.subcommand->parsed()) help = "podsim help " + c.subcommand->get_name();
    }
    PrintError(shown ? err : silent, std::string(e.what()) + "; " + help + " lists the flags");
    return 2;
  }
  uint64_t max_transfers = collectives::kDefaultMaxTransfers;
  if (!max_transfers_text.empty()) {
    const std::optional<double> limit = topology::ParseNumber(max_transfers_text);
    if (!limit || !(*limit >= 1 && *limit <= 1e15)) {
      PrintError(err,
                 "--max-transfers: expected a number of transfers from 1 to 1e15, like 1e8 (got '" +
                     max_transfers_text + "')");
      return 1;
    }
    max_transfers = static_cast<uint64_t>(*limit);
  }
  if (sim::Status logging = ConfigureLogging(log_flags); !logging.ok()) {
    if (!IsSecondaryRank()) PrintError(err, std::string(logging.message()));
    return 1;
  }
  CommandIo io{out, err, max_transfers, CommandLine(argc, argv), {}};
  auto parsed = std::find_if(commands.begin(), commands.end(),
                             [](const Command& c) { return c.subcommand->parsed(); });
  // Only sweeps (and scenario files, which may hold one) share their work over MPI ranks; any
  // other command would run, and print, once per rank.
  if (LaunchedRanks() > 1 &&
      (parsed == commands.end() ||
       (parsed->subcommand->get_name() != "sweep" && parsed->subcommand->get_name() != "run"))) {
    if (!IsSecondaryRank()) {
      PrintError(err, "started by mpirun with " + std::to_string(LaunchedRanks()) +
                          " ranks: only sweep spreads over MPI ranks; run this command without "
                          "mpirun");
    }
    return 1;
  }
  sim::Status status = parsed == commands.end() ? RunDefaultScenario(io) : parsed->run(io);
  if (status.ok()) {
    if (!IsSecondaryRank()) {
      for (const std::string& warning : io.warnings) err << "podsim: warning: " << warning << "\n";
    }
    return 0;
  }
  // The MPI ranks of a sweep fail alike; rank 0 says why.
  if (!IsSecondaryRank()) PrintError(err, std::string(status.message()));
  return status.code() == sim::Status::Code::kUsage ? 2 : 1;
}

}  // namespace podsim::cli
