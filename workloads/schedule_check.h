// The rules a step schedule (schedule.proto) must satisfy before it is simulated, checked
// against the system it names; each failure is one InvalidArgument naming the program, the op
// and what was expected.
//
//   * mesh: names unique and not empty, sizes >= 1 multiplying to the chip count; placements
//     name mesh axes (topology::MapMesh's rules).
//   * programs: `where` names mesh axes with coordinates in range; every chip matches exactly
//     one program.
//   * ops: a kind; compute kinds on stream "compute", the others on another stream; deps name
//     earlier ops; FLOPs, bytes and durations finite and >= 0; collectives name their operation,
//     at least one mesh axis (each once) and bytes > 0; sends and receives name a mesh axis, an
//     offset other than 0 that stays inside the axis for every chip of the program (the axis must
//     be fixed by `where`), and bytes > 0 (sends); every send has exactly one receive with its
//     tag and the opposite offset in the program of the peer chips, and vice versa.
//   * schedule groups (Schedule.groups): named once each, chips of the system, each once; a
//     collective names either mesh axes or a group, and every chip of a program that has a
//     collective over a group is one of its members.
//   * groups: the members of a collective's group (chips differing only on its axes, or a
//     schedule group) meet at their n-th collective over that axis set (or group), so their
//     programs must list the same collectives over it, of the same kind and bytes, in the same
//     order.

#ifndef PODSIM_WORKLOADS_SCHEDULE_CHECK_H_
#define PODSIM_WORKLOADS_SCHEDULE_CHECK_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schedule.pb.h"
#include "sim/status.h"
#include "topology/system.h"
#include "workloads/compute_model.h"
#include "workloads/mesh_grid.h"

namespace podsim::workloads {

// Bounds on one op that keep every sum over a schedule (FLOPs, MFU, memory) finite: no op of a
// real step comes near them (a 405B-parameter layer is ~1e15 FLOPs per microbatch).
inline constexpr double kMaxOpFlops = 1e30;
inline constexpr double kMaxOpBytes = 1e18;

// A checked schedule: its mesh on the system and which program every chip runs.
struct CheckedSchedule {
  MeshGrid grid;
  std::vector<int> program_of_chip;
  std::vector<int64_t> chips_of_program;
  std::map<std::string, int> group_index;  // Schedule.groups by name.
};

// What a collective op spans: its mesh axes (sorted AxisIndex values), or {-1 - g} for schedule
// group g. REQUIRES: `op` is a collective of the schedule `checked` was checked from.
std::vector<int> CollectiveSet(const CheckedSchedule& checked, const schedule::Op& op);

// The group over `set` (CollectiveSet) that holds `chip`, its chips in rank order and its rank
// grid: MeshGrid::Group for mesh axes; for a schedule group its chips, as its shape or one line.
// REQUIRES: `chip` is a member.
void CollectiveGroup(const schedule::Schedule& schedule, const CheckedSchedule& checked,
                     const std::vector<int>& set, uint32_t chip, std::vector<uint32_t>* ranks,
                     std::vector<int>* shape);

sim::StatusOr<CheckedSchedule> CheckSchedule(const topology::System& system,
                                             const schedule::Schedule& schedule);

// The compute kinds (those that run on the "compute" stream).
bool IsComputeKind(schedule::OpKind kind);

// What is wrong with the kernel `op` names on `chip` ("kernel: ..."), or "" when nothing is: an
// attention op names a kernel the family has a curve for, an HBM-bound op a kernel class
// (hbm_kernel.h), and no other op a kernel.
std::string KernelProblem(const schedule::Op& op, const topology::ChipSpec& chip,
                          const ComputeEfficiency& efficiency);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_SCHEDULE_CHECK_H_
