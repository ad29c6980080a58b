#include "workloads/measured_accuracy.h"

#include <cstdio>

namespace podsim::workloads {

namespace {

constexpr MeasuredAccuracy kRecords[] = {
#include "workloads/measured_accuracy.inc"
};

std::string Percent(double pct, bool sign) {
  char text[32];
  std::snprintf(text, sizeof text, sign ? "%+.1f%%" : "%.1f%%", pct);
  return text;
}

}  // namespace

const MeasuredAccuracy* FindMeasuredAccuracy(std::string_view family, std::string_view workload) {
  for (const MeasuredAccuracy& record : kRecords) {
    if (record.family == family && record.workload == workload) return &record;
  }
  return nullptr;
}

std::string DescribeMeasuredAccuracy(std::string_view family, std::string_view workload) {
  const MeasuredAccuracy* record = FindMeasuredAccuracy(family, workload);
  if (record == nullptr) {
    if (family == "ideal") return "none: a generic chip at its roofline, which no run measures";
    return "none: no published " + std::string(workload) + " run of the " + std::string(family) +
           " family was compared (docs/validation.md)";
  }
  std::string text =
      "on " + std::to_string(record->rows) + " published " + std::string(record->name) + " " +
      std::string(workload) + (record->rows == 1 ? " run" : " runs") +
      " podsim was not fitted to: mean error " + Percent(record->mean_abs_error_pct, false) +
      ", bias " + Percent(record->bias_pct, true) +
      (record->bias_pct < 0   ? " (too fast)"
       : record->bias_pct > 0 ? " (too slow)"
                              : "") +
      ", worst " + Percent(record->worst_pct, false);
  if (workload == "training") {
    if (const MeasuredAccuracy* memory = FindMeasuredAccuracy(family, "memory")) {
      text += "; memory per chip, on " + std::to_string(memory->rows) + " of them: mean error " +
              Percent(memory->mean_abs_error_pct, false) + ", bias " +
              Percent(memory->bias_pct, true) + (memory->bias_pct < 0 ? " (too little)" : "");
    }
  }
  return text + " (docs/validation.md)";
}

}  // namespace podsim::workloads
