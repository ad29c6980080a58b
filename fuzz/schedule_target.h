// The checks shared by the two schedule targets (schedule_text_fuzzer.cc and
// schedule_binary_fuzzer.cc): once a schedule has parsed, build its system when it is small and
// run workloads::CheckSchedule on it (workloads/schedule_check.h); when it accepts the schedule,
// check the rules it promises independently. Nothing is simulated.

#ifndef PODSIM_FUZZ_SCHEDULE_TARGET_H_
#define PODSIM_FUZZ_SCHEDULE_TARGET_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "schedule.pb.h"
#include "topology/system.h"
#include "workloads/schedule_check.h"

namespace podsim::fuzz {

// Systems of up to this many chips are built and checked against: CheckSchedule's work grows
// with chips x programs, and a schedule needs only a few chips to reach every rule.
inline constexpr int64_t kMaxScheduleChips = 2048;

// Checks the rules of schedule_check.h that an accepted schedule must satisfy, independently of
// CheckSchedule: mesh names unique and not empty, and, for every chip (not one per program), a
// send matched by exactly one receive on the peer chip and a receive by exactly one send.
inline void CheckAcceptedSchedule(const schedule::Schedule& schedule,
                                  const workloads::CheckedSchedule& checked) {
  std::set<std::string> names;
  for (const schedule::MeshAxis& axis : schedule.mesh()) {
    PODSIM_FUZZ_CHECK(!axis.name().empty(), "accepted a mesh axis without a name");
    PODSIM_FUZZ_CHECK(names.insert(axis.name()).second,
                      "accepted mesh axis '" + axis.name() + "' twice");
  }
  const workloads::MeshGrid& grid = checked.grid;
  // (kind, tag, peer_axis, peer_offset) -> ops of that endpoint in each program.
  using Endpoint = std::tuple<int, uint64_t, std::string, int64_t>;
  std::vector<std::map<Endpoint, int>> endpoints(schedule.programs_size());
  for (int p = 0; p < schedule.programs_size(); ++p) {
    for (const schedule::Op& op : schedule.programs(p).ops()) {
      if (op.kind() == schedule::SEND || op.kind() == schedule::RECV) {
        ++endpoints[p][{op.kind(), op.tag(), op.peer_axis(), op.peer_offset()}];
      }
    }
  }
  for (uint32_t chip = 0; chip < grid.chip_count(); ++chip) {
    const int p = checked.program_of_chip[chip];
    for (const auto& [endpoint, count] : endpoints[p]) {
      const auto& [kind, tag, axis_name, offset] = endpoint;
      const int axis = grid.AxisIndex(axis_name);
      const int64_t coord = int64_t{grid.Coord(chip, axis)} + offset;
      PODSIM_FUZZ_CHECK(axis >= 0 && coord >= 0 && coord < grid.axes()[axis].size,
                        "accepted a peer outside the mesh, tag " + std::to_string(tag));
      const uint32_t peer = grid.ChipWith(chip, axis, static_cast<int>(coord));
      const int other = kind == schedule::SEND ? schedule::RECV : schedule::SEND;
      auto match = endpoints[checked.program_of_chip[peer]].find({other, tag, axis_name, -offset});
      const int matches =
          match == endpoints[checked.program_of_chip[peer]].end() ? 0 : match->second;
      PODSIM_FUZZ_CHECK(count == 1 && matches == 1,
                        "chip " + std::to_string(chip) + " (program '" +
                            schedule.programs(p).name() +
                            "'): " + (kind == schedule::SEND ? "send" : "receive") + " tag " +
                            std::to_string(tag) + " has " + std::to_string(matches) +
                            " matching ops on peer chip " + std::to_string(peer) + " (program '" +
                            schedule.programs(checked.program_of_chip[peer]).name() + "'), and " +
                            std::to_string(count) + " such ops itself; expected 1");
    }
  }
}

inline void CheckParsedSchedule(const schedule::Schedule& schedule) {
  if (TooBigToBuild(schedule.system(), kMaxScheduleChips)) return;
  sim::StatusOr<topology::System> system = topology::ParseSystem(schedule.system());
  if (!system.ok() || system->fabric.chip_count() > kMaxScheduleChips) return;
  sim::StatusOr<workloads::CheckedSchedule> checked = workloads::CheckSchedule(*system, schedule);
  if (!checked.ok()) {
    PODSIM_FUZZ_CHECK(checked.status().message().starts_with("schedule: "),
                      "errors start with 'schedule: ': " + checked.status().message());
    return;
  }
  // Every chip matches exactly one program.
  const uint32_t chips = system->fabric.chip_count();
  PODSIM_FUZZ_CHECK(checked->program_of_chip.size() == chips, "program_of_chip has a wrong size");
  for (int program : checked->program_of_chip) {
    PODSIM_FUZZ_CHECK(program >= 0 && program < schedule.programs_size(),
                      "chip without a program: " + std::to_string(program));
  }
  int64_t counted = 0;
  for (int64_t n : checked->chips_of_program) counted += n;
  PODSIM_FUZZ_CHECK(counted == chips, "chips_of_program does not add up to the chips");
  CheckAcceptedSchedule(schedule, *checked);
}

}  // namespace podsim::fuzz

#endif  // PODSIM_FUZZ_SCHEDULE_TARGET_H_
