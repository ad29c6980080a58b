// The schedule of one training step (schedule.proto) for a model, a layout and a batch: one
// program per pipeline stage, built from the per-layer ops of layer_ops.h.
//
// Streams: "compute"; "tp" (Megatron activation collectives, blocking); "fsdp" (weight
// all-gathers, PyTorch FSDP's unshard stream); "fsdp.reduce" (gradient reduce-scatters, its
// post-backward stream); "dp" (gradient all-reduces); "pp" (activation and gradient sends).
//
// Order on one stage (Narayanan et al. 2021, Megatron-LM schedules.py):
//   GPipe        every microbatch's forward, then every backward.
//   1F1B         min(pp - stage - 1, m) warm-up forwards, then one forward and one backward
//                alternately, then the remaining backwards.
//   interleaved  the same over m * v chunk-microbatches: warm-up (pp - stage - 1) * 2 +
//                (v - 1) * pp, forward k runs chunk (k / pp) % v of microbatch
//                (k / (pp v)) pp + k % pp, backwards the chunks in reverse.
// A forward unit receives its input from the previous stage (or embeds the tokens on the first
// virtual stage), runs its layers and sends the output on (or runs the head and loss on the last
// virtual stage); a backward unit mirrors it. Chunk c of stage s holds virtual stage c pp + s,
// so the last stage's chunk c hands to the first stage's chunk c + 1.
//
// Collectives per layer are layer_ops.h's. Weight all-gathers are issued on their own stream
// ahead of use, each waiting for the first compute op of the layer before it (at most two
// layers' gathered weights at once, as memory.h budgets). Gradient reduce-scatters (fsdp) run
// after every microbatch's weight gradients, as ZeRO-3 does; data-parallel all-reduces only after
// the last microbatch's (gradient accumulation). The optimizer step waits for every reduction.

#ifndef PODSIM_WORKLOADS_TRAINING_SCHEDULE_H_
#define PODSIM_WORKLOADS_TRAINING_SCHEDULE_H_

#include <string>

#include "schedule.pb.h"
#include "sim/status.h"
#include "workloads/layer_ops.h"
#include "workloads/layout.h"
#include "workloads/model_spec.h"

namespace podsim::workloads {

// REQUIRES: ValidateLayout(layout, model, chips of `system`, batch) ok.
schedule::Schedule TrainingSchedule(const std::string& system, const ModelSpec& model,
                                    const Layout& layout, const BatchSpec& batch,
                                    const OpOptions& options);

// The same schedule, written into `out` (REQUIRES: empty), which may live on a protobuf arena:
// a sweep builds one per candidate for its bounds, and an arena allocates a schedule's tens of
// thousands of ops and names in a few blocks and frees them at once.
void BuildTrainingSchedule(const std::string& system, const ModelSpec& model, const Layout& layout,
                           const BatchSpec& batch, const OpOptions& options,
                           schedule::Schedule* out);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_TRAINING_SCHEDULE_H_
