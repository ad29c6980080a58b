// One training step of a model on a system under a layout: its schedule (training_schedule.h)
// simulated on every stage (step_simulator.h), with the memory per chip (memory.h) and the
// figures users ask for: step time, tokens/s, MFU and HFU, and where the time went.

#ifndef PODSIM_WORKLOADS_TRAINING_H_
#define PODSIM_WORKLOADS_TRAINING_H_

#include <map>
#include <string>
#include <vector>

#include "schedule.pb.h"
#include "sim/status.h"
#include "topology/system.h"
#include "workloads/layer_ops.h"
#include "workloads/layer_times.h"
#include "workloads/layout.h"
#include "workloads/memory.h"
#include "workloads/model_spec.h"
#include "workloads/step_simulator.h"

namespace podsim::workloads {

struct TrainingResult {
  schedule::Schedule schedule;
  StepResult step;
  MemoryBreakdown memory;  // The stage with the most bytes per chip.
  double step_time_s = 0;
  double tokens_per_s = 0;
  // Model FLOPs (options.model_flops_count convention, no recomputation) and HFU FLOPs (the
  // matmul and attention work executed, recomputation included: op.h hfu_flops) per second over
  // the peak bf16 FLOP/s of all chips; hfu >= mfu unless the convention counts pairs a causal
  // kernel skips (kFull).
  double mfu = 0;
  double hfu = 0;
  // Mean seconds per chip: "compute", "interference" (compute slowed by concurrent
  // communication), "exposed_<axis>" per mesh axis (tp, fsdp, dp, pp), "bubble" (pipeline
  // warm-up and drain), "idle"; they add up to the step time.
  std::map<std::string, double> breakdown;
  // With StepOptions::time_layers: the first stage's layers (every virtual chunk's), each with
  // its forward and backward on the stage's first simulated chip, microbatch 0 (layer_times.h).
  std::vector<LayerTime> layer_times;
};

// InvalidArgument when options.fp8 asks for fp8 on a chip without an fp8 peak, or
// options.fp8_all_gather or fp8_dispatch without fp8 training (callers name the flag or field).
sim::Status ValidateFp8(const OpOptions& options, const topology::ChipSpec& chip);

// InvalidArgument when options.fp8_recipe is mxfp8 without fp8 under Transformer Engine, with
// fp8_all_gather, or on a chip without block-scaled fp8 (callers name the flag or field).
sim::Status ValidateFp8Recipe(const OpOptions& options, const topology::ChipSpec& chip);

// Resolves the layout against the batch (ResolveLayout: its sequence shards and mbs= count),
// validates it against the model, the system and the batch (ValidateLayout's errors), then
// simulates one step.
sim::StatusOr<TrainingResult> SimulateTraining(const topology::System& system,
                                               const ModelSpec& model, const Layout& layout,
                                               const BatchSpec& batch, const OpOptions& options,
                                               const StepOptions& step_options = {});

// TrainingResult::breakdown of a simulated step (any schedule's).
std::map<std::string, double> MeanBreakdown(const StepResult& step);

// The mesh axis a stream's time is charged to: "fsdp.reduce" -> "fsdp", "pp.recv" -> "pp".
std::string AxisOfStream(const std::string& stream);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_TRAINING_H_
