#include "workloads/training.h"

#include "workloads/training_schedule.h"

namespace podsim::workloads {

std::string AxisOfStream(const std::string& stream) { return stream.substr(0, stream.find('.')); }

std::map<std::string, double> MeanBreakdown(const StepResult& step) {
  std::map<std::string, double> breakdown{{"compute", step.mean_compute_s},
                                          {"interference", step.mean_interference_s},
                                          {"bubble", step.mean_bubble_s},
                                          {"idle", step.mean_idle_s}};
  for (const auto& [stream, seconds] : step.mean_exposed_s) {
    breakdown["exposed_" + AxisOfStream(stream)] += seconds;
  }
  return breakdown;
}

sim::Status ValidateFp8(const OpOptions& options, const topology::ChipSpec& chip) {
  if (options.fp8_all_gather && !options.fp8) {
    return sim::Status::InvalidArgument("an fp8 all-gather needs fp8 training (--fp8)");
  }
  if (options.fp8_dispatch && !options.fp8) {
    return sim::Status::InvalidArgument("an fp8 dispatch needs fp8 training (--fp8)");
  }
  if (!options.fp8 || chip.fp8_flops_per_s > 0) return sim::Status::Ok();
  return sim::Status::InvalidArgument("chip " + chip.name +
                                      " has no fp8 peak (fp8 training needs h100, h200, b200 or "
                                      "gb200)");
}

sim::Status ValidateFp8Recipe(const OpOptions& options, const topology::ChipSpec& chip) {
  if (options.fp8_recipe != Fp8Recipe::kMxfp8) return sim::Status::Ok();
  if (!options.fp8 || options.fp8_library != Fp8Library::kTransformerEngine) {
    return sim::Status::InvalidArgument(
        "mxfp8 is modelled as Transformer Engine runs it (--fp8 --fp8-library te)");
  }
  if (options.fp8_all_gather) {
    return sim::Status::InvalidArgument(
        "Megatron-Core gathers MXFP8 parameters in bf16: leave out --fp8-all-gather");
  }
  if (!chip.fp8_block_scaled) {
    return sim::Status::InvalidArgument("chip " + chip.name +
                                        " has no block-scaled fp8 (mxfp8 needs b200 or gb200)");
  }
  return sim::Status::Ok();
}

sim::StatusOr<TrainingResult> SimulateTraining(const topology::System& system,
                                               const ModelSpec& model, const Layout& stated,
                                               const BatchSpec& batch, const OpOptions& options,
                                               const StepOptions& step_options) {
  PODSIM_ASSIGN_OR_RETURN(const Layout layout, ResolveLayout(stated, batch));
  PODSIM_RETURN_IF_ERROR(ValidateLayout(layout, model, system.fabric.chip_count(), batch));
  PODSIM_RETURN_IF_ERROR(ValidateOpOptions(options, layout));
  PODSIM_RETURN_IF_ERROR(ValidateFp8(options, system.chip));
  PODSIM_RETURN_IF_ERROR(ValidateFp8Recipe(options, system.chip));
  PODSIM_RETURN_IF_ERROR(ValidateAttentionKernel(options, DefaultComputeEfficiency(system.chip)));
  TrainingResult result;
  result.schedule = TrainingSchedule(system, model, layout, batch, options);
  LayerTimer timer(&result.schedule, step_options.observer);
  StepOptions timed = step_options;
  if (step_options.time_layers) timed.observer = &timer;
  PODSIM_ASSIGN_OR_RETURN(result.step, SimulateStep(system, result.schedule, timed));
  result.layer_times = timer.Times();
  result.memory = PeakMemory(model, layout, batch, options, system.chip);
  result.step_time_s = result.step.step_time.ToSeconds();
  const double chips = static_cast<double>(system.fabric.chip_count());
  const double peak = chips * system.chip.bf16_flops_per_s * result.step_time_s;
  result.tokens_per_s = static_cast<double>(batch.tokens()) / result.step_time_s;
  result.mfu = result.step.total_model_flops / peak;
  result.hfu = result.step.total_hfu_flops / peak;
  result.breakdown = MeanBreakdown(result.step);
  return result;
}

}  // namespace podsim::workloads
