#include "cli/step_fidelity.h"

#include <cstdio>

#include "cli/report_format.h"

namespace podsim::cli {

std::string StepFidelity(const workloads::StepResult& step, std::string_view exact_hint) {
  if (step.exact) return "exact: " + step.method;
  std::string text = "approximate: " + step.method;
  if (step.default_approximation) {
    char range[192];
    std::snprintf(range, sizeof range,
                  " (%+.1f%% to %+.1f%% of the full simulation's step time, measured on the "
                  "differential test's %d generated steps)",
                  100 * workloads::kApproximationErrorLow, 100 * workloads::kApproximationErrorHigh,
                  workloads::kApproximationMeasuredSteps);
    text += range;
  }
  if (!step.approximate_reason.empty()) text += "; not the quotient: " + step.approximate_reason;
  return text + "; " + std::string(exact_hint);
}

std::string SimulationSummary(const workloads::StepResult& step) {
  std::string replays;
  if (step.replayed_collectives > 0) {
    replays = ", " + std::to_string(step.replayed_collectives) + " replayed";
  }
  if (step.discarded_runs > 0) replays += ", " + CountOf(step.discarded_runs, "run") + " discarded";
  return CountOf(step.simulated_chips, "chip") + ", " + std::to_string(step.ops_executed) +
         " ops, " + std::to_string(step.collectives) + " collectives (" +
         std::to_string(step.rehearsals) + " distinct" + replays + "), " +
         std::to_string(step.events + step.rehearsal_events) + " events";
}

}  // namespace podsim::cli
