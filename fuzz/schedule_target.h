// The checks shared by the two schedule targets (schedule_text_fuzzer.cc and
// schedule_binary_fuzzer.cc): once a schedule has parsed, build its system when it is small and
// run workloads::CheckSchedule on it (workloads/schedule_check.h). Nothing is simulated.

#ifndef PODSIM_FUZZ_SCHEDULE_TARGET_H_
#define PODSIM_FUZZ_SCHEDULE_TARGET_H_

#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include "schedule.pb.h"
#include "topology/system.h"
#include "workloads/schedule_check.h"

namespace podsim::fuzz {

// Systems of up to this many chips are built and checked against: CheckSchedule's work grows
// with chips x programs, and a schedule needs only a few chips to reach every rule.
inline constexpr int64_t kMaxScheduleChips = 2048;

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
  // Every chip matches exactly one program (schedule_check.h).
  const uint32_t chips = system->fabric.chip_count();
  PODSIM_FUZZ_CHECK(checked->program_of_chip.size() == chips, "program_of_chip has a wrong size");
  int64_t counted = 0;
  for (int program : checked->program_of_chip) {
    PODSIM_FUZZ_CHECK(program >= 0 && program < schedule.programs_size(),
                      "chip without a program: " + std::to_string(program));
  }
  for (int64_t n : checked->chips_of_program) counted += n;
  PODSIM_FUZZ_CHECK(counted == chips, "chips_of_program does not add up to the chips");
}

}  // namespace podsim::fuzz

#endif  // PODSIM_FUZZ_SCHEDULE_TARGET_H_
