// How a schedule's collective ops become collective requests (collectives/collective_runner.h):
// one place for the step simulation and for the symmetry it relies on (step_symmetry.h), so both
// see the same algorithm for every group.

#ifndef PODSIM_WORKLOADS_STEP_COLLECTIVES_H_
#define PODSIM_WORKLOADS_STEP_COLLECTIVES_H_

#include <cstdint>
#include <vector>

#include "collectives/collective_runner.h"
#include "schedule.pb.h"
#include "topology/system.h"

namespace podsim::workloads {

collectives::CollectiveOp ToCollectiveOp(schedule::CollectiveKind kind);

// The request of collective op `op` over the group `ranks` (rank grid `shape`, MeshGrid::Group):
// its bytes padded to a whole number per rank, as frameworks pad a tensor; a broadcast sends its
// whole message from the group's first rank.
collectives::CollectiveRequest GroupRequest(const topology::System& system, const schedule::Op& op,
                                            const std::vector<uint32_t>& ranks,
                                            const std::vector<int>& shape);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_STEP_COLLECTIVES_H_
