#include "workloads/serving.h"

#include "sim/check.h"

namespace podsim::workloads {

sim::StatusOr<ServingResult> SimulateServing(const topology::System& system, const ModelSpec& model,
                                             const InferenceLayout& layout,
                                             const InferenceOptions& options,
                                             const ServingOptions& serving,
                                             const StepOptions& step_options) {
  PODSIM_CHECK(serving.prompt_len >= 1 && serving.generated_len >= 1 && serving.batch >= 1 &&
               serving.prefill_batch >= 1)
      << "SimulateServing needs positive lengths and batches";
  ServingResult r;
  r.prefill_layout = layout;
  r.prefill_layout.kv_shard = KvShard::kHeads;
  r.prefill_options = options;
  r.prefill_options.phase = InferencePhase::kPrefill;
  r.prefill_options.batch = serving.prefill_batch * layout.dp;
  r.prefill_options.context = serving.prompt_len;
  r.decode_options = options;
  r.decode_options.phase = InferencePhase::kDecode;
  r.decode_options.batch = serving.batch;
  r.decode_options.context = serving.prompt_len + serving.generated_len / 2;  // The mean.
  const int64_t chips = system.fabric.chip_count();
  PODSIM_RETURN_IF_ERROR(
      ValidateInferenceLayout(r.prefill_layout, model, chips, r.prefill_options));
  PODSIM_RETURN_IF_ERROR(ValidateInferenceLayout(layout, model, chips, r.decode_options));
  PODSIM_ASSIGN_OR_RETURN(r.prefill, SimulateInference(system, model, r.prefill_layout,
                                                       r.prefill_options, step_options));
  PODSIM_ASSIGN_OR_RETURN(r.decode,
                          SimulateInference(system, model, layout, r.decode_options, step_options));
  InferenceOptions longest = r.decode_options;
  longest.context = serving.prompt_len + serving.generated_len - 1;
  r.decode_memory = InferenceMemory(model, layout, longest, system.chip);

  // The prefill makes each request's first token; G - 1 decode steps make the rest.
  const double prefill_s = static_cast<double>(serving.batch) /
                           static_cast<double>(r.prefill_options.batch) * r.prefill.step_time_s;
  const double decode_s = static_cast<double>(serving.generated_len - 1) * r.decode.step_time_s;
  r.prefill_chips_per_decode_chip = decode_s > 0 ? prefill_s / decode_s : 0;
  r.generated_tokens_per_s_per_chip = static_cast<double>(serving.batch * serving.generated_len) /
                                      ((prefill_s + decode_s) * static_cast<double>(chips));
  return r;
}

}  // namespace podsim::workloads
