// What the step output says about how exact its numbers are (issue 13: nothing in the default
// output is approximate without saying so).

#ifndef PODSIM_CLI_STEP_FIDELITY_H_
#define PODSIM_CLI_STEP_FIDELITY_H_

#include <string>
#include <string_view>

#include "workloads/step_simulator.h"

namespace podsim::cli {

// "exact: <method>" or "approximate: <method>", with the default approximation's measured error
// against the full simulation and then `exact_hint`, how to get the full answer.
std::string StepFidelity(
    const workloads::StepResult& step,
    std::string_view exact_hint = "--exact gives the full simulation's answer");

// What the step simulated: "1 chip, 486 ops, 66 collectives (0 distinct), 2339 events" (the
// events include the rehearsals').
std::string SimulationSummary(const workloads::StepResult& step);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_STEP_FIDELITY_H_
