#include "cli/run_command.h"

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <string>
#include <utility>

#include "scenario/scenario_file.h"

namespace podsim::cli {

namespace {

struct RunFlags {
  std::string file;
  bool json = false;
  std::string trace;
  bool dump = false;
};

// `status` with another message, same code.
sim::Status WithMessage(const sim::Status& status, std::string_view message) {
  switch (status.code()) {
    case sim::Status::Code::kNotFound:
      return sim::Status::NotFound(message);
    case sim::Status::Code::kParseError:
      return sim::Status::ParseError(message);
    case sim::Status::Code::kOutOfRange:
      return sim::Status::OutOfRange(message);
    case sim::Status::Code::kIoError:
      return sim::Status::IoError(message);
    case sim::Status::Code::kUsage:
      return sim::Status::Usage(message);
    default:
      return sim::Status::InvalidArgument(message);
  }
}

sim::Status Run(const RunFlags& flags, CommandIo& io) {
  PODSIM_ASSIGN_OR_RETURN(scenario::LoadedScenario loaded, scenario::LoadScenarioFile(flags.file));
  if (flags.json || !flags.trace.empty()) {
    // The flags override the file's outputs, and are checked as if the file said so (a trace of a
    // topology, JSON with CSV), their errors naming the flag.
    scenario::Outputs* outputs = loaded.scenario.mutable_outputs();
    if (flags.json) {
      outputs->set_json(true);
      loaded.source.AddFlag("outputs.json", "--json");
    }
    if (!flags.trace.empty()) {
      outputs->set_trace(flags.trace);
      loaded.source.AddFlag("outputs.trace", "--trace");
    }
    // The outputs changed, not the system: checked on the system the file's checks built.
    PODSIM_ASSIGN_OR_RETURN(loaded.system, scenario::CheckScenario(loaded.scenario, loaded.source,
                                                                   std::move(loaded.system)));
  }
  if (flags.dump) {
    io.out << scenario::DumpScenario(loaded.scenario);
    return sim::Status::Ok();
  }
  return RunScenario(loaded.scenario, loaded.source, std::move(loaded.system), io);
}

}  // namespace

Command AddRunCommand(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "Run a scenario file: one command written down (docs/scenario.md, scenario/examples/)");
  sub->add_option("SCENARIO", flags->file,
                  "FILE.textproto (protobuf text, scenario/scenario.proto)")
      ->required();
  sub->add_flag("--json", flags->json, "Print one JSON object (overrides outputs.json)");
  sub->add_option("--trace", flags->trace,
                  "Write a trace of the run: FILE.pftrace (Perfetto) or FILE.json (Chrome JSON); "
                  "overrides outputs.trace");
  sub->add_flag(
      "--dump-scenario", flags->dump,
      "Print the scenario in canonical form (with the flags above) instead of running it");
  return Command{sub, [flags](CommandIo& io) { return Run(*flags, io); }};
}

sim::Status RunScenario(const scenario::Scenario& scenario, const scenario::SourceMap& source,
                        topology::System system, CommandIo& io) {
  // One line per command: the command's file defines its runner (run_command.h).
  switch (scenario.command_case()) {
    case scenario::Scenario::kTopology:
      return RunTopologyScenario(scenario, source, std::move(system), io);
    case scenario::Scenario::kCollective:
      return RunCollectiveScenario(scenario, source, std::move(system), io);
    case scenario::Scenario::kTrain:
      return RunTrainScenario(scenario, source, std::move(system), io);
    case scenario::Scenario::kInfer:
      return RunInferScenario(scenario, source, std::move(system), io);
    case scenario::Scenario::kSweep:
      return RunSweepScenario(scenario, source, std::move(system), io);
    case scenario::Scenario::COMMAND_NOT_SET:
      break;
  }
  return source.Annotate(sim::Status::InvalidArgument(
                             "no command; give one of topology, collective, train, infer, sweep"),
                         "");
}

sim::Status DumpOrRun(const sim::StatusOr<scenario::Scenario>& scenario,
                      const scenario::SourceMap& flags, bool dump, CommandIo& io) {
  if (!scenario.ok()) return scenario.status();
  // Flags get the checks of a scenario file, named after the flags.
  PODSIM_ASSIGN_OR_RETURN(topology::System system, scenario::CheckScenario(*scenario, flags));
  if (!dump) return RunScenario(*scenario, flags, std::move(system), io);
  io.out << scenario::DumpScenario(*scenario);
  return sim::Status::Ok();
}

sim::Status FieldError(const sim::Status& status, const scenario::SourceMap& source,
                       std::string_view flag, std::string_view path) {
  if (status.ok() || source.filename().empty()) return status;
  std::string_view message = status.message();
  const std::string prefix = std::string(flag) + ": ";
  if (!flag.empty() && message.starts_with(prefix)) message.remove_prefix(prefix.size());
  return source.Annotate(WithMessage(status, message), path);
}

}  // namespace podsim::cli
