// What podsim's predictions were worth on runs it was never fitted to: per chip family
// (ComputeEfficiency::family) and workload, the mean absolute error, signed bias and worst error of
// docs/validation.md's validation rows (independent published measurements that set no constant;
// calibration and consistency rows are left out). Printed with every prediction, so that a user
// reads a step time of a family next to what the same model got wrong on that family's measured
// runs.
//
// The figures are those of docs/validation.md's summary, generated with it by
// tools/validation.py into measured_accuracy.inc; `tools/validation.py --check` (CI) fails when
// either is stale. Nothing here feeds a prediction.

#ifndef PODSIM_WORKLOADS_MEASURED_ACCURACY_H_
#define PODSIM_WORKLOADS_MEASURED_ACCURACY_H_

#include <string>
#include <string_view>

namespace podsim::workloads {

struct MeasuredAccuracy {
  std::string_view family;  // ComputeEfficiency::family: "a100", "hopper", ...
  std::string_view name;    // The family as the summary names it: "A100", "H100 / H200", ...
  // "training", "inference", "collectives" (times and rates: a rate's error is that of the time
  // it implies) or "memory" (training memory per chip against a run's stated peak).
  std::string_view workload;
  int rows = 0;
  // In percent. Bias is the mean signed error: negative, podsim too fast (or too little memory).
  double mean_abs_error_pct = 0;
  double bias_pct = 0;
  double worst_pct = 0;
};

// The record of `family` for `workload`; nullptr where no validation row measures it.
const MeasuredAccuracy* FindMeasuredAccuracy(std::string_view family, std::string_view workload);

// One line for a prediction of `workload` ("training", "inference" or "collectives") on `family`:
// "on 37 published A100 training runs podsim was not fitted to: mean error 16.9%, bias -16.9%
// (too fast), worst 24.8%", then under training the memory record where there is one, or, where
// there is no record, that none of the family's runs of that workload was compared.
std::string DescribeMeasuredAccuracy(std::string_view family, std::string_view workload);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_MEASURED_ACCURACY_H_
