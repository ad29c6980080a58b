#include "workloads/measured_accuracy.h"

#include <cstdio>
#include <utility>

namespace podsim::workloads {

namespace {

// kFamilyNames and kRecords.
#include "workloads/measured_accuracy.inc"

std::string Percent(double fraction, bool sign) {
  char text[32];
  std::snprintf(text, sizeof text, sign ? "%+.1f%%" : "%.1f%%", 100 * fraction);
  return text;
}

// "mean |error| 16.9%, bias -16.9% (optimistic), worst 24.8%"
std::string Figures(const MeasuredAccuracy& r, std::string_view optimistic) {
  return "mean |error| " + Percent(r.mean_abs_error, false) + ", bias " + Percent(r.bias, true) +
         (r.bias < 0   ? " (" + std::string(optimistic) + ")"
          : r.bias > 0 ? std::string(" (pessimistic)")
                       : std::string()) +
         ", worst " + Percent(r.worst, false);
}

}  // namespace

std::span<const MeasuredAccuracy> MeasuredAccuracyRecords() { return kRecords; }

const MeasuredAccuracy* FindMeasuredAccuracy(std::string_view family, std::string_view workload,
                                             std::string_view framework) {
  for (const MeasuredAccuracy& record : kRecords) {
    if (record.family == family && record.workload == workload && record.framework == framework) {
      return &record;
    }
  }
  return nullptr;
}

std::string_view MeasuredFamilyName(std::string_view family) {
  for (const auto& [id, name] : kFamilyNames) {
    if (id == family) return name;
  }
  return family;
}

std::string DescribeMeasuredAccuracy(std::string_view family, std::string_view workload,
                                     std::string_view framework) {
  const std::string name(MeasuredFamilyName(family));
  const MeasuredAccuracy* record = FindMeasuredAccuracy(family, workload);
  if (record == nullptr) {
    return "none: no validation row measures " + name + " " + std::string(workload) +
           " (docs/validation.md)";
  }
  std::string text = "on " + std::to_string(record->rows) + " published " + name + " " +
                     std::string(workload) +
                     (record->rows == 1 ? " measurement" : " measurements") +
                     " podsim was not fitted to: " + Figures(*record, "optimistic");
  if (workload == "training" && !framework.empty()) {
    const std::string as = framework == "book" ? std::string("the book's (no --framework)")
                                               : "--framework " + std::string(framework);
    if (const MeasuredAccuracy* f = FindMeasuredAccuracy(family, workload, framework)) {
      text += "; the " + std::to_string(f->rows) + " of them run as " + as + ": " +
              Figures(*f, "optimistic");
    } else {
      text += "; none of them run as " + as;
    }
  }
  if (workload == "training") {
    if (const MeasuredAccuracy* memory = FindMeasuredAccuracy(family, "memory")) {
      text += "; memory per chip, on " + std::to_string(memory->rows) +
              " published measurements: " +
              Figures(*memory, "below the measured peaks: fits may be optimistic");
    }
  }
  return text + " (docs/validation.md)";
}

}  // namespace podsim::workloads
