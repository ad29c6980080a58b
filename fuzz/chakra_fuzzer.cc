// Fuzzes Chakra execution traces (the .et files `podsim replay --chakra` reads): the input is one
// rank's file, given to every rank of a 2-GPU system (so collectives, sends and receives between
// the ranks are exercised), with comm groups naming both ranks. interop::ParseChakraFile, then
// ImportChakra, then CheckSchedule of what it made: an import that succeeds must give a schedule
// the step simulator accepts, or fail with InvalidArgument.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "interop/chakra_file.h"
#include "interop/chakra_import.h"
#include "topology/system.h"
#include "workloads/schedule_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > podsim::fuzz::kMaxInputBytes) return 0;
  podsim::fuzz::QuietProtobufLogs();
  using namespace podsim;
  sim::StatusOr<interop::ChakraRankTrace> rank =
      interop::ParseChakraFile(std::string(reinterpret_cast<const char*>(data), size), "f.0.et");
  if (!rank.ok()) return 0;
  static const topology::System* system = new topology::System(*topology::ParseSystem("h100:2"));
  const std::vector<interop::ChakraRankTrace> ranks(2, *rank);
  const interop::CommGroups groups{{"1", {0, 1}}, {"2", {1, 0}}, {"0", {0, 1}}};
  for (bool ctrl_deps : {false, true}) {
    interop::ChakraImportOptions options;
    options.ctrl_deps = ctrl_deps;
    sim::StatusOr<interop::ChakraImport> imported =
        interop::ImportChakra(*system, ranks, groups, options);
    if (!imported.ok()) {
      PODSIM_FUZZ_CHECK(imported.status().code() == sim::Status::Code::kInvalidArgument,
                        imported.status().message());
      continue;
    }
    sim::StatusOr<workloads::CheckedSchedule> checked =
        workloads::CheckSchedule(*system, imported->schedule);
    // Collectives whose members disagree (the n-th of a group differs between the ranks) are the
    // schedule check's to refuse; nothing else it checks may fail on an import.
    PODSIM_FUZZ_CHECK(
        checked.ok() || checked.status().message().find("meet in groups") != std::string::npos,
        checked.status().message());
  }
  return 0;
}
