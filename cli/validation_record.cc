#include "cli/validation_record.h"

#include "workloads/compute_model.h"
#include "workloads/measured_accuracy.h"

namespace podsim::cli {

namespace {

std::string FamilyOf(const topology::ChipSpec& chip) {
  return workloads::DefaultComputeEfficiency(chip).family;
}

nlohmann::ordered_json RecordJson(std::string_view family, std::string_view workload) {
  nlohmann::ordered_json j{{"rows", 0}};
  if (const workloads::MeasuredAccuracy* r = workloads::FindMeasuredAccuracy(family, workload)) {
    j = {{"rows", r->rows},
         {"mean_abs_error", r->mean_abs_error_pct / 100},
         {"bias", r->bias_pct / 100},
         {"worst", r->worst_pct / 100}};
  }
  return j;
}

}  // namespace

std::string ValidationLine(const topology::ChipSpec& chip, std::string_view workload) {
  return workloads::DescribeMeasuredAccuracy(FamilyOf(chip), workload);
}

nlohmann::ordered_json ValidationJson(const topology::ChipSpec& chip, std::string_view workload) {
  const std::string family = FamilyOf(chip);
  nlohmann::ordered_json j{{"family", family}, {"workload", workload}};
  j.update(RecordJson(family, workload));
  if (workload == "training") j["memory"] = RecordJson(family, "memory");
  return j;
}

}  // namespace podsim::cli
