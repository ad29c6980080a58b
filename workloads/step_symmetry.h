// The symmetry of a step: the shifts of the fabric (collectives/translation_group.h: translations
// of a torus; slot rotations and node translations of a GPU system) that map the step's workload
// onto itself, so that simulating one chip per orbit and one flow class per
// orbit of flows gives exactly the full simulation (step_simulator.h, SimulatedChips::kOrbits;
// docs/architecture.md, "The symmetric quotient").
//
// A shift t maps the workload onto itself when
//   * every chip c and t(c) run the same program (the chips are alike, so they then run the same
//     ops for the same times);
//   * every send of a chip c to its peer p is matched by the send of t(c) to t(p);
//   * every collective group g is mapped onto a group of the same op whose transfers are the
//     images of g's: t(g), in its own rank order, is g's rank grid unchanged or rotated
//     cyclically along dimensions the collective's algorithm is invariant under
//     (collectives::RotatableDims: ring dimensions of rings and of the multi-axis algorithm).
// Those that do form a group; podsim looks for the product of the largest cyclic subgroup along
// each axis (the smallest step along it that works), which may miss diagonal symmetries: a
// smaller group means more simulated chips, never a different answer. On GPU systems the slot
// axis is tried whole and split into the digits where mesh axes start or end inside a node
// (fabric_symmetry.h, slot_radix: tp=4 of 8 GPUs rotates within each half), and likewise the
// axis of the node in its scalable unit where nodes are digits (node_radix: pipeline stages of 16
// nodes in an SU of 32, each stage's ring rotating within its half); the largest group is kept.
// Schedules with groups (Schedule.groups), fabrics without symmetry axes
// (collectives/fabric_symmetry.h), steps nothing maps, and steps whose check would walk the chips
// more than 2e8 times (many distinct collectives on a large fabric) get the trivial group: every
// chip simulated.

#ifndef PODSIM_WORKLOADS_STEP_SYMMETRY_H_
#define PODSIM_WORKLOADS_STEP_SYMMETRY_H_

#include "collectives/translation_group.h"
#include "schedule.pb.h"
#include "sim/status.h"
#include "topology/system.h"
#include "workloads/schedule_check.h"

namespace podsim::workloads {

// REQUIRES: `checked` is CheckSchedule(system, schedule). Fails as the runner fails on a
// collective it cannot build.
sim::StatusOr<collectives::TranslationGroup> FindStepSymmetry(const topology::System& system,
                                                              const schedule::Schedule& schedule,
                                                              const CheckedSchedule& checked);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_STEP_SYMMETRY_H_
