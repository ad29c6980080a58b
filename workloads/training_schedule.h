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
// With OpOptions::ep_comm_overlap, each backward of the 1F1B steady state and the forward after
// it (different microbatches) run as one overlapped chunk, as DualPipe runs them (DeepSeek-V3
// report, figure 4; Megatron-Core's --overlap-moe-expert-parallel-comm does the same without a
// pipeline, and with one only over virtual stages): each unit is cut after
// every expert all-to-all and the pieces alternate on the compute stream, the backward's first
// (the forward's attention hides the backward's combine, the backward's experts the forward's
// dispatch, the forward's experts the backward's dispatch, the backward's attention the forward's
// combine). A pair hands its outputs to the neighbouring stages only at its end, so stage s runs
// 2 (pp - s - 1) warm-up forwards (1F1B's pp - s - 1 twice over; memory.h holds 2 (pp - s)
// microbatches' activations) and the cool-down backwards alone. DualPipe's bidirectional
// pipeline (two stages a chip, half the bubble) and its SMs reserved for communication are not
// modelled: the step simulation's overlap slowdown (compute_model.h) stands for the latter.
// A forward unit receives its input from the previous stage (or embeds the tokens on the first
// virtual stage), runs its layers and sends the output on (or runs the head and loss on the last
// virtual stage); a backward unit mirrors it. Chunk c of stage s holds virtual stage c pp + s,
// so the last stage's chunk c hands to the first stage's chunk c + 1.
//
// Collectives per layer are layer_ops.h's. Weight all-gathers are issued on their own stream
// ahead of use, each waiting for the first compute op of the layer before it (at most two
// layers' gathered weights at once, as memory.h budgets). Gradient reduce-scatters (fsdp) run
// after every microbatch's weight gradients, as ZeRO-3 does (in the last microbatch only under
// OpOptions::fsdp_sync_last_microbatch); data-parallel all-reduces only after the last
// microbatch's (gradient accumulation), each layer's as its gradients are done with
// OpOptions::overlap_grad_reduce, else (Megatron-Core's default) all after the stage's last
// compute op and send, one bucket a model chunk's buffer, dense then experts, one after the
// other. The distributed optimizer's parameter gathers run in the first microbatch's forward a
// layer ahead with OpOptions::overlap_param_gather, else one bucket a chunk before the stage's
// first compute op (the previous step's end). On a pipeline the per-layer gathers of the first
// microbatch delay each stage's warm-up in turn, where the buckets run on every stage at once
// (why Megatron-Core has align_param_gather): exposing them can shorten such a step. The
// optimizer step waits for every reduction. The options are completed for the layout first
// (WithLayoutDefaults, layer_ops.h).

#ifndef PODSIM_WORKLOADS_TRAINING_SCHEDULE_H_
#define PODSIM_WORKLOADS_TRAINING_SCHEDULE_H_

#include <string>

#include "schedule.pb.h"
#include "sim/status.h"
#include "topology/system.h"
#include "workloads/layer_ops.h"
#include "workloads/layout.h"
#include "workloads/model_spec.h"

namespace podsim::workloads {

// REQUIRES: ValidateLayout(layout, model, chips of `system`, batch) ok. The schedule names
// `system` and holds the memory its chip does (memory.h).
schedule::Schedule TrainingSchedule(const topology::System& system, const ModelSpec& model,
                                    const Layout& layout, const BatchSpec& batch,
                                    const OpOptions& options);

// The same schedule, written into `out` (REQUIRES: empty), which may live on a protobuf arena:
// a sweep builds one per candidate for its bounds, and an arena allocates a schedule's tens of
// thousands of ops and names in a few blocks and frees them at once.
void BuildTrainingSchedule(const topology::System& system, const ModelSpec& model,
                           const Layout& layout, const BatchSpec& batch, const OpOptions& options,
                           schedule::Schedule* out);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_TRAINING_SCHEDULE_H_
