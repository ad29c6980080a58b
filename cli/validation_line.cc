#include "cli/validation_line.h"

#include "workloads/compute_model.h"
#include "workloads/measured_accuracy.h"

namespace podsim::cli {

namespace {

// Whether `chip` is its preset as it is, whatever its name: what the validation rows measured.
bool IsPreset(const topology::ChipSpec& chip) {
  if (chip.preset.empty()) return false;
  sim::StatusOr<topology::ChipSpec> preset = topology::ChipPreset(chip.preset);
  if (!preset.ok()) return false;
  preset->name = chip.name;
  return *preset == chip;
}

nlohmann::ordered_json RecordJson(std::string_view family, std::string_view workload,
                                  std::string_view framework = "") {
  const workloads::MeasuredAccuracy* r =
      workloads::FindMeasuredAccuracy(family, workload, framework);
  if (r == nullptr) return {{"rows", 0}};
  return {{"rows", r->rows},
          {"mean_abs_error", r->mean_abs_error},
          {"bias", r->bias},
          {"worst", r->worst}};
}

}  // namespace

std::string ValidationLine(const topology::ChipSpec& chip, std::string_view workload,
                           std::string_view framework) {
  if (chip.preset.empty()) return "none: a chip of no preset, which no measured run describes";
  if (!IsPreset(chip)) {
    return "none: a custom chip built from " + chip.preset +
           ", whose changed figures no measured run describes";
  }
  return workloads::DescribeMeasuredAccuracy(workloads::DefaultComputeEfficiency(chip).family,
                                             workload, framework);
}

nlohmann::ordered_json ValidationJson(const topology::ChipSpec& chip, std::string_view workload,
                                      std::string_view framework) {
  if (!IsPreset(chip)) return nullptr;
  const std::string family = workloads::DefaultComputeEfficiency(chip).family;
  nlohmann::ordered_json j{{"family", family}, {"workload", workload}};
  j.update(RecordJson(family, workload));
  if (workload == "training" && !framework.empty()) {
    nlohmann::ordered_json f{{"name", framework}};
    f.update(RecordJson(family, workload, framework));
    j["framework"] = f;
  }
  if (workload == "training") j["memory"] = RecordJson(family, "memory");
  return j;
}

}  // namespace podsim::cli
