// The order in which a pipeline stage runs its units, a chunk's forward or backward for one
// microbatch (training_schedule.h, "Order on one stage"): GPipe, 1F1B (with
// OpOptions::ep_comm_overlap's doubled warm-up) or interleaved 1F1B.

#ifndef PODSIM_WORKLOADS_STAGE_ORDER_H_
#define PODSIM_WORKLOADS_STAGE_ORDER_H_

#include <cstdint>
#include <vector>

#include "workloads/layout.h"

namespace podsim::workloads {

// One pipeline unit of work on a stage: the forward or the backward of chunk `chunk` (its
// virtual stage is chunk * pp + stage) for microbatch `microbatch`.
struct StageUnit {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;
};

// The units of stage `stage` in execution order. REQUIRES: ValidateLayout(layout, ...) ok.
std::vector<StageUnit> StageOrder(const Layout& layout, int stage, bool ep_comm_overlap);

// The most microbatches whose forward of chunk `chunk` has run in `units` and whose backward of it
// has not, at any point of the order: how many copies of what that chunk's forward keeps until its
// backward a stage holds at once (the embedding's, chunk 0 of stage 0; the head's, the last chunk
// of the last stage: one under 1F1B, every microbatch under GPipe). With `overlapped_pairs`
// (OpOptions::ep_comm_overlap: each backward runs overlapped with the forward after it) the
// forward of a pair holds before its backward releases, as the embedding's does: its hold opens
// the forward's first segment, its release closes the backward's last.
int64_t MostForwardsInFlight(const std::vector<StageUnit>& units, int chunk,
                             bool overlapped_pairs = false);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_STAGE_ORDER_H_
