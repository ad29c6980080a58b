#include "cli/chakra_files.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "interop/chakra_export.h"
#include "interop/chakra_file.h"
#include "interop/comm_groups.h"
#include "sim/atomic_file.h"
#include "workloads/compute_model.h"

namespace podsim::cli {

namespace {

// Comm groups and rank maps larger than this are refused before they are read: 65,536 ranks
// (interop/chakra_file.h) take well under 1 MiB of JSON.
constexpr uintmax_t kMaxJsonBytes = uintmax_t{64} << 20;

sim::StatusOr<std::string> ReadText(const std::string& flag, const std::string& path) {
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (!error && size > kMaxJsonBytes) {
    return sim::Status::InvalidArgument(flag + ": " + path + ": larger than 64 MiB");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return sim::Status::IoError(flag + ": " + path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string GroupsFile(const std::string& prefix) { return prefix + ".comm_groups.json"; }

}  // namespace

void AddWriteChakraFlag(CLI::App* sub, std::string* prefix) {
  sub->add_option("--write-chakra", *prefix,
                  "Write the step as a Chakra execution trace for ASTRA-sim: PREFIX.<rank>.et for "
                  "every chip and PREFIX.comm_groups.json (docs/chakra.md)");
}

sim::Status CheckWriteChakra(const std::string& prefix) {
  return sim::CheckCreatable(GroupsFile(prefix)).WithContext("--write-chakra");
}

sim::StatusOr<std::string> WriteChakraFiles(const std::string& prefix,
                                            const topology::System& system,
                                            const schedule::Schedule& schedule) {
  sim::StatusOr<interop::ChakraExport> exported =
      interop::ExportChakra(system, schedule, workloads::DefaultComputeEfficiency(system.chip));
  if (!exported.ok()) return exported.status().WithContext("--write-chakra");
  PODSIM_RETURN_IF_ERROR(
      interop::WriteChakraTrace(prefix, exported->ranks,
                                {{GroupsFile(prefix), interop::CommGroupsJson(exported->groups)}})
          .WithContext("--write-chakra"));
  const size_t ranks = exported->ranks.size();
  return prefix + ".{0.." + std::to_string(ranks - 1) + "}.et and " + GroupsFile(prefix) + " (" +
         std::to_string(ranks) + " ranks, " + std::to_string(exported->groups.size()) +
         " process groups)";
}

void AddChakraReplayFlags(CLI::App* sub, ChakraReplayFlags* flags) {
  CLI::Option* chakra =
      sub->add_option("--chakra", flags->prefix,
                      "Replay a Chakra execution trace, PREFIX.0.et, PREFIX.1.et, ... (one per "
                      "rank, as ASTRA-sim takes them) instead of a schedule file");
  sub->add_option("--system", flags->system,
                  "SYSTEM to run the Chakra trace on (rank r on chip r unless --rank-map)")
      ->needs(chakra);
  sub->add_option("--comm-groups", flags->comm_groups,
                  "The trace's process groups, JSON {\"pg_name\": [ranks]} as ASTRA-sim's "
                  "--comm-group-configuration (default: PREFIX.comm_groups.json if it exists)")
      ->needs(chakra);
  sub->add_option("--rank-map", flags->rank_map,
                  "JSON array: the chip of each rank (default: rank r on chip r; unmapped chips "
                  "idle)")
      ->needs(chakra);
  sub->add_option("--chakra-compute", flags->compute,
                  "recorded (default: compute nodes take their recorded duration, the roofline "
                  "where none is recorded) or roofline (num_ops and tensor_size on this chip's "
                  "roofline wherever given)")
      ->needs(chakra);
  sub->add_flag("--chakra-ctrl-deps", flags->ctrl_deps,
                "Honour ctrl_deps as well as data_deps (off: the PyTorch converter puts the host "
                "op tree there)")
      ->needs(chakra);
}

sim::StatusOr<ChakraInput> ReadChakraInput(const ChakraReplayFlags& flags) {
  if (flags.system.empty()) {
    return sim::Status::InvalidArgument("--system: required with --chakra (the system to run on)");
  }
  interop::ChakraImportOptions options;
  options.ctrl_deps = flags.ctrl_deps;
  options.source = flags.prefix;
  if (flags.compute == "roofline") {
    options.compute = interop::ChakraCompute::kRoofline;
  } else if (flags.compute != "recorded") {
    return sim::Status::InvalidArgument("--chakra-compute: unknown value '" + flags.compute +
                                        "'; expected recorded or roofline");
  }
  PODSIM_ASSIGN_OR_RETURN(topology::System system, topology::ParseSystem(flags.system));
  sim::StatusOr<std::vector<interop::ChakraRankTrace>> ranks =
      interop::ReadChakraTrace(flags.prefix);
  if (!ranks.ok()) return ranks.status().WithContext("--chakra");
  std::string groups_path = flags.comm_groups;
  if (groups_path.empty() && std::filesystem::exists(GroupsFile(flags.prefix))) {
    groups_path = GroupsFile(flags.prefix);
  }
  interop::CommGroups groups;
  if (!groups_path.empty()) {
    PODSIM_ASSIGN_OR_RETURN(std::string text, ReadText("--comm-groups", groups_path));
    sim::StatusOr<interop::CommGroups> parsed = interop::ParseCommGroups(text, groups_path);
    if (!parsed.ok()) return parsed.status().WithContext("--comm-groups");
    groups = std::move(*parsed);
  }
  if (!flags.rank_map.empty()) {
    PODSIM_ASSIGN_OR_RETURN(std::string text, ReadText("--rank-map", flags.rank_map));
    sim::StatusOr<std::vector<int64_t>> map = interop::ParseRankMap(text, flags.rank_map);
    if (!map.ok()) return map.status().WithContext("--rank-map");
    options.rank_chips = std::move(*map);
  }
  sim::StatusOr<interop::ChakraImport> imported =
      interop::ImportChakra(system, *ranks, groups, options);
  if (!imported.ok()) return imported.status().WithContext("--chakra " + flags.prefix);
  const interop::ChakraImportSummary& s = imported->summary;
  std::string description =
      "Chakra trace " + flags.prefix + " (" + std::to_string(s.ranks) + " ranks";
  description += groups_path.empty() ? ", no comm groups" : ", comm groups " + groups_path;
  description += "): " + std::to_string(s.nodes) + " nodes, " + std::to_string(s.ops) +
                 " ops: " + std::to_string(s.recorded) + " compute at their recorded duration, " +
                 std::to_string(s.roofline) + " on the roofline, " + std::to_string(s.collectives) +
                 " collectives, " + std::to_string(s.sends) + " sends and receives" +
                 (s.shift_sends > 0 ? " (and " + std::to_string(s.shift_sends) +
                                          " sends of podsim's shifts, which their receives stand "
                                          "for)"
                                    : "") +
                 "; no time for " + std::to_string(s.cpu_nodes) + " CPU ops, " +
                 std::to_string(s.metadata_nodes) + " metadata nodes and " +
                 std::to_string(s.empty_nodes) + " nodes recording no work";
  return ChakraInput{std::move(system), std::move(*imported), std::move(description)};
}

}  // namespace podsim::cli
