// Chakra execution traces on the command line (interop/): `podsim replay --chakra PREFIX` reads
// one, and `--write-chakra PREFIX` on train, infer and replay writes one. The flags are defined
// here once for the commands that share them.

#ifndef PODSIM_CLI_CHAKRA_FILES_H_
#define PODSIM_CLI_CHAKRA_FILES_H_

#include <string>

#include "interop/chakra_import.h"
#include "schedule.pb.h"
#include "sim/status.h"
#include "topology/system.h"

namespace CLI {
class App;
}

namespace podsim::cli {

// --write-chakra PREFIX.
void AddWriteChakraFlag(CLI::App* sub, std::string* prefix);

// Writes `schedule` (run on `system`) as PREFIX.<rank>.et for every chip and
// PREFIX.comm_groups.json, and returns what was written, for the report. Errors name
// --write-chakra; nothing is left behind when one file cannot be written.
sim::StatusOr<std::string> WriteChakraFiles(const std::string& prefix,
                                            const topology::System& system,
                                            const schedule::Schedule& schedule);

// --write-chakra checked before anything runs: the IoError, naming --write-chakra, of a folder
// where PREFIX's files cannot be created (sim::CheckCreatable).
sim::Status CheckWriteChakra(const std::string& prefix);

// The flags of `podsim replay --chakra PREFIX`.
struct ChakraReplayFlags {
  std::string prefix;
  std::string system;
  std::string comm_groups;  // Default: PREFIX.comm_groups.json when it exists.
  std::string rank_map;
  std::string compute = "recorded";
  bool ctrl_deps = false;
};

void AddChakraReplayFlags(CLI::App* sub, ChakraReplayFlags* flags);

struct ChakraInput {
  topology::System system;
  interop::ChakraImport imported;
  std::string description;  // Where the trace and its groups came from, and what became of it.
};

// Reads the trace, its comm groups and rank map, and imports it onto --system. Errors name the
// flag or file at fault.
sim::StatusOr<ChakraInput> ReadChakraInput(const ChakraReplayFlags& flags);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_CHAKRA_FILES_H_
