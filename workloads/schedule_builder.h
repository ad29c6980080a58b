// Writing workloads' ops (op.h) into a step schedule (schedule.proto): shared by the training and
// inference schedule builders.

#ifndef PODSIM_WORKLOADS_SCHEDULE_BUILDER_H_
#define PODSIM_WORKLOADS_SCHEDULE_BUILDER_H_

#include <string>
#include <vector>

#include "schedule.pb.h"
#include "topology/mesh_mapping.h"
#include "workloads/op.h"

namespace podsim::workloads {

// Appends `op` to `program` on `stream`: its name, kind and phase, and its FLOPs, HBM bytes and
// matmul shape (compute ops) or its operation, mesh axis and bytes (collectives). Dependencies
// are the caller's to add.
schedule::Op* AddScheduleOp(schedule::Program* program, const Op& op, const std::string& stream);

// Adds `axes` as the schedule's mesh.
void AddMesh(schedule::Schedule* schedule, const std::vector<topology::MeshAxis>& axes);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_SCHEDULE_BUILDER_H_
