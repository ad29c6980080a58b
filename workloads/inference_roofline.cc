#include "workloads/inference_roofline.h"

#include <algorithm>

#include "sim/check.h"
#include "workloads/compute_model.h"
#include "workloads/step_simulator.h"

namespace podsim::workloads {

InferenceRoofline InferenceRooflineOf(const topology::ChipSpec& chip, const ModelSpec& model,
                                      const InferenceLayout& layout,
                                      const InferenceOptions& options,
                                      const InferenceMemoryBreakdown& memory,
                                      const schedule::Program& program, double compute_s,
                                      double step_s) {
  PODSIM_CHECK(chip.hbm_bytes_per_s > 0 && chip.bf16_flops_per_s > 0)
      << "chip " << chip.name << " has no HBM bandwidth or peak";
  PODSIM_CHECK(compute_s >= 0 && step_s >= 0) << "negative times";
  const double w = chip.hbm_bytes_per_s;
  const double c = options.weights == DType::kFp8 ? chip.fp8_flops_per_s : chip.bf16_flops_per_s;
  const bool decode = options.phase == InferencePhase::kDecode;
  const InferenceShape s = InferenceShapeOf(layout, model, options);

  InferenceRoofline r;
  const double n = static_cast<double>(layout.model_parallel());
  r.chips = layout.model_parallel();
  r.weight_chips = r.chips * layout.ep_replicas();
  r.sequences = s.sequences;
  if (decode) {
    r.cache_s = static_cast<double>(s.sequences) * static_cast<double>(s.cache_tokens) *
                model.KvCacheBytesPerToken(DTypeBytes(options.kv_cache)) / (n * w);
  }
  r.weights_s = static_cast<double>(model.TotalParams()) * DTypeBytes(options.weights) /
                (static_cast<double>(r.weight_chips) * w);
  r.flops_s =
      2 * static_cast<double>(s.tokens) * static_cast<double>(model.MatmulParams()) / (n * c);
  r.step_s = r.cache_s + std::max(r.weights_s, r.flops_s);

  // This chip's closed form, and its compute stream at full rates.
  double chip_flops = 0, ideal_s = 0;
  const ComputeModel ideal(chip, IdealRoofline());
  for (const schedule::Op& op : program.ops()) {
    if (op.stream() != "compute") continue;
    if (op.kind() == schedule::MATMUL) chip_flops += op.flops();
    ideal_s += ScheduleOpCost(ideal, op).duration.ToSeconds();
  }
  const double chip_cache_s = decode ? memory.kv_cache_bytes / w : 0;
  const double chip_s = chip_cache_s + std::max(memory.weight_bytes / w, chip_flops / c);

  r.chip_counts_s = chip_s - r.step_s;
  r.other_work_s = ideal_s - chip_s;
  r.efficiency_s = compute_s - ideal_s;
  r.communication_s = step_s - compute_s;
  return r;
}

}  // namespace podsim::workloads
