// The schedule of one inference step (schedule.proto) -- a prefill over the prompts or one decode
// step -- built from the per-chip ops of inference_ops.h, and its simulation on a system: step
// latency, throughput, memory per chip and what bounds the step.
//
// Schedule: the mesh is InferenceLayout::MeshAxes() (tp, tp2, dp) and there is one program, run
// by every chip: every chip does the same step, and data-parallel replicas (dp) are a mesh axis
// no collective spans. Its ops, in order: the embedding, model.layers copies of the layer, the
// head. Compute ops run on stream "compute", collectives on the stream of their axis ("tp",
// "tp2"). Every op depends on the ops inference_ops.h says (one chain, with the gate and up
// matmuls as two branches); the first op of each layer waits for the last op of the one before.
// So every collective is blocking: the compute stream waits for it, as the ops say (tensor
// parallelism's activations are needed by the next op).
//
// Simulation (SimulateInference) uses SimulateStep (step_simulator.h) with the given StepOptions
// (default: one chip per program, whole-collective flows, calibrated collectives, the chip's
// default compute efficiency). The step's time splits into the compute stream's HBM-bound and
// MXU-bound ops (compute_model.h's limiter), ops bound by neither (their fixed overhead only),
// exposed communication per axis, and idle time; they add up to the step time. The result also
// holds the book's closed form of the step and the simulation's excess over it, part by part
// (inference_roofline.h).

#ifndef PODSIM_WORKLOADS_INFERENCE_SCHEDULE_H_
#define PODSIM_WORKLOADS_INFERENCE_SCHEDULE_H_

#include <cstdint>
#include <map>
#include <string>

#include "schedule.pb.h"
#include "sim/status.h"
#include "topology/system.h"
#include "workloads/inference_memory.h"
#include "workloads/inference_ops.h"
#include "workloads/inference_roofline.h"
#include "workloads/model_spec.h"
#include "workloads/step_simulator.h"

namespace podsim::workloads {

// REQUIRES: ValidateInferenceLayout(layout, model, chips of `system`, options) ok.
schedule::Schedule InferenceSchedule(const std::string& system, const ModelSpec& model,
                                     const InferenceLayout& layout,
                                     const InferenceOptions& options);

// Tokens the whole system processes in one step: batch (decode: one new token per sequence) or
// batch x context (prefill: every prompt token).
int64_t InferenceTokensPerStep(const InferenceOptions& options);

// Where the step's time went on the simulated chip, in seconds; the parts add up to the step.
struct InferenceTimeBreakdown {
  double compute_hbm_s = 0;       // Compute ops whose HBM traffic bounds them.
  double compute_mxu_s = 0;       // Compute ops whose FLOPs bound them.
  double compute_overhead_s = 0;  // Ops with neither FLOPs nor bytes (their overhead only).
  double interference_s = 0;      // Compute slowed by concurrent communication.
  std::map<std::string, double> exposed_s;  // Communication the compute stream waited for.
  double idle_s = 0;
  double exposed_total_s() const;
};

struct InferenceResult {
  schedule::Schedule schedule;
  StepResult step;
  double step_time_s = 0;
  int64_t tokens_per_step = 0;
  double tokens_per_s = 0;           // tokens_per_step / step_time_s.
  double tokens_per_s_per_chip = 0;  // Over every chip of the system.
  InferenceMemoryBreakdown memory;   // Of one chip (inference_memory.h).
  InferenceTimeBreakdown time;
  // The book's closed form of the step and where the simulated step exceeds it
  // (inference_roofline.h).
  InferenceRoofline roofline;
  // The largest of "hbm" (compute_hbm_s), "mxu" (compute_mxu_s) and "interconnect" (every
  // exposed communication), with its share of the step time; ties go in that order.
  std::string bottleneck;
  double bottleneck_share = 0;
};

// Validates the layout against the model, the system and the options (ValidateInferenceLayout:
// InvalidArgument naming the axis or option), builds the schedule and simulates it. Fails too
// when the simulation does (step_simulator.h); a layout that does not fit in HBM is simulated
// and reported with memory.fits false.
sim::StatusOr<InferenceResult> SimulateInference(const topology::System& system,
                                                 const ModelSpec& model,
                                                 const InferenceLayout& layout,
                                                 const InferenceOptions& options,
                                                 const StepOptions& step_options = {});

// Disaggregated serving (the book's Ch8, case AI12): separate prefill and decode servers of the
// same size, in the ratio that lets prefill keep up with decode. A prefill server starts
// `prompts_per_prefill` sequences every `prefill_step_s`; a decode server finishes
// decode_batch / decode_len sequences every `decode_step_s`. Returns prefill servers per decode
// server: (decode_batch / (decode_step_s x decode_len)) / (prompts_per_prefill / prefill_step_s).
// REQUIRES: every argument > 0.
double PrefillServersPerDecodeServer(double prefill_step_s, int64_t prompts_per_prefill,
                                     double decode_step_s, int64_t decode_batch,
                                     int64_t decode_len);

// Dollars per million tokens from `chips` chips at `usd_per_chip_hour` each producing
// `tokens_per_s` tokens together. REQUIRES: tokens_per_s > 0.
double UsdPerMillionTokens(double chips, double usd_per_chip_hour, double tokens_per_s);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_INFERENCE_SCHEDULE_H_
