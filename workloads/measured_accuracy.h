// What podsim's predictions were worth on measurements it was never fitted to: per chip family
// (ComputeEfficiency::family) and workload, the mean absolute error, signed bias and worst error of
// docs/validation.md's validation rows (independent published measurements that set no constant;
// calibration and consistency rows are left out). Printed with every prediction, so that a user
// reads a step time next to what the same model got wrong on that family's measured runs.
//
// The figures are those of docs/validation.md's summary, generated with it by
// tools/validation.py into measured_accuracy.inc; `tools/validation.py --check` (CI) fails when
// either is stale. Nothing here feeds a prediction.

#ifndef PODSIM_WORKLOADS_MEASURED_ACCURACY_H_
#define PODSIM_WORKLOADS_MEASURED_ACCURACY_H_

#include <span>
#include <string>
#include <string_view>

namespace podsim::workloads {

struct MeasuredAccuracy {
  std::string_view family;  // ComputeEfficiency::family: "a100", "hopper", ...
  // "training", "inference", "collectives" (times and rates: a rate's error is that of the time
  // it implies) or "memory" (training memory per chip against a run's stated peak).
  std::string_view workload;
  // Training records per framework the rows' commands name (workloads/framework.h
  // FrameworkName: "book" where none); "" for the record of every row.
  std::string_view framework;
  int rows = 0;
  // Fractions, as rounded in the summary (0.169: 16.9%). Bias is the mean signed error: negative,
  // podsim optimistic (too fast, too high a rate, too little memory).
  double mean_abs_error = 0;
  double bias = 0;
  double worst = 0;
};

// Every record, in the summary's order.
std::span<const MeasuredAccuracy> MeasuredAccuracyRecords();

// The record of `family` for `workload` (of its rows run as `framework`, or of every row for "");
// nullptr where no validation row measures it.
const MeasuredAccuracy* FindMeasuredAccuracy(std::string_view family, std::string_view workload,
                                             std::string_view framework = "");

// A calibration family as the summary names it ("hopper": "H100 / H200"); `family` itself for one
// it does not know.
std::string_view MeasuredFamilyName(std::string_view family);

// One line for a prediction of `workload` ("training", "inference" or "collectives") on a preset
// chip of `family`: "on 37 published A100 training measurements podsim was not fitted to: mean
// |error| 16.9%, bias -16.9% (optimistic), worst 24.8% (docs/validation.md)", or "none: ..."
// where no validation row measures it. Under training, with a `framework` the record of the rows
// run as that framework (or that none was), then the family's memory record where it has one.
std::string DescribeMeasuredAccuracy(std::string_view family, std::string_view workload,
                                     std::string_view framework = "");

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_MEASURED_ACCURACY_H_
