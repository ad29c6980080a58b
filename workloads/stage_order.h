// The order in which a pipeline stage runs its units, a chunk's forward or backward for one
// microbatch (training_schedule.h, "Order on one stage"): GPipe, 1F1B (with
// OpOptions::ep_comm_overlap's doubled warm-up) or interleaved 1F1B.

#ifndef PODSIM_WORKLOADS_STAGE_ORDER_H_
#define PODSIM_WORKLOADS_STAGE_ORDER_H_

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

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_STAGE_ORDER_H_
