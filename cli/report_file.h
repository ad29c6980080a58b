// --report FILE.html (reports/report.h), defined once for train, infer, collective and sweep,
// and the plumbing of a step's report: its observers go on the step beside a trace's, and the
// file is written, whole, after the run.

#ifndef PODSIM_CLI_REPORT_FILE_H_
#define PODSIM_CLI_REPORT_FILE_H_

#include <memory>
#include <string>

#include "collectives/link_load.h"
#include "reports/step_report.h"
#include "scenario/source_map.h"
#include "sim/flow_observer_tee.h"
#include "sim/status.h"
#include "topology/system.h"
#include "workloads/step_simulator.h"

namespace CLI {
class App;
}

namespace podsim::cli {

void AddReportFlag(CLI::App* sub, std::string* report);

// outputs.report checked before anything runs: InvalidArgument naming --report (or the scenario
// field) unless it ends in .html or .htm, and the IoError of a file that cannot be created there
// (sim::CheckCreatable).
sim::Status CheckReportFlag(const std::string& path, const scenario::SourceMap& source);

// Writes the report; an error names --report (or the scenario field).
sim::Status WriteReportFile(const std::string& path, const reports::Report& report,
                            const scenario::SourceMap& source);

// A step's report: the recorder of its ops and the meter of its links.
class StepReportFile {
 public:
  // `system` must outlive this.
  explicit StepReportFile(const topology::System* system);

  // Adds the report's observers to the step's, teeing with any already set (a trace's).
  void Attach(workloads::StepOptions* options);

  reports::Report Build(const reports::StepReportInput& input, const schedule::Schedule& schedule,
                        const workloads::StepResult& step) const;

 private:
  const topology::System* system_;
  reports::StepRecorder recorder_;
  collectives::LinkLoadMeter links_;
  std::unique_ptr<reports::StepObserverTee> step_tee_;
  std::unique_ptr<sim::FlowObserverTee> flow_tee_;
};

}  // namespace podsim::cli

#endif  // PODSIM_CLI_REPORT_FILE_H_
