#include "workloads/inference_schedule.h"

#include <vector>

#include "sim/check.h"
#include "workloads/schedule_builder.h"

namespace podsim::workloads {

namespace {

// Appends `list` to `program`: its deps shifted to the program's indices, its first op (the only
// one without deps: inference_ops.h builds one chain) waiting for `input` (-1: none), the ep
// group's collectives over layout.EpGroupAxes(). Returns the index of the list's last op, which
// depends on all the others.
int Append(schedule::Program* program, const OpList& list, int input, int layer,
           const InferenceLayout& layout) {
  const int base = program->ops_size();
  for (const Op& op : list) {
    schedule::Op* out =
        AddScheduleOp(program, op, op.kind == OpKind::kCollective ? op.axis : "compute");
    if (op.kind == OpKind::kCollective && op.axis == "ep") {
      // The ep group: the tp chips of ep/tp replicas (inference_ops.h).
      out->clear_axes();
      for (const std::string& axis : layout.EpGroupAxes()) out->add_axes(axis);
    }
    out->set_layer(layer);
    for (int dep : op.deps) out->add_deps(static_cast<uint32_t>(base + dep));
    if (op.deps.empty() && input >= 0) out->add_deps(static_cast<uint32_t>(input));
  }
  return program->ops_size() - 1;
}

}  // namespace

schedule::Schedule InferenceSchedule(const std::string& system, const ModelSpec& model,
                                     const InferenceLayout& layout,
                                     const InferenceOptions& options) {
  schedule::Schedule out;
  out.set_system(system);
  AddMesh(&out, layout.MeshAxes());
  out.set_tokens_per_step(InferenceTokensPerStep(options));
  out.set_description(
      "infer " + model.name + " " + layout.ToString() + " " +
      std::string(InferencePhaseName(options.phase)) + " batch " + std::to_string(options.batch) +
      " context " + std::to_string(options.context) + " weights " +
      std::string(DTypeName(options.weights)) + " kv " + std::string(DTypeName(options.kv_cache)));

  schedule::Program* program = out.add_programs();
  program->set_name("replica");  // No `where`: every chip runs it.
  const OpList dense = InferenceLayerOps(model, layout, options);
  const OpList moe = model.moe() ? InferenceMoeLayerOps(model, layout, options) : OpList{};
  int last = Append(program, InferenceEmbeddingOps(model, layout, options), -1, -1, layout);
  for (int l = 0; l < model.layers; ++l) {
    last = Append(program, model.IsMoeLayer(l) ? moe : dense, last, l, layout);
  }
  Append(program, InferenceHeadOps(model, layout, options), last, -1, layout);
  return out;
}

int64_t InferenceTokensPerStep(const InferenceOptions& options) {
  return options.phase == InferencePhase::kPrefill ? options.batch * options.context
                                                   : options.batch;
}

double InferenceTimeBreakdown::exposed_total_s() const {
  double total = 0;
  for (const auto& [stream, seconds] : exposed_s) total += seconds;
  return total;
}

sim::StatusOr<InferenceResult> SimulateInference(const topology::System& system,
                                                 const ModelSpec& model,
                                                 const InferenceLayout& layout,
                                                 const InferenceOptions& options,
                                                 const StepOptions& step_options) {
  PODSIM_RETURN_IF_ERROR(
      ValidateInferenceLayout(layout, model, system.fabric.chip_count(), options));
  InferenceResult result;
  result.schedule = InferenceSchedule(system.name, model, layout, options);
  PODSIM_ASSIGN_OR_RETURN(StepResult step, SimulateStep(system, result.schedule, step_options));
  PODSIM_CHECK(step.programs.size() == 1) << "an inference schedule has one program";

  const ProgramResult& program = step.programs.front();
  result.step_time_s = step.step_time.ToSeconds();
  result.tokens_per_step = result.schedule.tokens_per_step();
  const double chips = static_cast<double>(system.fabric.chip_count());
  if (result.step_time_s > 0) {
    result.tokens_per_s = static_cast<double>(result.tokens_per_step) / result.step_time_s;
    result.tokens_per_s_per_chip = result.tokens_per_s / chips;
  }
  result.memory = InferenceMemory(model, layout, options, system.chip);

  InferenceTimeBreakdown& time = result.time;
  time.compute_hbm_s = program.memory_bound.ToSeconds();
  time.compute_mxu_s = program.compute_bound.ToSeconds();
  time.compute_overhead_s =
      (program.time.compute - program.memory_bound - program.compute_bound).ToSeconds();
  time.interference_s = program.time.interference.ToSeconds();
  for (const auto& [stream, t] : program.time.exposed) time.exposed_s[stream] = t.ToSeconds();
  time.idle_s = (program.time.idle + program.time.bubble).ToSeconds();

  result.roofline = InferenceRooflineOf(
      system.chip, model, layout, options, result.memory, result.schedule.programs(0),
      time.compute_hbm_s + time.compute_mxu_s + time.compute_overhead_s, result.step_time_s);

  const double interconnect = time.exposed_total_s();
  result.bottleneck = "hbm";
  double largest = time.compute_hbm_s;
  if (time.compute_mxu_s > largest) {
    result.bottleneck = "mxu";
    largest = time.compute_mxu_s;
  }
  if (interconnect > largest) {
    result.bottleneck = "interconnect";
    largest = interconnect;
  }
  result.bottleneck_share = result.step_time_s > 0 ? largest / result.step_time_s : 0;
  result.step = std::move(step);
  return result;
}

double PrefillServersPerDecodeServer(double prefill_step_s, int64_t prompts_per_prefill,
                                     double decode_step_s, int64_t decode_batch,
                                     int64_t decode_len) {
  PODSIM_CHECK(prefill_step_s > 0 && prompts_per_prefill > 0 && decode_step_s > 0 &&
               decode_batch > 0 && decode_len > 0)
      << "PrefillServersPerDecodeServer needs positive arguments";
  const double finished_per_s =
      static_cast<double>(decode_batch) / (decode_step_s * static_cast<double>(decode_len));
  const double started_per_s = static_cast<double>(prompts_per_prefill) / prefill_step_s;
  return finished_per_s / started_per_s;
}

double UsdPerMillionTokens(double chips, double usd_per_chip_hour, double tokens_per_s) {
  PODSIM_CHECK(tokens_per_s > 0) << "UsdPerMillionTokens needs a positive throughput";
  return chips * usd_per_chip_hour / 3600.0 / tokens_per_s * 1e6;
}

}  // namespace podsim::workloads
