#include "cli/step_fidelity.h"

#include <cstdio>

namespace podsim::cli {

std::string StepFidelity(const workloads::StepResult& step, std::string_view exact_hint) {
  if (step.exact) return "exact: " + step.method;
  std::string text = "approximate: " + step.method;
  if (step.default_approximation) {
    char range[160];
    std::snprintf(range, sizeof range,
                  " (%+.1f%% to %+.1f%% of the full simulation's step time, measured on the "
                  "differential test's generated steps)",
                  100 * workloads::kApproximationErrorLow,
                  100 * workloads::kApproximationErrorHigh);
    text += range;
  }
  if (!step.approximate_reason.empty()) text += "; not the quotient: " + step.approximate_reason;
  return text + "; " + std::string(exact_hint);
}

}  // namespace podsim::cli
